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
