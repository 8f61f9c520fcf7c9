"""Fault injection: deterministic, the right size, in the right place."""

from __future__ import annotations

import numpy as np
import pytest

from audiopd.eval.faults import FAULT_KINDS, inject, speech_region

SR = 16000


def _clip(seconds: float = 3.0, seed: int = 0) -> np.ndarray:
    """Noise-excited 'speech' with 0.3 s of digital silence at both ends."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    x = 0.2 * np.sin(2 * np.pi * 150 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t) ** 2)
    x += 0.01 * rng.standard_normal(len(t))
    pad = np.zeros(int(0.3 * SR))
    return np.concatenate([pad, x, pad]).astype(np.float32)


@pytest.mark.parametrize("kind", [k for k in FAULT_KINDS if k != "swap"])
def test_deterministic_per_seed(kind: str) -> None:
    x = _clip()
    a, fa = inject(kind, x, SR, seed=3)
    b, fb = inject(kind, x, SR, seed=3)
    c, _ = inject(kind, x, SR, seed=4)
    assert np.array_equal(a, b) and fa == fb
    assert not (len(a) == len(c) and np.array_equal(a, c))


@pytest.mark.parametrize("seed", range(5))
def test_lengths_and_spans(seed: int) -> None:
    x = _clip()
    n = len(x)
    _, lo, hi = speech_region(x, SR)
    y, f = inject("skip", x, SR, seed)
    assert 0.4 * SR - 2 <= n - len(y) <= 0.8 * SR + 2
    assert lo / SR <= f.start <= hi / SR
    y, f = inject("repeat", x, SR, seed)
    assert 0.4 * SR - 2 <= len(y) - n <= 0.8 * SR + 2
    y, f = inject("silence", x, SR, seed)
    assert len(y) == n and 0.5 <= f.end - f.start <= 1.0
    seg = y[int(f.start * SR) + 100 : int(f.end * SR) - 100]
    assert np.all(seg == 0)
    y, f = inject("noise", x, SR, seed)
    assert len(y) == n and 0.3 <= f.end - f.start <= 0.5
    burst = y[int(f.start * SR) : int(f.end * SR)] - x[int(f.start * SR) : int(f.end * SR)]
    assert np.sqrt(np.mean(burst**2)) > 0.05  # loud: at or above the speech level
    y, f = inject("truncate", x, SR, seed)
    assert 0.60 * n - 2 <= len(y) <= 0.75 * n + 2
    y, f = inject("pause", x, SR, seed)
    assert len(y) - n == int(2.5 * SR)
    assert np.all(y[int(f.start * SR) + 100 : int(f.end * SR) - 100] == 0)


def test_swap_needs_other_audio() -> None:
    x = _clip()
    other = _clip(2.0, seed=9)
    y, f = inject("swap", x, SR, 0, other=other)
    assert np.array_equal(y, other) and f.kind == "swap"
    with pytest.raises(ValueError, match="different sentence"):
        inject("swap", x, SR, 0)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        inject("explode", _clip(), SR, 0)
    with pytest.raises(ValueError, match="too short"):
        inject("skip", _clip(0.2), SR, 0)


@pytest.mark.parametrize("kind", ["skip", "repeat", "silence", "noise"])
def test_a_short_clip_gets_a_shorter_span_inside_its_speech(kind: str) -> None:
    """A 1 s sentence cannot hold 0.4-1.0 s spans with margins; the span shrinks to 80% of the speech region."""
    x = _clip(0.6)
    _, lo, hi = speech_region(x, SR)
    y, f = inject(kind, x, SR, seed=1)
    span = {"skip": len(x) - len(y), "repeat": len(y) - len(x)}.get(kind, round((f.end - f.start) * SR))
    assert 0.2 * SR <= span <= 0.8 * (hi - lo) + 2
    assert lo / SR <= f.start and f.end <= hi / SR + 0.8 * (hi - lo) / SR
