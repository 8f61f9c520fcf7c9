"""The checker's result types: per-word results and the overall ``Verdict``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class WordResult:
    """One intended word: where the aligner put it, its acoustic score, and what looked wrong.

    ``issues`` holds any of: "unaligned" (no pronunciation), "squeezed" (every phone at the
    aligner's minimum: no audio for it), "low_score" (inside a badly aligned window),
    "unheard" (the recogniser deleted it). Times are None when the alignment failed.
    """

    word: str
    index: int
    start: float | None
    end: float | None
    score: float | None  # mean acoustic log score per 10 ms frame
    issues: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"word": self.word, "index": self.index, "start": self.start, "end": self.end,
                "score": self.score, "issues": list(self.issues)}


@dataclass(frozen=True)
class Verdict:
    """Whether audio says its text cleanly.

    ``score`` is ``1 / (1 + b**2)`` for the worst check's badness ``b`` (value / threshold), so
    1.0 is flawless, 0.5 is the pass/fail line and ``passed == (score > 0.5)``. ``bad_spans`` are
    merged (start_s, end_s) stretches that failed, for span repair.
    """

    passed: bool
    score: float
    reasons: list[str] = field(default_factory=list)
    words: list[WordResult] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    bad_spans: list[tuple[float, float]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # names of the failed checks, worst first

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (non-finite metrics become None)."""

        def num(v: float) -> float | None:
            return float(v) if math.isfinite(v) else None

        return {
            "passed": bool(self.passed),
            "score": float(self.score),
            "reasons": list(self.reasons),
            "words": [w.to_dict() for w in self.words],
            "metrics": {k: num(v) for k, v in self.metrics.items()},
            "bad_spans": [[float(a), float(b)] for a, b in self.bad_spans],
            "failed": list(self.failed),
        }


def merge_spans(spans: Iterable[tuple[float, float]], duration: float, gap: float = 0.05) -> list[tuple[float, float]]:
    """Sort, clip to [0, duration] and merge spans closer than ``gap`` seconds."""
    clipped = sorted((max(0.0, a), min(duration, b)) for a, b in spans)
    out: list[tuple[float, float]] = []
    for a, b in clipped:
        if b < a:
            continue
        if out and a <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return [(round(a, 3), round(b, 3)) for a, b in out]


def score_from_badness(badness: float) -> float:
    """Map the worst badness to 0..1: 1 at 0, 0.5 at the threshold, falling towards 0 beyond."""
    if not math.isfinite(badness):
        return 0.0
    return 1.0 / (1.0 + max(0.0, badness) ** 2)
