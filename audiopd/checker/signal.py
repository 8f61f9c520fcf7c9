"""Signal-level checks: long internal silence, truncation, clipping, energy drop-outs, noise bursts.

All checks work on 10 ms frames of mono float audio at any rate and return ``Finding`` objects:
a measured value, the threshold it was compared with, and the time spans responsible, so the
caller can both explain a failure and hand the spans to span repair.

Levels are relative to the clip's own speech level (the 95th percentile of frame energy), so a
quiet but clean clip is not punished; digital silence is recognised absolutely (-80 dBFS), since
no natural recording or vocoder output holds exact zeros inside speech.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FRAME_S = 0.01
_EPS = 1e-12


@dataclass(frozen=True)
class Finding:
    """One check's result. ``badness`` = value / threshold (>= 1 means the check failed).

    For score-like checks both are negative (a log-likelihood floor), and the ratio still grows
    as the value gets worse.
    """

    name: str
    value: float
    threshold: float
    spans: tuple[tuple[float, float], ...] = ()
    reason: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def badness(self) -> float:
        if self.threshold == 0:
            return 0.0
        return float(self.value / self.threshold)

    @property
    def failed(self) -> bool:
        return self.badness >= 1.0


@dataclass(frozen=True)
class Frames:
    """Per-frame analysis shared by all signal checks."""

    db: np.ndarray  # frame energy, dB relative to full scale
    flatness: np.ndarray  # spectral flatness (geometric / arithmetic mean of the power spectrum)
    speech_db: float  # reference speech level: 95th percentile of frame energy
    active: np.ndarray  # frames within ``active_db`` of the speech level
    first: int  # first active frame (-1 if none)
    last: int  # last active frame (-1 if none)
    hop: int
    sample_rate: int


def analyse(audio: np.ndarray, sample_rate: int, *, active_db: float = 35.0) -> Frames:
    """Frame energy and flatness. Flatness uses a 2-frame (20 ms) Hann window per 10 ms hop."""
    x = np.asarray(audio, dtype=np.float64).reshape(-1)
    hop = max(1, int(round(FRAME_S * sample_rate)))
    n = max(1, len(x) // hop)
    pad = np.zeros(n * hop + hop, dtype=np.float64)
    pad[: min(len(x), n * hop)] = x[: n * hop]
    frames = pad[: n * hop].reshape(n, hop)
    db = 10 * np.log10(np.mean(frames**2, axis=1) + _EPS)
    win = np.hanning(2 * hop)
    idx = np.arange(n)[:, None] * hop + np.arange(2 * hop)[None, :]
    spec = np.abs(np.fft.rfft(pad[idx] * win, axis=1)[:, 1:]) ** 2 + _EPS
    flat = np.exp(np.mean(np.log(spec), axis=1)) / np.mean(spec, axis=1)
    speech_db = float(np.percentile(db, 95))
    active = db > max(speech_db - active_db, -80.0)
    on = np.flatnonzero(active)
    first, last = (int(on[0]), int(on[-1])) if on.size else (-1, -1)
    return Frames(db, flat, speech_db, active, first, last, hop, int(sample_rate))


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index runs where ``mask`` is True."""
    m = np.concatenate([[False], mask.astype(bool), [False]])
    d = np.diff(m.astype(np.int8))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


def internal_silence(fr: Frames, max_silence_s: float) -> Finding:
    """Longest silent stretch strictly between the first and the last active frame."""
    if fr.first < 0:
        return Finding("internal_silence", 0.0, max_silence_s, reason="no speech found")
    inside = ~fr.active[fr.first : fr.last + 1]
    runs = [(fr.first + a, fr.first + b) for a, b in _runs(inside)]
    if not runs:
        return Finding("internal_silence", 0.0, max_silence_s)
    a, b = max(runs, key=lambda r: r[1] - r[0])
    length = (b - a) * FRAME_S
    spans = tuple((s * FRAME_S, e * FRAME_S) for s, e in runs if (e - s) * FRAME_S >= max_silence_s)
    return Finding("internal_silence", length, max_silence_s, spans,
                   f"internal silence {length:.1f} s at {a * FRAME_S:.1f} s")


def truncation(fr: Frames, end_margin_s: float, end_level_db: float) -> Finding:
    """Speech running into the very end: the last ``end_margin_s`` is still loud.

    Value is the level of the final window above (speech level - ``end_level_db``) in dB, floored
    at 0; a clean ending decays into silence well below that.
    """
    if fr.first < 0:
        return Finding("truncation_signal", 0.0, 1.0, reason="no speech found")
    k = max(1, int(round(end_margin_s / FRAME_S)))
    tail = float(np.max(fr.db[-k:]))
    over = tail - (fr.speech_db - end_level_db)
    value = max(0.0, over) + (1.0 if over > 0 else 0.0)  # > 0 dB over already counts as a fail
    t1 = len(fr.db) * FRAME_S
    return Finding("truncation_signal", value, 1.0, ((max(0.0, t1 - 0.3), t1),) if value >= 1 else (),
                   f"speech runs into the end ({tail - fr.speech_db:+.0f} dB in the last {k * 10} ms)")


def clipping(audio: np.ndarray, sample_rate: int, max_fraction: float, level: float = 0.999) -> Finding:
    """Fraction of samples at full scale (|x| >= ``level``) in runs of 2+ samples (flat tops)."""
    x = np.abs(np.asarray(audio, dtype=np.float64).reshape(-1))
    hot = x >= level
    flat = hot[1:] & hot[:-1]
    frac = float(np.count_nonzero(flat)) / max(1, len(x))
    spans: tuple[tuple[float, float], ...] = ()
    if frac >= max_fraction:
        hop = max(1, int(round(FRAME_S * sample_rate)))
        frames = np.zeros(len(x) // hop + 1, dtype=bool)
        frames[np.flatnonzero(flat) // hop] = True
        spans = tuple((a * FRAME_S, b * FRAME_S) for a, b in _runs(frames))
    return Finding("clipping", frac, max_fraction, spans, f"clipping: {frac:.2%} of samples at full scale")


def dropouts(fr: Frames, min_s: float, max_s: float, edge_db: float) -> Finding:
    """Short stretches of digital silence (< -80 dBFS) inside speech, entered and left abruptly.

    Natural stop closures never reach digital silence; a vocoder fed garbage or a lost packet does.
    Value is the number of drop-outs (threshold 1).
    """
    if fr.first < 0:
        return Finding("dropouts", 0.0, 1.0)
    dead = fr.db < -80.0
    spans = []
    lo, hi = int(round(min_s / FRAME_S)), int(round(max_s / FRAME_S))
    for a, b in _runs(dead):
        if a <= fr.first or b > fr.last or not lo <= b - a <= hi:
            continue
        before = fr.db[max(0, a - 2) : a].max()
        after = fr.db[b : b + 2].max()
        if before > fr.speech_db - edge_db and after > fr.speech_db - edge_db:
            spans.append((a * FRAME_S, b * FRAME_S))
    reason = f"energy drop-outs: {len(spans)}" + (f" (first at {spans[0][0]:.2f} s)" if spans else "")
    return Finding("dropouts", float(len(spans)), 1.0, tuple(spans), reason)


def noise_bursts(fr: Frames, min_flatness: float, level_db: float, min_s: float) -> Finding:
    """Loud broadband noise: runs of frames with high spectral flatness near the speech level.

    Speech, even a fricative, concentrates energy in formants or a high band (flatness well under
    0.3 at 16 kHz); white-ish noise sits near 0.5. Value is the longest run in seconds.
    """
    if fr.first < 0:
        return Finding("noise_burst", 0.0, min_s, reason="no sound found")
    loud = fr.db > fr.speech_db - level_db
    hot = loud & (fr.flatness >= min_flatness)
    runs = _runs(hot)
    longest = max((b - a for a, b in runs), default=0) * FRAME_S
    spans = tuple((a * FRAME_S, b * FRAME_S) for a, b in runs if (b - a) * FRAME_S >= min_s)
    where = f" at {spans[0][0]:.2f} s" if spans else ""
    return Finding("noise_burst", longest, min_s, spans, f"noise burst {longest:.2f} s{where}")
