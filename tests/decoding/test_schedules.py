"""Cosine mask schedule and temperature annealing."""

from __future__ import annotations

import math

import pytest

from audiopd.decoding.schedules import annealed_temperature, cosine_counts, mask_ratio, masked_after_step


@pytest.mark.parametrize("steps, n", [(1, 10), (4, 100), (16, 400), (16, 5), (8, 0), (12, 37)])
def test_boundaries_and_monotone(steps: int, n: int) -> None:
    assert masked_after_step(0, steps, n) == n
    counts = cosine_counts(steps, n)
    assert counts[-1] == 0
    seq = [n] + counts
    assert all(a >= b for a, b in zip(seq, seq[1:]))
    # Progress: each step commits at least one token while any remain.
    assert all(a > b for a, b in zip(seq, seq[1:]) if a > 0)


def test_follows_cosine() -> None:
    n, steps = 1000, 10
    for k in range(1, steps):
        expected = math.floor(n * math.cos(math.pi / 2 * k / steps))
        assert masked_after_step(k, steps, n) == min(expected, n - k)
    # Cosine commits few tokens early and many late.
    counts = [n] + cosine_counts(steps, n)
    commits = [a - b for a, b in zip(counts, counts[1:])]
    assert commits[0] < commits[-2]


def test_mask_ratio() -> None:
    assert mask_ratio(0.0) == 1.0
    assert mask_ratio(1.0) == pytest.approx(0.0)
    assert mask_ratio(0.5) == pytest.approx(math.sqrt(0.5))
    with pytest.raises(ValueError):
        mask_ratio(1.5)


@pytest.mark.parametrize("k, steps, n", [(0, 0, 5), (5, 4, 5), (-1, 4, 5), (1, 4, -1)])
def test_rejects_bad_arguments(k: int, steps: int, n: int) -> None:
    with pytest.raises(ValueError):
        masked_after_step(k, steps, n)


def test_annealed_temperature() -> None:
    assert annealed_temperature(1, 5, 1.0, 0.2) == pytest.approx(1.0)
    assert annealed_temperature(5, 5, 1.0, 0.2) == pytest.approx(0.2)
    assert annealed_temperature(3, 5, 1.0, 0.2) == pytest.approx(0.6)
    assert annealed_temperature(1, 1, 0.7, 0.0) == 0.7
