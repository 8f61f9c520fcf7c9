"""Failure injection on clean speech, to measure what the checker catches.

Each fault imitates a way a codec-token TTS goes wrong (VALL-E/SoundStorm-style failure modes:
skipped or repeated words, dead air, garbage tokens decoded as noise, an utterance that stops
early, a stall, or speech for the wrong text). All faults are deterministic per ``seed``.

Spans are placed inside the speech region (first to last frame within 35 dB of the loudest
10 ms frame), and cut/paste edges get a 5 ms cross-fade so the fault itself is not a click that a
checker could spot instead of the real defect.

Fault kinds:

- ``skip``: remove 0.4-0.8 s of speech (about 1-3 words).
- ``repeat``: duplicate 0.4-0.8 s of speech right after itself.
- ``silence``: zero 0.5-1.0 s of speech in place (length unchanged).
- ``noise``: add 0.3-0.5 s of white noise 0-6 dB louder than the speech's active RMS.
- ``truncate``: cut the last 25-40% of the audio.
- ``pause``: insert 2.5 s of silence inside the speech region.
- ``swap``: the audio of a different sentence (``other`` must be given).

On a clip whose speech region cannot hold the drawn span of ``skip``, ``repeat``, ``silence`` or ``noise`` (a 1-2
s sentence), the span shrinks to 80% of the region (never below 0.2 s); on 2 s of speech and more nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FAULT_KINDS: tuple[str, ...] = ("skip", "repeat", "silence", "noise", "truncate", "pause", "swap")

_FRAME_S = 0.01
_ACTIVE_DB = 35.0
_FADE_S = 0.005
_MIN_SHORT_S = 0.2  # the shortest span a fault is shrunk to on a short clip; below it, the clip is too short


@dataclass(frozen=True)
class Fault:
    """What was done: the kind, the affected span in the *output* audio (seconds), and details."""

    kind: str
    start: float
    end: float
    detail: str


def speech_region(audio: np.ndarray, sample_rate: int) -> tuple[np.ndarray, int, int]:
    """Per-10 ms-frame activity mask and the first/last active sample (energy within 35 dB of peak)."""
    hop = int(round(_FRAME_S * sample_rate))
    n = len(audio) // hop
    if n == 0:
        raise ValueError("audio shorter than one 10 ms frame")
    frames = audio[: n * hop].astype(np.float64).reshape(n, hop)
    db = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    active = db > db.max() - _ACTIVE_DB
    idx = np.flatnonzero(active)
    return active, int(idx[0]) * hop, int(idx[-1] + 1) * hop


def _pick_span(
    active: np.ndarray, lo: int, hi: int, length: int, hop: int, rng: np.random.Generator
) -> int:
    """A start sample in [lo, hi - length] whose span is mostly (>= 60%) active speech."""
    if hi - lo < length + 2 * hop:
        raise ValueError(f"speech region {(hi - lo) / hop / 100:.2f} s is too short for the fault")
    best, best_frac = lo, -1.0
    for _ in range(50):
        s = int(rng.integers(lo, hi - length + 1))
        f0, f1 = s // hop, (s + length) // hop
        frac = float(np.mean(active[f0:max(f1, f0 + 1)]))
        if frac >= 0.6:
            return s
        if frac > best_frac:
            best, best_frac = s, frac
    return best


def _xfade_join(a: np.ndarray, b: np.ndarray, fade: int) -> np.ndarray:
    """Concatenate with a short linear cross-fade so the splice is not an audible click."""
    fade = min(fade, len(a), len(b))
    if fade == 0:
        return np.concatenate([a, b])
    ramp = np.linspace(0.0, 1.0, fade, dtype=np.float32)
    mid = a[-fade:] * (1 - ramp) + b[:fade] * ramp
    return np.concatenate([a[:-fade], mid, b[fade:]])


def inject(
    kind: str,
    audio: np.ndarray,
    sample_rate: int,
    seed: int,
    *,
    other: np.ndarray | None = None,
) -> tuple[np.ndarray, Fault]:
    """Apply fault ``kind`` to mono float ``audio``; returns (faulty audio, Fault). Deterministic per seed."""
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; expected one of {', '.join(FAULT_KINDS)}")
    x = np.asarray(audio, dtype=np.float32).reshape(-1)
    sr = int(sample_rate)
    rng = np.random.default_rng([int(seed), FAULT_KINDS.index(kind)])
    hop = int(round(_FRAME_S * sr))
    fade = int(round(_FADE_S * sr))
    active, lo, hi = speech_region(x, sr)

    if kind == "swap":
        if other is None:
            raise ValueError("fault 'swap' needs the audio of a different sentence (other=...)")
        y = np.asarray(other, dtype=np.float32).reshape(-1).copy()
        return y, Fault(kind, 0.0, len(y) / sr, "audio of a different sentence")

    if kind == "truncate":
        frac = float(rng.uniform(0.25, 0.40))
        keep = int(round(len(x) * (1 - frac)))
        y = x[:keep].copy()
        if fade:
            y[-fade:] *= np.linspace(1.0, 0.0, min(fade, len(y)), dtype=np.float32)
        return y, Fault(kind, keep / sr, len(x) / sr, f"cut last {frac:.0%}")

    if kind == "pause":
        at = int(rng.integers(lo + hop * 20, max(hi - hop * 20, lo + hop * 21)))
        head, tail = x[:at].copy(), x[at:].copy()
        n_fade = min(fade, len(head), len(tail))
        if n_fade:  # fade out into the pause and back in, so the edit is not a click
            head[-n_fade:] *= np.linspace(1.0, 0.0, n_fade, dtype=np.float32)
            tail[:n_fade] *= np.linspace(0.0, 1.0, n_fade, dtype=np.float32)
        y = np.concatenate([head, np.zeros(int(round(2.5 * sr)), dtype=np.float32), tail])
        return y, Fault(kind, at / sr, at / sr + 2.5, "inserted 2.5 s pause")

    ranges = {"skip": (0.4, 0.8), "repeat": (0.4, 0.8), "silence": (0.5, 1.0), "noise": (0.3, 0.5)}
    dur = float(rng.uniform(*ranges[kind]))
    # A short clip (a 1-2 s sentence) may not hold the drawn span: the fault takes at most 80% of the speech
    # region instead, so short clips are benchmarked too; a region of 1.25x the span or more (every clip of 2 s
    # and more speech) is unchanged.
    room = int(0.8 * (hi - lo - 2 * hop))
    if room < int(round(dur * sr)) and room >= int(round(_MIN_SHORT_S * sr)):
        dur = room / sr
    length = int(round(dur * sr))
    s = _pick_span(active, lo, hi, length, hop, rng)
    e = s + length

    if kind == "skip":
        y = _xfade_join(x[:s], x[e:], fade)
        return y, Fault(kind, s / sr, s / sr, f"removed {dur:.2f} s at {s / sr:.2f} s")
    if kind == "repeat":
        y = _xfade_join(_xfade_join(x[:e], x[s:e], fade), x[e:], fade)
        return y, Fault(kind, e / sr, (e + length) / sr, f"repeated {dur:.2f} s from {s / sr:.2f} s")
    if kind == "silence":
        y = x.copy()
        env = np.zeros(length, dtype=np.float32)
        if fade and length > 2 * fade:
            env[:fade] = np.linspace(1.0, 0.0, fade)
            env[-fade:] = np.linspace(0.0, 1.0, fade)
        y[s:e] *= env
        return y, Fault(kind, s / sr, e / sr, f"silenced {dur:.2f} s")
    # noise
    frames = x[: len(active) * hop].reshape(len(active), hop)
    speech_rms = float(np.sqrt(np.mean(frames[active] ** 2)))
    gain_db = float(rng.uniform(0.0, 6.0))
    noise = rng.standard_normal(length).astype(np.float32) * speech_rms * 10 ** (gain_db / 20)
    if fade and length > 2 * fade:
        noise[:fade] *= np.linspace(0.0, 1.0, fade, dtype=np.float32)
        noise[-fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    y = x.copy()
    y[s:e] = np.clip(y[s:e] + noise, -1.0, 1.0)
    return y, Fault(kind, s / sr, e / sr, f"noise burst {dur:.2f} s, +{gain_db:.1f} dB")
