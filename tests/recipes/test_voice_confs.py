"""The voice recipe's configs load under the strict loaders (a typo'd key fails here, not hours into a run)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from audiopd.config import load_config
from audiopd.model.voice import parse_checker_file
from audiopd.train.loop import TrainConfig

CONF = Path(__file__).resolve().parents[2] / "recipes" / "voice" / "conf"
TRAIN_CONFS = sorted(p for p in CONF.glob("*.yaml") if not p.name.startswith("checker"))


def test_the_recipe_has_its_configs() -> None:
    assert {"default.yaml", "checker.yaml"} <= {p.name for p in CONF.glob("*.yaml")}


@pytest.mark.parametrize("path", TRAIN_CONFS, ids=lambda p: p.name)
def test_training_config_loads(path: Path) -> None:
    cfg = load_config(TrainConfig, path)
    assert cfg.max_steps > 0 and cfg.model.d_model % cfg.model.n_heads == 0


def test_checker_thresholds_load() -> None:
    cfg = parse_checker_file(CONF / "checker.yaml")
    # The fast level never runs PocketSphinx; the thorough level keeps the thresholds calibrated for it.
    assert cfg.recognizer == "ctc" and cfg.asr == "never"
    assert cfg.max_wer == 0.51 and cfg.max_deletion_run == 2


def test_joes_checker_thresholds_load_and_ship() -> None:
    cfg = parse_checker_file(CONF / "checker_joe.yaml")
    assert cfg.recognizer == "ctc" and cfg.asr == "never"
    assert (cfg.max_per, cfg.max_phone_deletions, cfg.max_phone_insertions) == (0.5, 6, 4)
    shipped = CONF.parents[2] / "voices" / "joe" / "checker.yaml"
    assert shipped.read_text(encoding="utf-8") == (CONF / "checker_joe.yaml").read_text(encoding="utf-8")


def test_the_natural_voices_checker_thresholds_load_and_ship() -> None:
    # joe's values but the pause limit and the short-clip PER slack, calibrated on the voice's output and its
    # teachers' (the file's comments).
    cfg = parse_checker_file(CONF / "checker_natural.yaml")
    joe = parse_checker_file(CONF / "checker_joe.yaml")
    assert cfg.max_internal_silence_s == 0.5 and cfg.short_per_slack == 0.25 and joe.short_per_slack == 0
    # ... and the recogniser fine-tuned on its teachers' speech (recipes/checker/README.md).
    assert cfg.recognizer_artifact == "phones16k_natural" and joe.recognizer_artifact == "phones16k"
    assert dataclasses.replace(cfg, max_internal_silence_s=0.45, short_per_slack=0.0,
                               recognizer_artifact="phones16k") == joe
    shipped = CONF.parents[2] / "voices" / "natural" / "checker.yaml"
    assert shipped.read_text(encoding="utf-8") == (CONF / "checker_natural.yaml").read_text(encoding="utf-8")
