"""Joining separately synthesised chunks into one signal without clicks.

Each chunk of a long text is decoded on its own (sentence boundaries are where a listener expects a
pause, audiopd.text.sentences), so its last sample and the next chunk's first sample are unrelated:
butting them together gives a step, which is heard as a click. At every join the outgoing chunk
fades out and the incoming one fades in with a raised-cosine (Hann) ramp, whose slope is zero at
both ends, so the join adds at most ``peak * pi / (2 * fade_samples)`` to any sample-to-sample
difference. Between the ramps sits a short pause (``pause_s``); with ``pause_s == 0`` the ramps
overlap instead (a crossfade). The outer edges of the whole signal are left as decoded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class JoinConfig:
    # 150 ms: a short sentence pause; the model's own "." / "$" tokens already carry most of it.
    pause_s: float = 0.15
    # 10 ms ramps: long enough to remove the step (a 1.0 step becomes <= 0.01 per sample at 16 kHz),
    # short enough not to eat into speech.
    fade_s: float = 0.01

    def validate(self) -> None:
        if not (self.pause_s >= 0.0 and self.fade_s >= 0.0):
            raise ValueError(f"pause_s and fade_s must be >= 0, got {self.pause_s}, {self.fade_s}")


def _ramp(n: int) -> np.ndarray:
    """Raised-cosine ramp 0 -> 1 over ``n`` samples (both ends excluded, so no sample is dropped)."""
    if n <= 0:
        return np.ones(0, dtype=np.float32)
    x = (np.arange(n, dtype=np.float64) + 1.0) / (n + 1.0)
    return (0.5 - 0.5 * np.cos(np.pi * x)).astype(np.float32)


def fade_edges(part: np.ndarray, fade: int, *, fade_in: bool, fade_out: bool) -> int:
    """Ramp ``part``'s start in and/or its end out, in place, over ``fade`` samples (at most half the part each).

    Returns the ramp length used. The server shapes each streamed sentence with this too, so streamed audio
    matches ``join_chunks`` sample for sample.
    """
    n = min(fade, part.size // 2)
    if n and fade_in:
        part[:n] *= _ramp(n)
    if n and fade_out:
        part[-n:] *= _ramp(n)[::-1]
    return n


def join_chunks(chunks: Sequence[np.ndarray], sample_rate: int,
                config: JoinConfig | None = None) -> tuple[np.ndarray, list[int]]:
    """Join 1-D float chunks; returns (audio, start sample of each chunk in the output).

    A single chunk comes back unchanged (as float32). Empty chunks are allowed and take no room
    beyond their pause.
    """
    cfg = config or JoinConfig()
    cfg.validate()
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be > 0, got {sample_rate}")
    parts = [np.asarray(c, dtype=np.float32).reshape(-1) for c in chunks]
    if not parts:
        return np.zeros(0, dtype=np.float32), []
    if len(parts) == 1:
        return parts[0].copy(), [0]
    pause = int(round(cfg.pause_s * sample_rate))
    fade = int(round(cfg.fade_s * sample_rate))
    shaped = []
    for i, part in enumerate(parts):
        part = part.copy()
        n = fade_edges(part, fade, fade_in=i > 0, fade_out=i < len(parts) - 1)
        shaped.append((part, n))
    # Crossfade when there is no pause: the incoming ramp overlaps the outgoing one.
    starts: list[int] = []
    pos = 0
    for i, (part, n) in enumerate(shaped):
        if i > 0:
            prev_n = shaped[i - 1][1]
            pos += pause if pause > 0 else -min(prev_n, n)
        starts.append(pos)
        pos += part.size
    out = np.zeros(max(pos, 0), dtype=np.float32)
    for (part, _), start in zip(shaped, starts):
        out[start : start + part.size] += part
    return out, starts


def max_jump(audio: np.ndarray, around: Sequence[int], radius: int) -> float:
    """Largest |x[n+1] - x[n]| within ``radius`` samples of any index in ``around`` (click measure)."""
    a = np.asarray(audio, dtype=np.float64).reshape(-1)
    worst = 0.0
    for c in around:
        lo, hi = max(0, c - radius), min(a.size, c + radius + 1)
        if hi - lo >= 2:
            worst = max(worst, float(np.max(np.abs(np.diff(a[lo:hi])))))
    return worst
