"""Per-voice checker thresholds: a voice artifact's optional checker.yaml, and what auto mode runs with it.

The voice is a randomly initialised VoiceModel saved with save_voice into tmp_path (named
``DEFAULT_VOICE`` on a temporary $AUDIOPD_VOICES_PATH) with the fixture codec. checker.yaml is written
next to it and SHA256SUMS rewritten, as the lead would after calibrating. The real checker is
replaced by a recording stub where a test asks which config the synthesizer's checker got.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from voice_fixtures import install_voices

import audiopd
import audiopd.checker
from audiopd.artifacts import DEFAULT_VOICE, write_checksums
from audiopd.checker import CheckerConfig
from audiopd.errors import ArtifactError
from audiopd.model.voice import (
    CHECKER_FILE,
    load_checker_config,
    load_voice,
)

TEXT = "Hello there, how are you?"


@pytest.fixture
def voice_dir(tmp_path, monkeypatch) -> Path:
    return install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("alice", "bob")})[DEFAULT_VOICE]


def write_checker_yaml(d: Path, text: str, *, checksum: bool = True) -> None:
    (d / CHECKER_FILE).write_text(text)
    if checksum:
        write_checksums(d)


class Recorder:
    """Stands in for audiopd.checker.score: records the config it was called with, always passes."""

    def __init__(self) -> None:
        self.configs: list[CheckerConfig | None] = []

    def __call__(self, audio, sample_rate, text, *, config=None, **kw):
        self.configs.append(config)
        return {"passed": True, "score": 1.0, "reasons": [], "bad_spans": []}


# ----------------------------------------------------------------------------------- loading
def test_no_checker_yaml_means_defaults(voice_dir) -> None:
    assert load_voice(voice_dir).checker_config is None
    assert load_checker_config(DEFAULT_VOICE) is None


def test_overrides_apply_over_the_defaults(voice_dir) -> None:
    write_checker_yaml(voice_dir, "min_window_score: -80\nmax_wer: 0.9\nasr: always\nmax_deletion_run: 4\n")
    cfg = load_voice(voice_dir).checker_config
    assert cfg == CheckerConfig(min_window_score=-80.0, max_wer=0.9, asr="always", max_deletion_run=4)
    assert isinstance(cfg.min_window_score, float)
    assert load_checker_config(voice_dir) == cfg  # the weight-free loader agrees
    # An empty file is a valid (empty) subset.
    write_checker_yaml(voice_dir, "")
    assert load_checker_config(voice_dir) == CheckerConfig()


@pytest.mark.parametrize("text, needle", [
    ("min_window_score: -80\nmin_windw_score: -70\n", "min_windw_score"),  # a typo is named
    ("min_window_score: low\n", "min_window_score must be float"),
    ("max_deletion_run: 2.5\n", "max_deletion_run must be int"),
    ("asr: true\n", "asr must be str"),
    ("asr: sometimes\n", "CheckerConfig.asr must be one of"),
    ("max_wer: 0\n", "max_wer must be > 0"),
    ("short_per_slack: -0.1\n", "short_per_slack must be >= 0"),
    ("per_full_phones: 0\n", "per_full_phones >= 1"),
    ("- min_window_score\n", "expected a mapping"),
    ("min_window_score: [\n", "not valid YAML"),
])
def test_bad_checker_yaml_is_an_artifact_error(voice_dir, text: str, needle: str) -> None:
    write_checker_yaml(voice_dir, text)
    for load in (load_voice, load_checker_config, audiopd.load):
        with pytest.raises(ArtifactError, match="checker.yaml") as err:
            load(voice_dir)
        assert needle in str(err.value)


def test_checker_yaml_must_be_checksummed(voice_dir) -> None:
    write_checker_yaml(voice_dir, "min_window_score: -80\n", checksum=False)
    with pytest.raises(ArtifactError, match="checker.yaml is not listed in SHA256SUMS"):
        load_voice(voice_dir)
    write_checksums(voice_dir)
    assert load_voice(voice_dir).checker_config.min_window_score == -80.0
    (voice_dir / CHECKER_FILE).write_text("min_window_score: -999\n")  # edited after the checksums
    for load in (load_voice, load_checker_config):
        with pytest.raises(ArtifactError, match="checksum mismatch for checker.yaml"):
            load(voice_dir)


# ------------------------------------------------------------------------------- synthesis
def test_auto_mode_checks_with_the_voice_thresholds(voice_dir, monkeypatch) -> None:
    write_checker_yaml(voice_dir, "min_window_score: -80\n")
    rec = Recorder()
    monkeypatch.setattr(audiopd.checker, "score", rec)
    tts = audiopd.load()
    assert tts.checker_config == CheckerConfig(min_window_score=-80.0)
    res = tts.synthesize(TEXT, mode="auto", seed=0)
    assert res.report["checker"] == "voice" and res.report["check"]["passed"] is True
    assert rec.configs == [CheckerConfig(min_window_score=-80.0)]


def test_report_says_which_checker_ran(voice_dir, monkeypatch) -> None:
    rec = Recorder()
    monkeypatch.setattr(audiopd.checker, "score", rec)
    tts = audiopd.load()
    report = tts.synthesize(TEXT, mode="auto", seed=0).report
    assert report["checker"] == "default" and report["check_level"] == "fast"
    assert rec.configs == [CheckerConfig()]  # score's own default
    report = tts.synthesize(TEXT, mode="auto", seed=0, check_level="thorough").report
    assert report["check_level"] == "thorough"
    assert rec.configs[-1] == CheckerConfig(recognizer="sphinx", asr="always")
    unchecked = tts.synthesize(TEXT, mode="parallel", seed=0).report
    assert unchecked["checker"] is None and unchecked["check_level"] is None  # not checked
    tts.checker = Recorder()
    assert tts.synthesize(TEXT, mode="auto", seed=0).report["checker"] == "custom"
    # Setting a config later takes effect at once (the default checker is not cached).
    tts.checker = None
    tts.checker_config = CheckerConfig(max_wer=0.7)
    assert tts.synthesize(TEXT, mode="parallel", check=True, seed=0).report["checker"] == "voice"
    assert rec.configs[-1] == CheckerConfig(max_wer=0.7)


def test_a_voice_model_handed_to_load_keeps_its_thresholds(voice_dir) -> None:
    write_checker_yaml(voice_dir, "max_unexplained_speech_s: 0.6\n")
    tts = audiopd.load(load_voice(voice_dir))
    assert tts.checker_config == CheckerConfig(max_unexplained_speech_s=0.6)
