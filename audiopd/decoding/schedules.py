"""Mask schedules for iterative (MaskGIT-style) decoding.

MaskGIT (Chang et al. 2022) and SoundStorm (Borsos et al. 2023) use the cosine schedule: after step k
of K, a fraction cos(pi/2 * k/K) of the tokens is still masked. It commits few tokens early (when
context is scarce and predictions unreliable) and many late. Training samples mask ratios from the
same curve (``mask_ratio``), so decoding visits the ratios the model was trained on.
"""

from __future__ import annotations

import math


def mask_ratio(u: float) -> float:
    """Fraction masked at schedule position ``u`` in [0, 1] (1 -> all masked at u = 0)."""
    if not 0.0 <= u <= 1.0:
        raise ValueError(f"schedule position must be in [0, 1], got {u}")
    return math.cos(0.5 * math.pi * u)


def masked_after_step(k: int, steps: int, n: int) -> int:
    """Number of the ``n`` initially masked tokens still masked after step ``k`` of ``steps``.

    Monotone non-increasing in ``k``, ``n`` at k = 0 and 0 at k = steps; strictly decreasing while
    tokens remain and n >= steps, so every step commits at least one token (no wasted passes).
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if not 0 <= k <= steps:
        raise ValueError(f"step {k} outside 0..{steps}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if k == 0:
        return n
    if k == steps:
        return 0
    m = math.floor(n * mask_ratio(k / steps))
    # Guarantee progress: at most n - k still masked after k steps (one commit per step minimum),
    # and never negative.
    return max(0, min(m, n - k))


def cosine_counts(steps: int, n: int) -> list[int]:
    """Still-masked counts after each step 1..steps (convenience for tests and stats)."""
    return [masked_after_step(k, steps, n) for k in range(1, steps + 1)]


def annealed_temperature(k: int, steps: int, start: float, end: float = 0.0) -> float:
    """Linear anneal from ``start`` (step 1) to ``end`` (last step): early steps explore, late steps
    commit the most likely completions (MaskGCT anneals temperature over its steps)."""
    if steps <= 1:
        return start
    p = (k - 1) / (steps - 1)
    return start + (end - start) * p


def fine_level_groups(num_codebooks: int, fine_passes: int | None) -> list[list[int]]:
    """Split levels 1..Q-1 into ``fine_passes`` contiguous groups (None = one pass per level)."""
    levels = list(range(1, num_codebooks))
    if not levels:
        return []
    n = len(levels) if fine_passes is None else fine_passes
    if not 1 <= n <= len(levels):
        raise ValueError(f"fine_passes must be in 1..{len(levels)}, got {fine_passes}")
    size, extra = divmod(len(levels), n)  # np.array_split's split: the first `extra` groups one longer
    out, start = [], 0
    for g in range(n):
        end = start + size + (1 if g < extra else 0)
        out.append(levels[start:end])
        start = end
    return out
