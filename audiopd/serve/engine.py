"""Synthesis jobs for the server: one worker thread, admission by expected time, sentence pieces, cancellation.

A request's text is cut into pieces at sentence boundaries (audiopd.text.split_sentences; an over-long
sentence is cut further by chunk_text), and each piece is one call of the facade on a single worker
thread, so the first sentence can be sent while the next is decoded and a request that ran out of time
or lost its client stops at the next piece. The model and the checker's PocketSphinx decoders are not
thread-safe, hence one worker. On a CPU a masked pass costs the same per frame batched or not
(samples/measured.md: batch 8 = 8.5x batch 1), so decoding piece by piece loses nothing to batching.

Admission (audiopd.serve.admission): a request is admitted only if the work queued ahead of it plus its
own expected work fits its time budget, else it is refused at once (429, Retry-After). Its pieces are
queued at admission, so requests are served in arrival order: the estimate of the work ahead then stays
true, where sharing the worker piece by piece would let every newcomer push the requests admitted
before it past their budgets. The budget counts from arrival, waiting included.

Pieces are joined as audiopd.synthesis.join joins chunks (a Hann fade at each inner edge, then a pause),
so streamed audio is the same, sample for sample, as the whole response.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from audiopd.errors import NothingToSpeakError
from audiopd.serve.admission import Busy, CostConfig, CostEstimator, check_fits, cost_key, retry_after
from audiopd.synthesis.join import fade_edges
from audiopd.synthesis.timestamps import WordTime

if TYPE_CHECKING:
    from audiopd.pipeline import Synthesizer
    from audiopd.serve.request import SynthesisRequest


@dataclass(frozen=True)
class EngineConfig:
    # Requests admitted at once (decoding, waiting, or streaming out); one more is answered 429 whatever its cost.
    max_queue: int = 16
    # Per-request time budget, from arrival to the last sentence: base + per_char x characters. A request that could
    # not finish within it behind the work queued ahead is refused at once (429); an admitted one that runs out
    # anyway gets 503 or a stream cut after the sentences sent. The shipped voice decodes a character in ~3-4 ms
    # (RTF ~0.06, one thread, busy machine), auto mode's nonsense words a few times that, so 10 s + 0.05 s/char
    # leaves room for a queue of ordinary requests and one escalation, while 1,000 characters of nonsense cannot
    # hold the worker for minutes.
    budget_base_s: float = 10.0
    budget_per_char_s: float = 0.05
    cost: CostConfig = field(default_factory=CostConfig)  # the priors of the cost estimates

    def validate(self) -> None:
        if isinstance(self.max_queue, bool) or not isinstance(self.max_queue, int) or self.max_queue < 1:
            raise ValueError(f"max_queue must be an integer >= 1, got {self.max_queue!r}")
        if not (self.budget_base_s > 0 and self.budget_per_char_s >= 0):
            raise ValueError("budget_base_s must be > 0 and budget_per_char_s >= 0")
        if not isinstance(self.cost, CostConfig):
            raise ValueError(f"cost must be a CostConfig, got {type(self.cost).__name__}")
        self.cost.validate()


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


def spoken_length(text: str) -> int:
    """Characters of ``text``'s spoken form, what its audio length follows: "7" * 200 is 1,199 ("seven seven ..."),
    and measured by the raw length the load test's 200 digits were estimated at a fifth of their cost. ~1 ms per
    500 characters (25 ms for 5,000 digits), on the event loop: cheaper than a refusal that comes late."""
    from audiopd.text import normalize_text

    try:
        return len(normalize_text(text))
    except Exception:  # noqa: BLE001 (the facade reports unspeakable text; an estimate just falls back)
        return len(text)


def split_pieces(text: str, max_chars: int) -> list[str]:
    """Sentences, cut further where longer than ``max_chars``, counted in raw and in spoken characters.

    Spoken, because that is what the audio follows: 200 digits are one 200-character chunk but 1,199 characters
    ("seven seven ..."), a minute of audio that no budget could stop halfway; cut by their spoken length they
    are five pieces of ~14 s, and the budget can end the request between them."""
    from audiopd.text import chunk_text, split_sentences

    def fit(chunk: str, depth: int = 0) -> list[str]:
        spoken = spoken_length(chunk)
        if spoken <= max_chars or len(chunk) < 2 or depth > 3:
            return [chunk]
        # The raw limit that makes the spoken length fit, 10% under: chunk_text balances, and may round up.
        limit = max(1, min(len(chunk) - 1, max_chars * len(chunk) * 9 // (10 * spoken)))
        return [p for c in chunk_text(chunk, limit) for p in fit(c, depth + 1)]

    pieces = [p for s in split_sentences(text) for c in chunk_text(s, max_chars) for p in fit(c)]
    return pieces or [text]  # nothing but spaces: the facade says why it cannot speak it


@dataclass(eq=False)  # compared by identity: the engine finds its jobs in a list
class Job:
    """One admitted request: its pieces and their expected costs, its budget, its progress and cancel flag.

    ``finished``, ``running_since``, ``spoken`` and ``used_s`` are written by the worker thread only (under the
    engine's lock where admission reads them)."""

    req: SynthesisRequest
    pieces: list[str]
    seed: int
    spoken_chars: list[int]  # characters of each piece's spoken form (what the cost estimates count)
    budget_s: float
    expected_s: list[float] = field(default_factory=list)  # expected worker seconds of each piece
    arrived: float = field(default_factory=time.perf_counter)
    cancel: threading.Event = field(default_factory=threading.Event)
    futures: list[Future] = field(default_factory=list)
    finished: int = 0  # pieces done, failed or skipped
    running_since: float | None = None  # when the piece now on the worker started
    expired: bool = False  # the deadline passed before the worker took the next piece: it must not start it
    spoken: int = 0  # pieces spoken so far (the first gets no leading pause)
    used_s: float = 0.0  # worker time spent on this request's pieces so far

    @property
    def deadline(self) -> float:
        return self.arrived + self.budget_s

    def remaining_s(self, now: float) -> float:
        """Expected worker seconds still to come; the piece on the worker counts what is left of its estimate."""
        left = sum(self.expected_s[self.finished:])
        if self.running_since is not None and self.finished < len(self.expected_s):
            left -= min(now - self.running_since, self.expected_s[self.finished])
        return max(left, 0.0)


class Engine:
    """The Synthesizer behind one worker thread, with admission control and per-piece scheduling."""

    def __init__(self, synth: Synthesizer, config: EngineConfig | None = None, *, speaker: str | None = None,
                 metrics: Any = None) -> None:
        self.synth = synth
        self.config = config or EngineConfig()
        self.config.validate()
        self.speaker = speaker
        self.metrics = metrics
        self.costs = CostEstimator(self.config.cost)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audiopd-synth")
        self._lock = threading.Lock()
        self._jobs: list[Job] = []  # admitted and not yet released, in arrival order
        if metrics is not None:
            metrics.queued_work.set_function(self.queued_work_s)

    @property
    def admitted(self) -> int:
        return len(self._jobs)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------------------------ admission
    def budget_for(self, text: str) -> float:
        return self.config.budget_base_s + self.config.budget_per_char_s * len(text)

    def yield_time(self, job: Job, index: int) -> float | None:
        """The ``time.perf_counter()`` time by which piece ``index`` of ``job`` (on the worker now) must end so that
        every piece queued behind it, at the cost admission expected, still ends within its request's deadline;
        None when nothing is queued behind.

        Auto mode reads it before each escalation stage (``Synthesizer.synthesize(escalate_until=)``): a request
        admitted behind one that fails its check was promised its budget on the expected cost of the work ahead,
        and a ladder of repair, more steps and serial that may spend seconds would break that promise. In the load
        test of 2026-12-07 (8 clients, auto mode) 3 admitted short texts ran out of their budgets behind escalating
        requests; an escalation now yields to them."""
        latest, queued = None, 0.0
        with self._lock:
            behind = [(job, k) for k in range(index + 1, len(job.pieces))]
            if job in self._jobs:
                behind += [(j, k) for j in self._jobs[self._jobs.index(job) + 1:]
                           for k in range(j.finished, len(j.pieces))]
            for j, k in behind:
                if j.cancel.is_set() or j.expired:  # skipped by the worker at no cost
                    continue
                queued += j.expected_s[k]
                end = j.deadline - queued
                latest = end if latest is None else min(latest, end)
        return latest

    def queued_work_s(self) -> float:
        """Expected worker seconds of every admitted request's pieces not yet done."""
        now = time.perf_counter()
        with self._lock:
            return sum(j.remaining_s(now) for j in self._jobs)

    def admit(self, req: SynthesisRequest, budget_s: float | None = None) -> Job:
        """A Job for ``req``, its pieces queued on the worker; or Busy at once. Call ``release`` when done."""
        pieces = split_pieces(req.text, self.synth.config.max_chunk_chars)
        key = cost_key(req.mode, req.check_level)
        spoken = [spoken_length(p) for p in pieces]
        expected = [self.costs.piece_s(key, n, req.speed) for n in spoken]
        seed = secrets.randbelow(2**31) if req.seed is None else req.seed
        job = Job(req=req, pieces=pieces, seed=seed, spoken_chars=spoken,
                  budget_s=budget_s or self.budget_for(req.text), expected_s=expected)
        with self._lock:
            now = time.perf_counter()
            remaining = [j.remaining_s(now) for j in self._jobs]
            ahead = sum(remaining)
            if len(self._jobs) >= self.config.max_queue:
                # Room comes when an admitted request is released: at the earliest, once the first finishes.
                raise Busy(f"the server is busy ({len(self._jobs)} requests queued); retry later",
                           retry_after(min(r for r in remaining if r > 0) if ahead > 0 else 1), "queue_full")
            idle = all(j.finished >= len(j.pieces) for j in self._jobs)
            wait = check_fits(ahead_s=ahead, own_s=sum(expected), budget_s=job.budget_s, idle=idle)
            if wait is not None:
                raise Busy(f"the server is busy: {ahead:.1f} s of work queued ahead plus this request's "
                           f"{sum(expected):.1f} s would overrun its time budget of {job.budget_s:.1f} s; "
                           f"retry in {retry_after(wait)} s", retry_after(wait), "busy")
            self._jobs.append(job)
            # Queued under the lock, so the worker takes requests in the order they were admitted.
            job.futures = [self._executor.submit(self._speak, job, i) for i in range(len(pieces))]
        self._gauge()
        return job

    def release(self, job: Job) -> None:
        job.cancel.set()  # pieces of this job still queued in the worker are skipped
        with self._lock:
            if job in self._jobs:
                self._jobs.remove(job)
        self._gauge()

    def _gauge(self) -> None:
        if self.metrics is not None:
            self.metrics.queue.set(self.admitted)

    # ------------------------------------------------------------------------------------ synthesis
    async def pieces(self, job: Job) -> AsyncIterator[Piece]:
        """The job's pieces in order as the worker speaks them; raises BudgetExhausted / Cancelled."""
        first_error: NothingToSpeakError | None = None
        spoken = 0
        for index, fut in enumerate(job.futures):
            if job.cancel.is_set():
                raise Cancelled()
            try:
                piece = await self._in_time(job, index, asyncio.wrap_future(fut))
            except NothingToSpeakError as exc:  # e.g. a lone "***" between sentences
                first_error = first_error or exc
                continue
            spoken += 1
            yield piece
        if not spoken:
            raise first_error or NothingToSpeakError("text contains no speakable words")

    async def _in_time(self, job: Job, index: int, piece: asyncio.Future) -> Piece:
        """``piece``'s result; BudgetExhausted at the deadline if the worker has not started it by then.

        A request waiting behind work that ran longer than its estimate is told so when its budget ends, not
        whenever its turn comes. A piece already on the worker is awaited: it cannot be stopped halfway."""
        done, _ = await asyncio.wait({piece}, timeout=max(job.deadline - time.perf_counter(), 0.0))
        if not done:
            with self._lock:
                started = job.running_since is not None or job.finished > index
                job.expired = job.expired or not started
            if not started:
                piece.cancel()
                raise BudgetExhausted(job.budget_s, index, len(job.pieces))
        return await piece

    def _speak(self, job: Job, index: int) -> Piece:
        """Worker thread: one piece through the facade, unless the job was cancelled or is out of time."""
        t0 = time.perf_counter()
        with self._lock:
            job.running_since = t0
            expired = job.expired
        try:
            if job.cancel.is_set():
                raise Cancelled()
            left = job.deadline - t0
            if left <= 0 or expired:
                raise BudgetExhausted(job.budget_s, index, len(job.pieces))
            return self._speak_piece(job, index, left)
        finally:
            with self._lock:
                job.finished, job.running_since = index + 1, None

    def _speak_piece(self, job: Job, index: int, left: float) -> Piece:
        req = job.req
        t0 = time.perf_counter()
        try:
            # The facade's deadline stops auto mode's escalation when the next stage would overrun the budget, and
            # escalate_until when it would push the requests queued behind past theirs.
            result = self.synth.synthesize(job.pieces[index], voice=req.voice or self.speaker, mode=req.mode,
                                           steps=req.steps, seed=job.seed, speed=req.speed, time_budget_s=left,
                                           check_level=req.check_level, lexicon=req.lexicon,
                                           escalate_until=lambda: self.yield_time(job, index))
        finally:
            job.used_s += time.perf_counter() - t0
        worker_s = time.perf_counter() - t0
        self.costs.observe(cost_key(req.mode, req.check_level), job.spoken_chars[index], req.speed,
                           result.audio.size / result.sample_rate, worker_s)
        audio, offset = self._shape(result.audio, result.sample_rate, first=job.spoken == 0,
                                    last=index == len(job.pieces) - 1)
        job.spoken += 1
        words = [WordTime(w.word, w.start_s + offset, w.end_s + offset) for w in result.words]
        piece = Piece(index, job.pieces[index], audio, words, result.report)
        if self.metrics is not None:
            self.metrics.observe_piece(piece, worker_s, result.sample_rate)
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
        "escalation_yielded": any(r.get("escalation_yielded") for r in reports),
        "checker": first.get("checker"), "codec": first.get("codec"), "decoder": first.get("decoder"),
        "lexicon": first.get("lexicon"),
        "warnings": sorted({w for r in reports for w in r.get("warnings", [])}),
        "check": check, "attempts": [{**a, "chunk": k} for k, r in enumerate(reports) for a in r["attempts"]],
    }
    return audio, words, report
