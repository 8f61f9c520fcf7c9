"""A text's ``Result``: its rendered chunks joined into one signal, with word times and the report.

The facade (``audiopd.pipeline``) decodes the chunks of every text in a call together; this module turns one
text's chunks back into what the caller gets: the delivered attempt of each chunk joined with pauses
(``audiopd.synthesis.join``), word timestamps shifted to where each chunk starts, and the report that says which
mode and path delivered, what it cost and what the check found (one verdict for the whole text).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from audiopd import timing
from audiopd.synthesis.join import JoinConfig, join_chunks
from audiopd.synthesis.timestamps import WordTime, word_times

if TYPE_CHECKING:
    from audiopd.synthesis.auto import Item


@dataclass
class Result:
    """Synthesised speech: mono float32 ``audio`` at ``sample_rate``, a ``report`` and word ``words``."""

    audio: np.ndarray
    sample_rate: int
    report: dict[str, Any]
    words: list[WordTime]

    @property
    def duration_s(self) -> float:
        return self.audio.size / self.sample_rate

    def write(self, path: str | Path) -> Path:
        """Write 16-bit WAV atomically."""
        from audiopd.audio import write_audio

        return write_audio(path, self.audio, self.sample_rate)


def assemble_result(items: list[Item], outcomes: dict, meta: dict, wall: float, *, sample_rate: int,
                    frame_rate: float, join: JoinConfig) -> Result:
    """One text's ``Result`` from its rendered chunks: the delivered attempts joined, word times and the report.

    ``outcomes`` maps ``id(item)`` to its group's render outcome; ``meta`` holds the request's report fields and
    ``wall`` the whole call's wall time.
    """
    delivered = [it.best() for it in items]
    with timing.span(timing.JOINS):
        audio, starts = join_chunks([a.audio for a in delivered], sample_rate, join)
    words: list[WordTime] = []
    for it, start in zip(items, starts):
        words += word_times(it.words, it.durations, frame_rate, offset_s=start / sample_rate)
    runs: dict[int, int] = {}
    for it in items:
        runs.update(outcomes[id(it)].runs)
    attempts = [dict(chunk=k, **a.to_report()) for k, it in enumerate(items) for a in it.attempts]
    modes = {a.mode for a in delivered}
    firsts = {outcomes[id(it)].first_path for it in items}
    report = {
        **meta,
        "mode": modes.pop() if len(modes) == 1 else "mixed",
        "first_path": firsts.pop() if len(firsts) == 1 else "mixed",
        "steps": max(a.steps for a in delivered),
        "forward_passes": sum(runs.values()),
        "audio_seconds": round(audio.size / sample_rate, 4),
        "wall_seconds": round(wall, 4),
        "chunks": len(items),
        "attempts": attempts,
        "budget_exhausted": any(outcomes[id(it)].budget_exhausted for it in items),
        "escalation_yielded": any(outcomes[id(it)].yielded for it in items),
        "check": combined_check(delivered, [s / sample_rate for s in starts]),
    }
    if report["escalation_yielded"]:
        # A busy server: the next attempt would have pushed the requests queued behind past their budgets.
        report["warnings"] = [*meta["warnings"], "escalation stopped before every attempt was tried, so that "
                              "work queued behind this request ends within its time budget (escalate_until)"]
    elif report["budget_exhausted"]:
        # Said, never silent: the user learns that a later, costlier attempt was skipped.
        report["warnings"] = [*meta["warnings"], "the time budget stopped escalation before every attempt "
                              "was tried (time_budget_s, or the auto ladder's escalation_budget)"]
    return Result(audio=audio, sample_rate=sample_rate, report=report, words=words)


def combined_check(delivered: list, offsets_s: list[float]) -> dict | None:
    """One verdict for the whole text: the chunk's own if there is one chunk, else passed = all pass."""
    verdicts = [a.verdict for a in delivered]
    if any(v is None for v in verdicts):
        return None
    if len(verdicts) == 1:
        return verdicts[0]
    return {
        "passed": all(v["passed"] for v in verdicts),
        "score": min(v["score"] for v in verdicts),
        "reasons": [f"chunk {k}: {r}" for k, v in enumerate(verdicts) for r in v["reasons"]],
        "bad_spans": [(a + off, b + off) for v, off in zip(verdicts, offsets_s) for a, b in v["bad_spans"]],
        "chunks": verdicts,
    }
