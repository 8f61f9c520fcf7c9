"""A synthetic voiced sound and a tiny WORLD codec fitted on it in about a second (shared by the codec and eval tests)."""

from __future__ import annotations

import numpy as np

from audiopd.codec.world import WorldCodec, WorldCodecConfig, analyze
from audiopd.codec.world_fit import fit_rvq, prosody_relative_vectors

SR = 16000


def vowel(f0_hz: float, seconds: float, formants=(700.0, 1200.0, 2600.0)) -> np.ndarray:
    """A glottal pulse train through three formant resonators: a crude but real voiced sound."""
    from scipy.signal import lfilter

    n = int(SR * seconds)
    t = np.arange(n) / SR
    phase = np.cumsum(np.full(n, f0_hz / SR))
    pulses = (np.diff(np.floor(phase), prepend=0.0) > 0).astype(np.float64)
    y = pulses
    for f in formants:
        r = np.exp(-np.pi * 100.0 / SR)
        a = [1.0, -2 * r * np.cos(2 * np.pi * f / SR), r * r]
        y = lfilter([1.0 - r], a, y)
    y *= 0.3 / (np.abs(y).max() + 1e-9)
    return (y * np.hanning(n) ** 0.1 + 1e-4 * np.sin(2 * np.pi * 50 * t)).astype(np.float32)


def small_world_codec() -> WorldCodec:
    """Three codebook levels (two RVQ levels of 64 codewords), fitted on six vowels; DIO keeps it fast."""
    cfg = WorldCodecConfig(name="tiny", f0_method="dio", num_codebooks=3, cardinality=1024)
    feats = [analyze(vowel(f0, 0.6, fm), cfg) for f0 in (110.0, 150.0, 220.0)
             for fm in ((700.0, 1200.0, 2600.0), (300.0, 2300.0, 3000.0))]
    books = fit_rvq(prosody_relative_vectors(feats, cfg), 2, 64, iters=8, log=None)
    # Pad to the codec's cardinality with far-away codewords that are never nearest.
    books = np.concatenate([books, np.zeros((2, 1024 - 64, cfg.vq_dims), np.float32) + 1e3], axis=1)
    return WorldCodec(cfg, books)
