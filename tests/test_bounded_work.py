"""Issue 27's bound on pathological input, end to end with the shipped voice and its real (fast) checker.

Slow tier: it times whole syntheses, so it is a measurement with a wide margin, not a unit test. The fast
tier holds the pieces: the refusal of the 3,000-letter word (tests/test_pipeline.py) and the escalation
budget and its shared floor (tests/synthesis/test_auto.py).
"""

from __future__ import annotations

import random
import time

import pytest

import audiopd

pytestmark = pytest.mark.slow


def nonsense(chars: int, seed: int = 0) -> str:
    """Words of 3-9 random letters: the frontend must spell or guess them, the voice mumbles, checks fail."""
    rng = random.Random(seed)
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))))
    return " ".join(words)[:chars].rsplit(" ", 1)[0] + "."


def test_a_thousand_characters_of_nonsense_cost_at_most_three_times_plain_parallel() -> None:
    tts = audiopd.load()
    text = nonsense(1000)
    tts.synthesize("Warm up.", mode="auto", seed=0)  # load the recogniser and the codec before timing
    walls: dict[str, list[float]] = {"parallel": [], "auto": []}
    for _ in range(2):  # interleaved, so a busy machine slows both alike
        for mode in ("parallel", "auto"):
            t0 = time.perf_counter()
            result = tts.synthesize(text, mode=mode, seed=0)
            walls[mode].append(time.perf_counter() - t0)
            assert result.audio.size > 0
    ratio = min(walls["auto"]) / min(walls["parallel"])
    assert ratio <= 3.0, f"auto took {ratio:.2f}x parallel on 1,000 characters of nonsense ({walls})"
    # Whatever the ladder did not get to is said, never silent.
    report = result.report
    assert report["check"] is not None
    if report["budget_exhausted"]:
        assert any("time budget" in w for w in report["warnings"])
