"""Token-level checks on codec codes [Q, T]: repetition, low confidence, length vs expectation.

- Repetition (VALL-E 2, Chen et al. 2024, "repetition aware sampling"): a decoder stuck in a loop
  re-emits the same short token patterns. We count, on the coarsest level (level 0, which carries
  most of the content), the fraction of n-grams that already occurred within the previous
  ``window`` frames. Constant n-grams (one token repeated) are left out: codecs code silence as a
  run of one token, and silence is judged on the audio instead.
- Low confidence (MaskGCT/SoundStorm confidence-based decoding keeps each token's probability):
  the fraction of frames whose level-0 confidence is below a floor.
- Length ratio: the token sequence's duration over the expected duration (sum of ``durations``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from audiopd.checker.signal import Finding
from audiopd.errors import AudioInputError


def as_codes(tokens: np.ndarray | Sequence[Sequence[int]]) -> np.ndarray:
    """Codes as int64 [Q, T]; accepts [T] (one level) or [1, Q, T] (a batch of one)."""
    arr = np.asarray(tokens.detach().cpu().numpy() if hasattr(tokens, "detach") else tokens)
    if arr.ndim == 3 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise AudioInputError(f"tokens must be codes of shape [Q, T] with T > 0, got {tuple(arr.shape)}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise AudioInputError(f"tokens must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def repetition_ratio(codes: np.ndarray, n: int = 3, window: int = 50) -> tuple[float, list[int]]:
    """Fraction of non-constant level-0 n-grams seen within the previous ``window`` frames.

    Returns (ratio, start frames of the repeated n-grams). An n-gram repeats when its latest earlier occurrence
    starts no more than ``window`` frames before it and does not overlap it (a run is not a repeat). In NumPy:
    each n-gram is one integer, a stable sort by it puts every occurrence right after its latest earlier one.
    """
    total = len(codes[0]) - n + 1
    if total <= 0:
        return 0.0, []
    values, seq = np.unique(np.asarray(codes[0], dtype=np.int64), return_inverse=True)  # ids 0..base-1
    base = len(values)  # base ** n <= frames ** n: fits 64 bits up to a million frames at n = 3
    keys = np.zeros(total, dtype=np.int64)
    varied = np.zeros(total, dtype=bool)
    for m in range(n):
        keys = keys * base + seq[m: m + total]
        if m:
            varied |= seq[m: m + total] != seq[:total]
    order = np.argsort(keys, kind="stable")  # equal keys stay in frame order
    previous = np.full(total, -1, dtype=np.int64)
    same = keys[order[1:]] == keys[order[:-1]]
    previous[order[1:][same]] = order[:-1][same]
    start = np.arange(total)
    repeated = varied & (previous >= 0) & (previous + n <= start) & (start - previous <= window)
    counted = int(varied.sum())
    return (float(repeated.sum()) / counted if counted else 0.0), np.flatnonzero(repeated).tolist()


def _frame_spans(frames: Sequence[int], rate: float, length: int, merge: int = 3) -> tuple[tuple[float, float], ...]:
    """Merge frame indices (each covering ``length`` frames) into time spans."""
    spans: list[list[int]] = []
    for f in sorted(frames):
        if spans and f <= spans[-1][1] + merge:
            spans[-1][1] = max(spans[-1][1], f + length)
        else:
            spans.append([f, f + length])
    return tuple((a / rate, b / rate) for a, b in spans)


def check_repetition(codes: np.ndarray, rate: float, n: int, window_s: float, max_ratio: float) -> Finding:
    window = max(n + 1, int(round(window_s * rate)))
    ratio, rep = repetition_ratio(codes, n=n, window=window)
    spans = _frame_spans(rep, rate, n) if ratio >= max_ratio else ()
    return Finding("token_repetition", ratio, max_ratio, spans,
                   f"token repetition: {ratio:.0%} of level-0 {n}-grams repeat within {window_s:g} s")


def check_confidence(confidences: np.ndarray, rate: float, floor: float, max_fraction: float) -> Finding:
    """Fraction of frames whose (level-0) confidence is below ``floor``."""
    conf = np.asarray(confidences, dtype=np.float64)
    if conf.ndim == 2:
        conf = conf[0]
    if conf.ndim != 1 or conf.size == 0:
        raise AudioInputError(f"confidences must be [T] or [Q, T], got shape {tuple(np.shape(confidences))}")
    if not np.all(np.isfinite(conf)) or conf.min() < 0 or conf.max() > 1:
        raise AudioInputError("confidences must be probabilities in [0, 1]")
    low = conf < floor
    frac = float(np.mean(low))
    spans = _frame_spans(np.flatnonzero(low).tolist(), rate, 1) if frac >= max_fraction else ()
    return Finding("low_confidence", frac, max_fraction, spans,
                   f"low confidence: {frac:.0%} of frames below {floor:g}")


def check_length(actual_s: float, expected_s: float, max_ratio: float, name: str = "length_ratio") -> Finding:
    """Symmetric length check: value = max(a/e, e/a), so too short and too long both fail."""
    if expected_s <= 0 or actual_s <= 0:
        return Finding(name, float("inf"), max_ratio, reason=f"{name}: empty ({actual_s:.2f} s vs {expected_s:.2f} s)")
    ratio = actual_s / expected_s
    value = max(ratio, 1.0 / ratio)
    return Finding(name, value, max_ratio, reason=f"length {actual_s:.2f} s vs expected {expected_s:.2f} s "
                   f"(x{ratio:.2f})", extra={"ratio": ratio})
