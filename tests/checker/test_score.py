"""score(): the combined checker on real flite speech, plus its input validation."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from audiopd.checker import CheckerConfig, Verdict, at_level, score
from audiopd.errors import AudioInputError, NothingToSpeakError
from audiopd.eval.faults import inject

TEXT = "The old man walked slowly along the quiet river, thinking about his garden."
needs_flite = pytest.mark.skipif(shutil.which("flite") is None, reason="needs Debian flite")


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> tuple[np.ndarray, int]:
    import soundfile as sf

    out = tmp_path_factory.mktemp("score") / "x.wav"
    subprocess.run(["flite", "-voice", "rms", "-t", TEXT, "-o", str(out)], check=True)
    audio, rate = sf.read(str(out), dtype="float32")
    return audio, rate


@pytest.fixture(scope="module")
def other_speech(tmp_path_factory: pytest.TempPathFactory) -> tuple[np.ndarray, int]:
    import soundfile as sf

    out = tmp_path_factory.mktemp("score") / "other.wav"
    subprocess.run(["flite", "-voice", "slt", "-t", "Please remember to buy eggs, milk and bread before the shop "
                    "closes tonight.", "-o", str(out)], check=True)
    audio, rate = sf.read(str(out), dtype="float32")
    return audio, rate


@needs_flite
def test_clean_speech_passes(speech: tuple[np.ndarray, int]) -> None:
    audio, rate = speech
    v = score(audio, rate, TEXT, config=CheckerConfig(asr="always"))
    assert isinstance(v, Verdict)
    assert v.passed, v.reasons
    assert v.score > 0.5 and not v.reasons and not v.bad_spans and not v.failed
    assert [w.word for w in v.words][:3] == ["the", "old", "man"]
    assert all(w.start is not None and w.end > w.start for w in v.words)
    assert v.metrics["asr_ran"] == 1.0 and v.metrics["asr_wer"] < 0.5
    # The two recogniser passes are timed apart, and they are parts of the whole check.
    m = v.metrics
    assert m["align_seconds"] > 0 and m["asr_seconds"] > 0
    assert m["align_seconds"] + m["asr_seconds"] <= m["check_seconds"]
    json.dumps(v.to_dict())  # JSON-ready
    # Default ("borderline") skips recognition on a clip this clean, with the same verdict.
    quick = score(audio, rate, TEXT)
    assert quick.passed and quick.metrics["asr_ran"] == 0.0
    assert quick.metrics["asr_seconds"] == 0.0 and 0 < quick.metrics["align_seconds"] <= quick.metrics["check_seconds"]


@needs_flite
def test_inserted_pause_fails_with_span(speech: tuple[np.ndarray, int]) -> None:
    audio, rate = speech
    y, fault = inject("pause", audio, rate, seed=0)
    v = score(y, rate, TEXT, config=CheckerConfig(asr="never"))
    assert not v.passed and v.score < 0.5
    assert "internal_silence" in v.failed
    assert any("internal silence" in r for r in v.reasons)
    assert any(a <= fault.start + 0.1 and b >= fault.end - 0.1 for a, b in v.bad_spans)
    assert v.metrics["asr_ran"] == 0.0


@needs_flite
def test_wrong_text_fails(speech: tuple[np.ndarray, int]) -> None:
    audio, rate = speech
    v = score(audio, rate, "Please remember to buy eggs, milk and bread before the shop closes tonight.")
    assert not v.passed
    assert {"phone_error_rate", "phone_window", "asr_wer"} & set(v.failed)
    thorough = score(audio, rate, "Please remember to buy eggs, milk and bread before the shop closes tonight.",
                     config=at_level(CheckerConfig(), "thorough"))
    assert not thorough.passed and {"alignment", "alignment_mean", "asr_wer"} & set(thorough.failed)


@needs_flite
def test_default_listener_is_the_phone_recogniser_and_thorough_is_pocketsphinx(speech) -> None:
    audio, rate = speech
    fast = score(audio, rate, TEXT)
    assert fast.passed, fast.reasons
    assert fast.metrics["phone_error_rate"] < 0.35 and "alignment_window" not in fast.metrics
    # Word spans come from the phone alignment, in order, inside the clip.
    spans = [(w.start, w.end) for w in fast.words]
    assert all(a is not None and b > a for a, b in spans)
    assert all(spans[i][1] <= spans[i + 1][0] + 1e-6 for i in range(len(spans) - 1))
    assert spans[-1][1] <= len(audio) / rate + 0.02
    thorough = score(audio, rate, TEXT, config=at_level(CheckerConfig(), "thorough"))
    assert thorough.passed and "alignment_window" in thorough.metrics and thorough.metrics["asr_ran"] == 1.0
    # The point of the fast listener: it costs a small share of PocketSphinx's recognition and alignment.
    assert fast.metrics["align_seconds"] < thorough.metrics["align_seconds"] + thorough.metrics["asr_seconds"]


@needs_flite
def test_the_recogniser_gives_the_same_verdict_in_torch(speech) -> None:
    """``runtime="torch"`` (the torch facade's checker) runs the same network and weights: the same findings, word
    spans and phone error rate as NumPy's on clean speech and on a clip with a word cut out; an unknown runtime is
    an error."""
    audio, rate = speech
    cut, _ = inject("skip", audio, rate, seed=0)
    for clip in (audio, cut):
        ours, ref = score(clip, rate, TEXT, runtime="torch"), score(clip, rate, TEXT)
        assert ours.passed == ref.passed and ours.failed == ref.failed
        assert ours.metrics["phone_error_rate"] == pytest.approx(ref.metrics["phone_error_rate"], abs=1e-9)
        assert [(w.start, w.end) for w in ours.words] == [(w.start, w.end) for w in ref.words]
    with pytest.raises(ValueError, match="runtime must be one of"):
        score(audio, rate, TEXT, runtime="gpu")


@needs_flite
@pytest.mark.parametrize("kind", ["skip", "repeat", "swap"])
def test_phone_recogniser_catches_content_faults_where_they_are(speech, other_speech, kind: str) -> None:
    audio, rate = speech
    y, fault = inject(kind, audio, rate, seed=1, other=other_speech[0])
    v = score(y, rate, TEXT, config=CheckerConfig(asr="never"))
    assert not v.passed, f"{kind} passed: {v.metrics}"
    assert {"phone_window", "phone_deletions", "phone_insertions", "phone_error_rate"} & set(v.failed)
    if kind != "swap":  # the span to repair covers the fault
        assert any(a <= fault.end + 0.3 and b >= fault.start - 0.3 for a, b in v.bad_spans), (v.bad_spans, fault)


@needs_flite
def test_expected_durations_allow_a_predicted_pause(speech: tuple[np.ndarray, int]) -> None:
    audio, rate = speech
    y, _ = inject("pause", audio, rate, seed=0)
    n = len(TEXT.split())
    total = len(y) / rate
    # A duration model that predicted the 2.5 s pause: the silence is expected, not a fault.
    durations = [2.5] + [(total - 2.5) / n] * n
    v = score(y, rate, TEXT, durations=durations, config=CheckerConfig(asr="never"))
    assert "internal_silence" not in v.failed
    # ... but a clip twice as long as predicted fails the length check.
    v2 = score(audio, rate, TEXT, durations=[len(audio) / rate / 2.2], config=CheckerConfig(asr="never"))
    assert "length_ratio" in v2.failed


@needs_flite
def test_looping_tokens_fail(speech: tuple[np.ndarray, int]) -> None:
    audio, rate = speech
    frames = int(len(audio) / rate * 50)
    codes = np.random.default_rng(0).integers(0, 1024, size=(4, frames))
    good = score(audio, rate, TEXT, tokens=codes, config=CheckerConfig(asr="never"))
    assert "token_repetition" not in good.failed
    codes[:, 40:160] = np.tile(codes[:, 30:40], (1, 12))
    conf = np.full(frames, 0.9)
    conf[: frames // 2] = 0.01
    bad = score(audio, rate, TEXT, tokens=codes, confidences=conf, config=CheckerConfig(asr="never"))
    assert {"token_repetition", "low_confidence"} <= set(bad.failed)
    assert any(a <= 0.85 and b >= 3.1 for a, b in bad.bad_spans)  # the looped frames 40-160


@pytest.mark.parametrize(
    ("audio", "rate", "text", "error"),
    [
        (np.zeros(0, np.float32), 16000, "hello there", AudioInputError),
        (np.full(1000, np.nan, np.float32), 16000, "hello there", AudioInputError),
        (np.zeros((2, 1000), np.float32), 16000, "hello there", AudioInputError),
        (np.zeros(1000, np.float32), 0, "hello there", AudioInputError),
        (np.zeros(1000, np.float32), 16000, "  ...  ", NothingToSpeakError),
    ],
)
def test_bad_input_is_a_clear_error(audio: np.ndarray, rate: int, text: str, error: type) -> None:
    with pytest.raises(error):
        score(audio, rate, text)


def test_silent_audio_fails_without_crashing() -> None:
    v = score(np.zeros(16000, np.float32), 16000, "hello there")
    assert not v.passed and v.failed == ["no_speech"]
    assert v.bad_spans == [(0.0, 1.0)]


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="asr"):
        CheckerConfig(asr="sometimes")
    with pytest.raises(ValueError, match="recognizer"):
        CheckerConfig(recognizer="whisper")
    with pytest.raises(ValueError, match="check level"):
        at_level(CheckerConfig(), "quick")
    assert at_level(CheckerConfig(max_wer=0.5), "thorough") == CheckerConfig(max_wer=0.5, recognizer="sphinx",
                                                                             asr="always")
    assert at_level(CheckerConfig(max_wer=0.5), "fast") == CheckerConfig(max_wer=0.5)
    with pytest.raises(ValueError):
        CheckerConfig(max_internal_silence_s=0)
