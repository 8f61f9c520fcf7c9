"""Signal checks on synthetic arrays: each fires on its defect and stays quiet on clean 'speech'."""

from __future__ import annotations

import numpy as np
import pytest

from audiopd.checker import signal as sig

SR = 16000


def _speechlike(seconds: float, seed: int = 0) -> np.ndarray:
    """Voiced-like signal: a harmonic tone with a syllable-rate envelope, silence at both ends."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    f0 = 120 + 20 * np.sin(2 * np.pi * 0.5 * t)
    phase = 2 * np.pi * np.cumsum(f0) / SR
    x = sum(np.sin(k * phase) / k for k in range(1, 12))
    env = 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t) ** 2  # syllables, never silent
    x = 0.2 * x * env + 1e-4 * rng.standard_normal(len(t))
    pad = np.zeros(int(0.2 * SR))
    return np.concatenate([pad, x, pad]).astype(np.float32)


def test_clean_signal_passes_everything() -> None:
    x = _speechlike(2.0)
    fr = sig.analyse(x, SR)
    assert not sig.internal_silence(fr, 0.4).failed
    assert not sig.truncation(fr, 0.03, 20.0).failed
    assert not sig.clipping(x, SR, 0.001).failed
    assert not sig.dropouts(fr, 0.02, 0.3, 30.0).failed
    assert not sig.noise_bursts(fr, 0.35, 10.0, 0.08).failed


@pytest.mark.parametrize(("gap_s", "fails"), [(0.2, False), (0.35, False), (0.6, True), (1.5, True)])
def test_internal_silence_threshold(gap_s: float, fails: bool) -> None:
    x = _speechlike(2.0)
    at = int(1.0 * SR)
    y = np.concatenate([x[:at], np.zeros(int(gap_s * SR), np.float32), x[at:]])
    f = sig.internal_silence(sig.analyse(y, SR), 0.4)
    assert f.failed == fails
    assert f.value == pytest.approx(gap_s, abs=0.03)
    if fails:
        (a, b), = f.spans
        assert a == pytest.approx(1.0, abs=0.03) and b - a == pytest.approx(gap_s, abs=0.03)


def test_leading_and_trailing_silence_are_not_internal() -> None:
    x = np.concatenate([np.zeros(SR, np.float32), _speechlike(1.0), np.zeros(2 * SR, np.float32)])
    assert sig.internal_silence(sig.analyse(x, SR), 0.4).value < 0.1


def test_truncation_when_speech_hits_the_end() -> None:
    x = _speechlike(2.0)
    cut = x[: int(1.5 * SR)]
    assert sig.truncation(sig.analyse(cut, SR), 0.03, 20.0).failed
    assert not sig.truncation(sig.analyse(x, SR), 0.03, 20.0).failed


@pytest.mark.parametrize(("gain", "fails"), [(1.0, False), (4.0, True), (20.0, True)])
def test_clipping(gain: float, fails: bool) -> None:
    x = np.clip(_speechlike(1.0) * gain, -1.0, 1.0)
    f = sig.clipping(x, SR, 0.001)
    assert f.failed == fails
    assert bool(f.spans) == fails


def test_single_full_scale_sample_is_not_clipping() -> None:
    x = _speechlike(1.0)
    x[5000] = 1.0
    assert sig.clipping(x, SR, 0.001).value == 0.0


@pytest.mark.parametrize(("ms", "count"), [(10, 0), (50, 1), (200, 1), (600, 0)])
def test_dropouts_need_short_digital_silence_inside_speech(ms: int, count: int) -> None:
    x = _speechlike(2.0)
    a = int(1.0 * SR)
    x[a : a + ms * SR // 1000] = 0.0
    f = sig.dropouts(sig.analyse(x, SR), 0.02, 0.3, 30.0)
    assert f.value == count
    if count:
        assert f.spans[0][0] == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize(("noise_s", "fails"), [(0.03, False), (0.15, True), (0.4, True)])
def test_noise_burst_detected_by_flatness(noise_s: float, fails: bool) -> None:
    x = _speechlike(2.0)
    rng = np.random.default_rng(1)
    a, n = int(1.0 * SR), int(noise_s * SR)
    x[a : a + n] += (0.3 * rng.standard_normal(n)).astype(np.float32)
    f = sig.noise_bursts(sig.analyse(x, SR), 0.35, 10.0, 0.08)
    assert f.failed == fails
    assert f.value == pytest.approx(noise_s, abs=0.03)


def test_quiet_noise_is_not_a_burst() -> None:
    x = _speechlike(2.0)
    rng = np.random.default_rng(2)
    x[SR : SR + 4000] += (0.002 * rng.standard_normal(4000)).astype(np.float32)  # far below speech
    assert not sig.noise_bursts(sig.analyse(x, SR), 0.35, 10.0, 0.08).failed


def test_silent_audio_has_no_speech_region() -> None:
    fr = sig.analyse(np.zeros(SR, np.float32), SR)
    assert sig.internal_silence(fr, 0.4).value == 0.0
    assert not sig.dropouts(fr, 0.02, 0.3, 30.0).failed


def test_finding_badness_for_negative_score_thresholds() -> None:
    assert sig.Finding("s", -80.0, -62.0).failed
    assert not sig.Finding("s", -20.0, -62.0).failed
    assert sig.Finding("s", 3.0, 3.0).badness == pytest.approx(1.0)
