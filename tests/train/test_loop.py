"""Training loop: loss goes down, logs/checkpoints appear, resume is exact, budgets stop cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from train_fixtures import tiny_train_config
from safetensors.torch import load_file

from audiopd.config import from_dict, to_dict
from audiopd.errors import ArtifactError
from audiopd.train.__main__ import main as train_main
from audiopd.train.checkpoint import latest_checkpoint, read_state
from audiopd.train.loop import TrainConfig, lr_at, train
from audiopd.train.objective import LossConfig, level_mask


def _log(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]


def test_twenty_steps_lower_the_loss(shard_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    summary = train(tiny_train_config(), shard_dir, run)
    assert summary["step"] == 20
    recs = [r for r in _log(run) if "loss" in r]
    assert [r["step"] for r in recs] == [5, 10, 15, 20]
    assert recs[-1]["loss"] < 0.85 * recs[0]["loss"]
    for key in ("duration", "masked", "serial"):
        assert recs[-1][key] < recs[0][key], key
    ck = latest_checkpoint(run)
    assert ck is not None and read_state(ck)["step"] == 20


def test_resume_is_exact(shard_dir: Path, tmp_path: Path) -> None:
    cfg = tiny_train_config(max_steps=14, ckpt_every=7)
    train(cfg, shard_dir, tmp_path / "straight")
    train(cfg, shard_dir, tmp_path / "split", max_steps=7)
    assert read_state(latest_checkpoint(tmp_path / "split"))["step"] == 7
    summary = train(cfg, shard_dir, tmp_path / "split", resume=True)
    assert summary["step"] == 14
    a = load_file(str(latest_checkpoint(tmp_path / "straight") / "model.safetensors"))
    b = load_file(str(latest_checkpoint(tmp_path / "split") / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_existing_run_needs_resume(shard_dir: Path, tmp_path: Path) -> None:
    cfg = tiny_train_config(max_steps=2)
    train(cfg, shard_dir, tmp_path / "run")
    with pytest.raises(ArtifactError, match="--resume"):
        train(cfg, shard_dir, tmp_path / "run")


def test_max_minutes_stops_and_checkpoints(shard_dir: Path, tmp_path: Path) -> None:
    summary = train(tiny_train_config(max_steps=1000), shard_dir, tmp_path / "run", max_minutes=0.0)
    assert summary["stopped"] == "max_minutes" and summary["step"] == 1
    assert read_state(latest_checkpoint(tmp_path / "run"))["step"] == 1


def test_loss_selection_skips_parts(shard_dir: Path, tmp_path: Path) -> None:
    cfg = tiny_train_config(max_steps=5, loss=LossConfig(serial_weight=0.0, duration_weight=0.0))
    train(cfg, shard_dir, tmp_path / "run")
    rec = [r for r in _log(tmp_path / "run") if "loss" in r][-1]
    assert "masked" in rec and "serial" not in rec and "duration" not in rec


def test_rejects_other_phoneme_inventory(tmp_path: Path) -> None:
    import dataclasses

    from train_fixtures import META, make_utterances

    from audiopd.train.shards import write_shard

    write_shard(tmp_path / "s" / "a.safetensors", make_utterances(4, 0),
                dataclasses.replace(META, inventory_version="other"))
    with pytest.raises(ArtifactError, match="inventory"):
        train(tiny_train_config(max_steps=1), tmp_path / "s", tmp_path / "run")


def test_batch_budget_below_longest_utterance(shard_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="batch_frames"):
        train(tiny_train_config(batch_frames=10), shard_dir, tmp_path / "run")


def test_lr_schedule() -> None:
    cfg = TrainConfig(lr=1.0, warmup_steps=10, max_steps=110, min_lr_ratio=0.1)
    assert lr_at(0, cfg) == pytest.approx(0.1)
    assert lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(60, cfg) == pytest.approx(0.55)
    assert lr_at(110, cfg) == pytest.approx(0.1)
    assert lr_at(500, cfg) == pytest.approx(0.1)


def test_level_mask_semantics() -> None:
    gen = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 16, (3, 4, 20))
    fm = torch.ones(3, 20, dtype=torch.bool)
    fm[2, 12:] = False
    levels = torch.tensor([0, 2, 3])
    inp, target = level_mask(codes, fm, levels, 16, gen)
    for b, q in enumerate(levels.tolist()):
        assert torch.equal(inp[b, :q], codes[b, :q])  # coarser clean
        assert (inp[b, q + 1 :] == 16).all()  # finer masked
        assert torch.equal(inp[b, q] == 16, target[b])  # target = masked frames of level q
        assert target[b].sum() >= 1 and not (target[b] & ~fm[b]).any()


def test_config_round_trip_strict() -> None:
    cfg = tiny_train_config()
    assert from_dict(TrainConfig, to_dict(cfg)) == cfg
    with pytest.raises(ArtifactError, match="unknown key"):
        from_dict(TrainConfig, {"lr": 1e-3, "lrr": 2})


def test_cli(shard_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(to_dict(tiny_train_config(max_steps=3))))
    assert train_main(["--config", str(cfg_path), "--shards", str(shard_dir), "--out", str(tmp_path / "r")]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["step"] == 3
    assert train_main(["--config", str(cfg_path), "--shards", str(tmp_path / "none"), "--out", str(tmp_path / "x")]) == 2
    assert "error:" in capsys.readouterr().err


def test_cli_device(shard_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--device overrides the config's; a name torch does not know, or CUDA on a machine without it, is refused."""
    import yaml

    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(to_dict(tiny_train_config(max_steps=2))))
    base = ["--config", str(cfg_path), "--shards", str(shard_dir)]
    assert train_main([*base, "--out", str(tmp_path / "r"), "--device", "cpu"]) == 0
    assert train_main([*base, "--out", str(tmp_path / "x"), "--device", "gpu0"]) == 2
    assert "use cpu, cuda or cuda:N" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert train_main([*base, "--out", str(tmp_path / "y"), "--device", "cuda"]) == 2
        assert "no CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_held_out_losses_are_logged_and_reproducible(shard_dir: Path, tmp_path: Path) -> None:
    """'val' records every val_every steps and at the stop; same data + weights -> the same figures."""
    from train_fixtures import META, make_utterances

    from audiopd.train.shards import write_shard

    val_dir = tmp_path / "val"
    write_shard(val_dir / "test-000.safetensors", make_utterances(12, 7), META)
    cfg = tiny_train_config(max_steps=14, val_every=6, val_frames=0)
    summary = train(cfg, shard_dir, tmp_path / "run", val_shards=val_dir)
    vals = [r for r in _log(tmp_path / "run") if r.get("event") == "val"]
    assert [r["step"] for r in vals] == [6, 12, 14]
    assert summary["val"] == vals[-1]
    for r in vals:
        assert r["utterances"] == 12 and r["frames"] > 0
        assert all(r[k] > 0 for k in ("loss", "duration", "masked", "serial"))
    assert vals[-1]["loss"] < vals[0]["loss"]  # the held-out utterances follow the training data's rule
    # Scoring the final weights again gives the final record exactly: fixed subset, fixed masks.
    from audiopd.train.checkpoint import latest_checkpoint as latest
    from audiopd.train.data import ShardDataset
    from audiopd.train.loop import model_config_of
    from audiopd.train.objective import VoiceObjective
    from audiopd.train.validate import held_out_losses
    from audiopd.model.voice import VoiceModel

    model = VoiceModel(model_config_of(tmp_path / "run"))
    model.load_state_dict(load_file(str(latest(tmp_path / "run") / "model.safetensors")))
    again = held_out_losses(VoiceObjective(model, cfg.loss), ShardDataset(val_dir, max_frames=cfg.max_utt_frames),
                            batch_frames=cfg.batch_frames, val_frames=0, device=torch.device("cpu"))
    assert again["loss"] == pytest.approx(vals[-1]["loss"], rel=1e-6)
    assert model.training  # held_out_losses restores the mode it found


def test_held_out_subset_is_fixed_and_within_budget() -> None:
    import numpy as np

    from audiopd.train.validate import val_subset

    lengths = np.array([50, 80, 20, 120, 60, 40, 90, 30])
    a = val_subset(lengths, 200)
    assert a == val_subset(lengths, 200) and a == sorted(a)
    assert 0 < lengths[a].sum() <= 200 and len(a) >= 3
    assert val_subset(lengths, 0) == list(range(8))
    assert val_subset(lengths, 10) == [2]  # below the shortest: still one utterance, the shortest


def test_held_out_shards_must_match_the_training_shards(shard_dir: Path, tmp_path: Path) -> None:
    import dataclasses

    from train_fixtures import META, make_utterances

    from audiopd.train.shards import write_shard

    other = dataclasses.replace(META, codec="another")
    write_shard(tmp_path / "val" / "test-000.safetensors", make_utterances(4, 3), other)
    with pytest.raises(ArtifactError, match="held-out shards do not match"):
        train(tiny_train_config(max_steps=2), shard_dir, tmp_path / "run", val_shards=tmp_path / "val")


def test_cli_takes_held_out_shards(shard_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(to_dict(tiny_train_config(max_steps=2))))
    args = ["--config", str(cfg_path), "--shards", str(shard_dir / "s0.safetensors"), "--out", str(tmp_path / "r"),
            "--val-shards", str(shard_dir / "s1.safetensors")]
    assert train_main(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["val"]["step"] == 2 and summary["val"]["utterances"] > 0


def test_resume_stays_exact_with_held_out_scoring(shard_dir: Path, tmp_path: Path) -> None:
    """The split run scores the held-out set at its stop (step 7), the straight run does not: same weights."""
    cfg = tiny_train_config(max_steps=14, ckpt_every=7, val_every=5)
    train(cfg, shard_dir, tmp_path / "straight", val_shards=shard_dir / "s1.safetensors")
    train(cfg, shard_dir, tmp_path / "split", max_steps=7, val_shards=shard_dir / "s1.safetensors")
    train(cfg, shard_dir, tmp_path / "split", resume=True, val_shards=shard_dir / "s1.safetensors")
    a = load_file(str(latest_checkpoint(tmp_path / "straight") / "model.safetensors"))
    b = load_file(str(latest_checkpoint(tmp_path / "split") / "model.safetensors"))
    for k in a:
        assert torch.equal(a[k], b[k]), k
    assert [r["step"] for r in _log(tmp_path / "split") if r.get("event") == "val"] == [5, 7, 10, 14]
