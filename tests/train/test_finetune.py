"""Fine-tuning: a new run starts from a checkpoint's, a run's or a voice's weights, with a fresh optimizer."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from train_fixtures import META, make_utterances, tiny_train_config

from audiopd.errors import ArtifactError
from audiopd.model.voice import load_voice
from audiopd.train.__main__ import main as train_main
from audiopd.train.checkpoint import latest_checkpoint, read_state
from audiopd.train.export import export_voice
from audiopd.train.loop import train
from audiopd.train.objective import LossConfig
from audiopd.train.shards import write_shard


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(latest_checkpoint(run) / "model.safetensors"))


def _records(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]


@pytest.fixture
def base_run(shard_dir: Path, tmp_path: Path) -> Path:
    train(tiny_train_config(max_steps=20), shard_dir, tmp_path / "base")
    return tmp_path / "base"


@pytest.mark.parametrize("source", ["run", "checkpoint", "voice"])
def test_new_run_starts_from_the_source_weights(source: str, base_run: Path, shard_dir: Path,
                                                 tmp_path: Path) -> None:
    src = {"run": base_run, "checkpoint": latest_checkpoint(base_run),
           "voice": export_voice(base_run, tmp_path / "voice") if source == "voice" else None}[source]
    out = tmp_path / "tuned"
    summary = train(tiny_train_config(max_steps=0), shard_dir, out, init_from=src)
    assert summary["step"] == 0 and read_state(latest_checkpoint(out))["step"] == 0  # a new run, not a resume
    a, b = _weights(base_run), _weights(out)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    init = [r for r in _records(out) if r.get("event") == "init"]
    assert len(init) == 1 and "step 20" in init[0]["from"] and init[0]["from"].startswith(source)
    # The source travels with the run's checkpoints into the exported voice.
    assert read_state(latest_checkpoint(out))["init_from"] == init[0]["from"]
    assert load_voice(export_voice(out, tmp_path / "tuned_voice")).training_record["init_from"] == init[0]["from"]


def test_fine_tuning_starts_where_the_source_left_off(base_run: Path, shard_dir: Path, tmp_path: Path) -> None:
    cfg = tiny_train_config(max_steps=5)
    train(cfg, shard_dir, tmp_path / "scratch")
    train(cfg, shard_dir, tmp_path / "tuned", init_from=base_run)
    first = {name: [r for r in _records(tmp_path / name) if "loss" in r][0]["loss"] for name in ("scratch", "tuned")}
    assert first["tuned"] < 0.8 * first["scratch"]


def test_resume_of_a_fine_tuning_run_is_exact(base_run: Path, shard_dir: Path, tmp_path: Path) -> None:
    # A resumed run must continue from its own checkpoint, not reload the source weights.
    cfg = tiny_train_config(max_steps=6, ckpt_every=3)
    train(cfg, shard_dir, tmp_path / "straight", init_from=base_run)
    train(cfg, shard_dir, tmp_path / "split", init_from=base_run, max_steps=3)
    summary = train(cfg, shard_dir, tmp_path / "split", init_from=base_run, resume=True)
    assert summary["step"] == 6
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "split")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert len([r for r in _records(tmp_path / "split") if r.get("event") == "init"]) == 1
    assert read_state(latest_checkpoint(tmp_path / "split"))["init_from"].startswith("run")


def test_rejects_other_model_speakers_or_codec(base_run: Path, shard_dir: Path, tmp_path: Path) -> None:
    bigger = tiny_train_config(max_steps=0)
    bigger = dataclasses.replace(bigger, model=dataclasses.replace(bigger.model, d_model=48))
    with pytest.raises(ArtifactError, match="model config differs.*d_model"):
        train(bigger, shard_dir, tmp_path / "a", init_from=base_run)
    for name, meta in (("swapped", dataclasses.replace(META, voices=("b", "a"))),
                       ("codec", dataclasses.replace(META, codec="other"))):
        d = tmp_path / name
        write_shard(d / "s0.safetensors", make_utterances(24, 0), meta)
        with pytest.raises(ArtifactError, match="speakers"):
            train(tiny_train_config(max_steps=0), d, tmp_path / f"run_{name}", init_from=base_run)
    with pytest.raises(ArtifactError):
        train(tiny_train_config(max_steps=0), shard_dir, tmp_path / "b", init_from=tmp_path / "nothing_here")


def test_cli_init_from(base_run: Path, shard_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model: {num_symbols: 12, d_model: 32, n_heads: 2, ff_mult: 2, dropout: 0.0, encoder_layers: 1,"
                   " duration_channels: 32, masked_layers: 2, serial_layers: 2, max_frames: 256}\n"
                   "lr: 0.003\nwarmup_steps: 2\nmax_steps: 1\nbatch_frames: 120\nmax_utt_frames: 200\n"
                   "log_every: 5\nckpt_every: 10\nnum_threads: 1\n")
    rc = train_main(["--config", str(cfg), "--shards", str(shard_dir), "--out", str(tmp_path / "t"),
                     "--init-from", str(base_run)])
    assert rc == 0 and json.loads(capsys.readouterr().out.strip().splitlines()[-1])["step"] == 1
    rc = train_main(["--config", str(cfg), "--shards", str(shard_dir), "--out", str(tmp_path / "u"),
                     "--init-from", str(tmp_path / "missing")])
    assert rc == 2 and "error:" in capsys.readouterr().err


def test_export_checks_the_checker_thresholds_before_writing(base_run: Path, tmp_path: Path) -> None:
    bad = tmp_path / "checker.yaml"
    bad.write_text("min_windw_score: -70\n")  # a typo: strict keys
    with pytest.raises(ArtifactError, match="min_windw_score"):
        export_voice(base_run, tmp_path / "voice", checker=bad)
    assert not (tmp_path / "voice").exists()  # nothing half-written to ship by mistake
    bad.write_text("min_window_score: -70\n")
    voice = load_voice(export_voice(base_run, tmp_path / "voice", checker=bad))
    assert voice.checker_config is not None and voice.checker_config.min_window_score == -70.0


SERIAL_ONLY = dict(train_parts=("serial",), loss=LossConfig(duration_weight=0.0, masked_weight=0.0))


def test_train_parts_leave_the_frozen_parts_bit_identical(base_run: Path, shard_dir: Path, tmp_path: Path) -> None:
    # A serial-only fine-tuning must not move the encoder, the durations or the masked model: parallel decoding
    # of the tuned voice then gives exactly the audio of its source.
    out = tmp_path / "serial_only"
    summary = train(tiny_train_config(max_steps=6, **SERIAL_ONLY), shard_dir, out, init_from=base_run)
    assert summary["step"] == 6
    a, b = _weights(base_run), _weights(out)
    frozen = [k for k in a if not k.startswith("serial.")]
    moved = [k for k in a if k.startswith("serial.") and not torch.equal(a[k], b[k])]
    assert frozen and all(torch.equal(a[k], b[k]) for k in frozen)
    assert moved  # the serial decoder did learn
    recs = [r for r in _records(out) if "loss" in r]
    assert recs and all("serial" in r and "masked" not in r and "duration" not in r for r in recs)


def test_train_parts_resume_exactly(base_run: Path, shard_dir: Path, tmp_path: Path) -> None:
    cfg = tiny_train_config(max_steps=6, ckpt_every=3, **SERIAL_ONLY)
    train(cfg, shard_dir, tmp_path / "straight", init_from=base_run)
    train(cfg, shard_dir, tmp_path / "split", init_from=base_run, max_steps=3)
    train(cfg, shard_dir, tmp_path / "split", init_from=base_run, resume=True)
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "split")
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("over, match", [
    (dict(train_parts=("serail",)), "unknown part.*serail"),
    (dict(train_parts=("serial",), loss=LossConfig(serial_weight=0.0, duration_weight=0.0, masked_weight=0.0)),
     "serial but its loss weight is 0"),
    # The masked loss would cost a forward and backward and move nothing with the encoder frozen.
    (dict(train_parts=("serial",), loss=LossConfig(duration_weight=0.0)), "masked have weight > 0"),
])
def test_train_parts_are_checked(over: dict, match: str, shard_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=match):
        train(tiny_train_config(max_steps=1, **over), shard_dir, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_train_parts_from_yaml(base_run: Path, shard_dir: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model: {num_symbols: 12, d_model: 32, n_heads: 2, ff_mult: 2, dropout: 0.0, encoder_layers: 1,"
                   " duration_channels: 32, masked_layers: 2, serial_layers: 2, max_frames: 256}\n"
                   "loss: {duration_weight: 0.0, masked_weight: 0.0}\ntrain_parts: [serial]\n"
                   "lr: 0.003\nwarmup_steps: 2\nmax_steps: 2\nbatch_frames: 120\nmax_utt_frames: 200\n"
                   "log_every: 1\nckpt_every: 10\nnum_threads: 1\n")
    assert train_main(["--config", str(cfg), "--shards", str(shard_dir), "--out", str(tmp_path / "t"),
                       "--init-from", str(base_run)]) == 0
    a, b = _weights(base_run), _weights(tmp_path / "t")
    assert all(torch.equal(a[k], b[k]) for k in a if k.startswith("masked."))


def test_map_speakers_grows_and_reorders_the_speaker_table(base_run: Path, tmp_path: Path) -> None:
    # A voice's speakers a, b start a run whose table is (c, b, a): b and a keep their rows, c starts from their
    # mean; nothing else changes. Without map_speakers the same start is refused (above).
    d = tmp_path / "grown"
    write_shard(d / "s0.safetensors", make_utterances(24, 0), dataclasses.replace(META, voices=("c", "b", "a")))
    out = tmp_path / "mapped"
    train(tiny_train_config(max_steps=0), d, out, init_from=export_voice(base_run, tmp_path / "v"),
          map_speakers=True)
    a, b = _weights(base_run), _weights(out)
    tables = [k for k in a if k.endswith("speaker.weight")]
    assert len(tables) == 2 and a.keys() == b.keys()
    for k in tables:
        assert torch.equal(b[k][1], a[k][1]) and torch.equal(b[k][2], a[k][0])
        assert torch.allclose(b[k][0], a[k].mean(dim=0))
    assert all(torch.equal(a[k], b[k]) for k in a if k not in tables)
    init = [r for r in _records(out) if r.get("event") == "init"][0]["from"]
    assert "speakers kept b, a; others from their mean" in init
