"""Synthesis jobs for the server: one worker thread, a bounded queue, sentence pieces, a time budget, cancellation.

A request's text is cut into pieces at sentence boundaries (audiopd.text.split_sentences; an over-long
sentence is cut further by chunk_text), and each piece is one call of the facade, submitted on its own
to a single worker thread. So the first sentence can be sent while the next is decoded, a request that
ran out of time or lost its client stops at the next piece, and two requests share the worker piece by
piece instead of one waiting for the other's whole text. The model and the checker's PocketSphinx
decoders are not thread-safe, hence one worker. On a CPU a masked pass costs the same per frame batched
or not (samples/measured.md: batch 8 = 8.5x batch 1), so decoding piece by piece loses nothing to batching.

Pieces are joined as audiopd.synthesis.join joins chunks (a Hann fade at each inner edge, then a pause),
so streamed audio is the same, sample for sample, as the whole response.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from audiopd.errors import NothingToSpeakError
from audiopd.synthesis.join import fade_edges
from audiopd.synthesis.timestamps import WordTime

if TYPE_CHECKING:
    from audiopd.pipeline import Synthesizer
    from audiopd.serve.request import SynthesisRequest


@dataclass(frozen=True)
class EngineConfig:
    # Requests admitted at once (the one decoding plus those waiting); one more is answered 429.
    max_queue: int = 16
    # Per-request time budget: the worker time one request may use, base + per_char x characters (the wait for the
    # worker is bounded by max_queue instead, so a busy server answers 429, not a spurious 503). The shipped voice
    # decodes a character of text in ~10-20 ms on one CPU core (README speed bench), so 0.05 s/char leaves room for
    # auto mode's checks and one escalation, while 1,000 characters of nonsense cannot hold the worker for minutes.
    budget_base_s: float = 10.0
    budget_per_char_s: float = 0.05

    def validate(self) -> None:
        if self.max_queue < 1:
            raise ValueError(f"max_queue must be >= 1, got {self.max_queue}")
        if not (self.budget_base_s > 0 and self.budget_per_char_s >= 0):
            raise ValueError("budget_base_s must be > 0 and budget_per_char_s >= 0")


class QueueFull(Exception):
    """Too many requests admitted: answer 429."""


class BudgetExhausted(Exception):
    """The request's time budget ran out before ``done`` of ``total`` pieces were spoken: answer 503."""

    def __init__(self, budget_s: float, done: int, total: int) -> None:
        super().__init__(f"the time budget of {budget_s:.1f} s ran out after {done} of {total} sentences")
        self.done, self.total = done, total


class Cancelled(Exception):
    """The client went away."""


@dataclass
class Piece:
    """One spoken piece, shaped for joining: ``audio`` starts with its pause; word times count from its start."""

    index: int
    text: str
    audio: np.ndarray
    words: list[WordTime]
    report: dict[str, Any]

    @property
    def verdict(self) -> str:
        return verdict_of(self.report)


def verdict_of(report: dict[str, Any]) -> str:
    check = report.get("check")
    return "unchecked" if check is None else "passed" if check.get("passed") else "failed"


def split_pieces(text: str, max_chars: int) -> list[str]:
    from audiopd.text import chunk_text, split_sentences

    pieces = [c for s in split_sentences(text) for c in chunk_text(s, max_chars)]
    return pieces or [text]  # nothing but spaces: the facade says why it cannot speak it


@dataclass
class Job:
    """One admitted request: its pieces, budget, worker time used, and cancel flag (set when the client goes away)."""

    req: SynthesisRequest
    pieces: list[str]
    seed: int
    budget_s: float
    arrived: float = field(default_factory=time.perf_counter)
    cancel: threading.Event = field(default_factory=threading.Event)
    used_s: float = 0.0  # worker time spent on this request's pieces so far


class Engine:
    """The Synthesizer behind one worker thread, with admission control and per-piece scheduling."""

    def __init__(self, synth: Synthesizer, config: EngineConfig | None = None, *, speaker: str | None = None,
                 metrics: Any = None) -> None:
        self.synth = synth
        self.config = config or EngineConfig()
        self.config.validate()
        self.speaker = speaker
        self.metrics = metrics
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audiopd-synth")
        self._lock = threading.Lock()
        self.admitted = 0

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------------------------ admission
    def budget_for(self, text: str) -> float:
        return self.config.budget_base_s + self.config.budget_per_char_s * len(text)

    def admit(self, req: SynthesisRequest, budget_s: float | None = None) -> Job:
        """A Job for ``req``, or QueueFull; call ``release`` when the response is done."""
        with self._lock:
            if self.admitted >= self.config.max_queue:
                raise QueueFull(f"the server is busy ({self.admitted} requests queued); retry later")
            self.admitted += 1
        self._gauge()
        pieces = split_pieces(req.text, self.synth.config.max_chunk_chars)
        seed = secrets.randbelow(2**31) if req.seed is None else req.seed
        return Job(req=req, pieces=pieces, seed=seed, budget_s=budget_s or self.budget_for(req.text))

    def release(self, job: Job) -> None:
        job.cancel.set()  # pieces of this job still queued in the worker are skipped
        with self._lock:
            self.admitted -= 1
        self._gauge()

    def _gauge(self) -> None:
        if self.metrics is not None:
            self.metrics.queue.set(self.admitted)

    # ------------------------------------------------------------------------------------ synthesis
    async def pieces(self, job: Job) -> AsyncIterator[Piece]:
        """Speak the job's pieces in order; raises BudgetExhausted / Cancelled between pieces."""
        first_error: NothingToSpeakError | None = None
        spoken = 0
        for i in range(len(job.pieces)):
            if job.cancel.is_set():
                raise Cancelled()
            fut = self._executor.submit(self._speak, job, i, spoken)
            try:
                piece = await asyncio.wrap_future(fut)
            except NothingToSpeakError as exc:  # e.g. a lone "***" between sentences
                first_error = first_error or exc
                continue
            spoken += 1
            yield piece
        if not spoken:
            raise first_error or NothingToSpeakError("text contains no speakable words")

    def _speak(self, job: Job, index: int, spoken: int) -> Piece:
        """Worker thread: one piece through the facade, unless the job was cancelled or is out of time."""
        if job.cancel.is_set():
            raise Cancelled()
        left = job.budget_s - job.used_s
        if left <= 0:
            raise BudgetExhausted(job.budget_s, index, len(job.pieces))
        req = job.req
        t0 = time.perf_counter()
        try:
            # The facade's deadline stops auto mode's escalation when the next stage would overrun the budget.
            result = self.synth.synthesize(job.pieces[index], voice=req.voice or self.speaker, mode=req.mode,
                                           steps=req.steps, seed=job.seed, speed=req.speed, time_budget_s=left,
                                           check_level=req.check_level)
        finally:
            job.used_s += time.perf_counter() - t0
        audio, offset = self._shape(result.audio, result.sample_rate, first=spoken == 0,
                                    last=index == len(job.pieces) - 1)
        words = [WordTime(w.word, w.start_s + offset, w.end_s + offset) for w in result.words]
        piece = Piece(index, job.pieces[index], audio, words, result.report)
        if self.metrics is not None:
            self.metrics.observe_piece(piece, time.perf_counter() - t0, result.sample_rate)
        return piece

    def _shape(self, audio: np.ndarray, sample_rate: int, *, first: bool, last: bool) -> tuple[np.ndarray, float]:
        """Fades and leading pause as join_chunks applies them; -> (audio, seconds before the speech)."""
        cfg = self.synth.config.join
        part = np.asarray(audio, dtype=np.float32).reshape(-1).copy()
        fade_edges(part, int(round(cfg.fade_s * sample_rate)), fade_in=not first, fade_out=not last)
        if first:
            return part, 0.0
        pause = int(round(cfg.pause_s * sample_rate))
        return np.concatenate([np.zeros(pause, np.float32), part]), pause / sample_rate


# ---------------------------------------------------------------------------------------- whole texts
def merge(pieces: list[Piece], *, job: Job, sample_rate: int, wall_s: float) -> tuple[np.ndarray, list[WordTime],
                                                                                         dict[str, Any]]:
    """Pieces -> (audio, word times, one report for the text) as the facade reports a multi-chunk text."""
    audio = np.concatenate([p.audio for p in pieces]) if pieces else np.zeros(0, np.float32)
    words: list[WordTime] = []
    pos = 0.0
    for p in pieces:
        words += [WordTime(w.word, w.start_s + pos, w.end_s + pos) for w in p.words]
        pos += p.audio.size / sample_rate
    reports = [p.report for p in pieces]
    first = reports[0]
    modes = {r["mode"] for r in reports}
    paths = {r["first_path"] for r in reports}
    checks = [r.get("check") for r in reports]
    check = None
    if checks and all(c is not None for c in checks):
        check = checks[0] if len(checks) == 1 else {
            "passed": all(c["passed"] for c in checks), "score": min(c["score"] for c in checks),
            "reasons": [f"sentence {k}: {r}" for k, c in enumerate(checks) for r in c["reasons"]]}
    report = {
        "voice": first["voice"], "seed": job.seed, "requested_mode": job.req.mode, "speed": job.req.speed,
        "mode": modes.pop() if len(modes) == 1 else "mixed",
        "first_path": paths.pop() if len(paths) == 1 else "mixed",
        "steps": max(r["steps"] for r in reports), "forward_passes": sum(r["forward_passes"] for r in reports),
        "audio_seconds": round(audio.size / sample_rate, 4), "wall_seconds": round(wall_s, 4),
        "chunks": len(pieces), "time_budget_s": round(job.budget_s, 3),
        "budget_exhausted": any(r.get("budget_exhausted") for r in reports),
        "checker": first.get("checker"), "codec": first.get("codec"), "decoder": first.get("decoder"),
        "warnings": sorted({w for r in reports for w in r.get("warnings", [])}),
        "check": check, "attempts": [{**a, "chunk": k} for k, r in enumerate(reports) for a in r["attempts"]],
    }
    return audio, words, report
