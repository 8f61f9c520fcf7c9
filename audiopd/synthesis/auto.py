"""Decode, check, escalate: the attempt ladder behind ``mode="auto"`` (and the single-stage modes).

Parallel decoding is fast but can fail in ways a serial decoder rarely does (ParallelBench: a
decoder that cannot adapt its effort to the difficulty loses quality). So auto mode spends little
first and more only where the checker finds a problem:

1. parallel with a small step budget K (``first_steps``; the decoder may stop earlier, adaptive K);
2. span repair: re-mask and re-predict only the frames the checker flagged (``Verdict.bad_spans``,
   widened by ``repair_margin_s``) through the decoder's ``span`` argument, keeping every other
   token (MaskGCT/SoundStorm decoding conditions on the kept tokens, so the context helps);
3. a full parallel decode with more steps (``escalate_steps``; SoundStorm uses 16 for level 0);
4. the serial (autoregressive) fallback.

Every attempt is checked and recorded; each item gets the best attempt (a passing one, else the
highest verdict score), and an item that never passed is delivered with its failing verdict, never
silently. When the cost model (``audiopd.synthesis.cost``) says serial is cheaper for the workload (big
batches on a CPU), the ladder starts with serial and escalates to parallel repair / more steps.
An optional deadline stops escalation when the next stage's predicted cost would overrun it.

Only failing items take part in later stages; they are decoded together as a smaller batch.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from audiopd import timing
from audiopd.decoding.parallel import ParallelConfig, decode_parallel
from audiopd.decoding.refine import fine_level_groups
from audiopd.decoding.serial import SerialConfig, decode_serial
from audiopd.model.encoder import FrameCondition
from audiopd.synthesis.config import AutoConfig
from audiopd.synthesis.blas import one_blas_thread
from audiopd.synthesis.cost import CostModel, choose_path, estimate_parallel_s, estimate_serial_s
from audiopd.synthesis.items import (  # noqa: F401  (the torch-free pieces of the ladder, re-exported from here)
    FULL,
    MODES,
    PARALLEL,
    PEAK_LIMIT,
    REPAIR,
    SERIAL,
    Attempt,
    Checker,
    GroupOutcome,
    Item,
    Stage,
    check_audio,
    fit_audio,
    seed_for,
    span_frames,
)

def plan_stages(mode: str, first_path: str, *, steps: int | None, auto: AutoConfig, parallel_steps: int,
                checking: bool) -> list[Stage]:
    """The attempt ladder for a request. Pure: ``mode`` as asked, ``first_path`` from the cost model."""
    if mode == PARALLEL:
        return [Stage(PARALLEL, FULL, steps or parallel_steps)]
    if mode == SERIAL:
        return [Stage(SERIAL, FULL, None)]
    if mode != "auto":
        raise ValueError(f"unknown mode {mode!r}")
    k0 = steps or auto.first_steps
    k1 = max(auto.escalate_steps, k0)
    if first_path == SERIAL:
        stages = [Stage(SERIAL, FULL, None)]
        if auto.repair:
            stages.append(Stage(PARALLEL, REPAIR, k0))
        stages.append(Stage(PARALLEL, FULL, k1))
    else:
        stages = [Stage(PARALLEL, FULL, k0)]
        if auto.repair:
            stages.append(Stage(PARALLEL, REPAIR, k0))
        stages.append(Stage(PARALLEL, FULL, k1))
        if auto.serial_fallback:
            stages.append(Stage(SERIAL, FULL, None))
    return stages if checking else stages[:1]


def select(cond: FrameCondition, rows: Sequence[int]) -> FrameCondition:
    """The condition of a subset of items, trimmed to their longest length (same tensors, no re-encoding)."""
    idx = torch.as_tensor(list(rows), dtype=torch.long)
    lengths = cond.lengths.index_select(0, idx)
    t = int(lengths.max()) if len(rows) else 0
    return FrameCondition(frames=cond.frames.index_select(0, idx)[:, :t],
                          frame_mask=cond.frame_mask.index_select(0, idx)[:, :t],
                          durations=cond.durations.index_select(0, idx), lengths=lengths)


class Renderer:
    """Runs the ladder for a group of items with one model, codec, checker and cost model."""

    def __init__(self, model, codec, *, parallel: ParallelConfig, serial: SerialConfig, auto: AutoConfig,
                 cost: CostModel, checker: Checker | None, codec_for: Callable[[int], Any] | None = None,
                 first_run: int = 0) -> None:
        self.model, self.codec = model, codec
        # Speaker -> the codec view that decodes its tokens (``Synthesizer.codec_for``: the voice's mel refiner and
        # blur for that speaker); None = ``codec`` for all.
        self.codec_for = codec_for
        self.parallel, self.serial, self.auto, self.cost = parallel, serial, auto, cost
        self.checker = checker
        self.frame_rate = float(codec.frame_rate)
        self.sample_rate = int(codec.sample_rate)
        self._runs = first_run  # run ids already taken by attempts made elsewhere (see ``render_group(resume=)``)
        # Measured checker cost (seconds per second of audio checked): on a CPU the checker's
        # alignment + ASR can cost more than decoding, so deadlines must count it.
        self._check_s = 0.0
        self._checked_audio_s = 0.0

    def fine_passes(self, mode: str = PARALLEL) -> int:
        """Fine-level passes of the ``mode`` decoder (each decoder has its own setting)."""
        cfg = self.serial if mode == SERIAL else self.parallel
        return len(fine_level_groups(self.model.num_codebooks, cfg.fine_passes))

    def estimate_s(self, stage: Stage, frames: int, batch: int, audio_s: float = 0.0) -> float:
        """Predicted seconds for a stage: decoding (cost model) + checking ``audio_s`` seconds of audio."""
        if stage.mode == SERIAL:
            decode = estimate_serial_s(self.cost, frames, batch, self.fine_passes(SERIAL))
        else:
            decode = estimate_parallel_s(self.cost, frames, batch, stage.steps or 1, self.fine_passes())
        per_audio_s = self._check_s / self._checked_audio_s if self._checked_audio_s > 0 else 0.0
        return decode + per_audio_s * audio_s

    def render_group(self, items: list[Item], cond: FrameCondition, *, mode: str, steps: int | None, seed: int,
                     group: int, checking: bool, deadline: float | None, floor_share: float = 1.0,
                     resume: bool = False, escalate_until: Callable[[], float | None] | None = None) -> GroupOutcome:
        """Decode, check and escalate one batch of items. ``floor_share``: this group's share of the request's
        audio, so that the groups of one request share one ``escalation_floor_s`` instead of taking one each.
        ``resume``: the items already hold the first parallel attempt, checked (the NumPy runtime's,
        ``audiopd.lite``), so the ladder goes on from its second stage and repairs those tokens.
        ``escalate_until``: read before each escalation stage, the ``time.perf_counter()`` time by which that stage
        must end (None: no limit), for a caller whose other work moves while this group decodes (the server's
        requests queued behind this one, ``audiopd.serve.engine``)."""
        for i, it in enumerate(items):
            it.durations = cond.durations[i, : len(it.ids)].cpu().numpy().astype(np.int64)
        first = mode
        if resume:
            if mode != "auto" or not checking or any(not it.attempts or it.attempts[-1].verdict is None
                                                     for it in items):
                raise ValueError("resume needs auto mode, a checker and a checked first attempt on every item")
            first = PARALLEL
        elif mode == "auto":
            first = choose_path(self.cost, cond.num_frames, cond.batch, steps or self.auto.first_steps,
                                self.fine_passes(), self.fine_passes(SERIAL))
        stages = plan_stages(mode, first, steps=steps, auto=self.auto, parallel_steps=self.parallel.steps,
                             checking=checking)
        runs: dict[int, int] = {}
        exhausted = yielded = False
        t_first = time.perf_counter()
        for s, stage in enumerate(stages):
            if resume and s == 0:
                spent = sum(it.attempts[-1].seconds for it in items)
                deadline = self._escalation_deadline(spent, floor_share, deadline)
                continue
            rows = list(range(len(items)))
            if s > 0:
                rows = [i for i in rows if items[i].best().passed is False]
                if stage.kind == REPAIR:
                    rows = [i for i in rows if items[i].attempts[-1].verdict["bad_spans"]]
                if not rows:
                    continue
                frames = max(items[i].frames for i in rows)
                audio_s = sum(items[i].frames for i in rows) / self.frame_rate
                ends = time.perf_counter() + self.estimate_s(stage, frames, len(rows), audio_s)
                if deadline is not None and ends > deadline:
                    exhausted = True
                    break
                limit = escalate_until() if escalate_until is not None else None
                if limit is not None and ends > limit:
                    exhausted = yielded = True
                    break
            run, passes = self._run_stage(stage, items, rows, cond, seed=seed_for(seed, group, s), checking=checking)
            runs[run] = passes
            if s == 0:
                deadline = self._escalation_deadline(time.perf_counter() - t_first, floor_share, deadline)
        return GroupOutcome(first_path=first, stages=stages, budget_exhausted=exhausted, runs=runs, yielded=yielded)

    def _escalation_deadline(self, spent: float, floor_share: float, deadline: float | None) -> float | None:
        """Measured, not predicted: the first attempt's wall time ``spent`` prices this group's escalation."""
        if self.auto.escalation_budget is None:
            return deadline
        floor = self.auto.escalation_floor_s * floor_share
        own = time.perf_counter() + max(self.auto.escalation_budget * spent, floor)
        return own if deadline is None else min(deadline, own)

    def _run_stage(self, stage: Stage, items: list[Item], rows: list[int], cond: FrameCondition, *, seed: int,
                   checking: bool) -> tuple[int, int]:
        sub = select(cond, rows)
        gen = torch.Generator().manual_seed(seed)
        repaired: list[list[tuple[float, float]]] = [[] for _ in rows]
        t0 = time.perf_counter()
        if stage.mode == SERIAL:
            res = decode_serial(self.model, sub, self.serial, generator=gen)
        elif stage.kind == FULL:
            res = decode_parallel(self.model, sub, dataclasses.replace(self.parallel, steps=stage.steps),
                                  generator=gen)
        else:
            q, t = self.model.num_codebooks, sub.num_frames
            codes = torch.zeros(len(rows), q, t, dtype=torch.long)
            conf = torch.ones(len(rows), t)
            span = torch.zeros(len(rows), t, dtype=torch.bool)
            for j, i in enumerate(rows):
                last = items[i].attempts[-1]
                n = last.codes.shape[1]
                # torch.as_tensor: a first attempt of the NumPy runtime holds NumPy arrays (``resume``)
                codes[j, :, :n], conf[j, :n] = torch.as_tensor(last.codes), torch.as_tensor(last.confidence)
                repaired[j] = list(last.verdict["bad_spans"])
                span[j, :n] = torch.from_numpy(span_frames(repaired[j], self.frame_rate, n, self.auto.repair_margin_s))
            res = decode_parallel(self.model, sub, dataclasses.replace(self.parallel, steps=stage.steps),
                                  generator=gen, codes=codes, span=span, confidence=conf)
        decode_s = time.perf_counter() - t0
        run = self._runs
        self._runs += 1
        level0 = res.stats.steps_per_level[0] if res.stats.steps_per_level else 0
        all_codes = [res.codes[j, :, : items[i].frames].clone() for j, i in enumerate(rows)]
        with timing.span(timing.CODEC):  # the codec's own parts record inside it (audiopd.timing)
            decoded = self.to_audios(all_codes, [items[i].speaker for i in rows])
        for j, i in enumerate(rows):
            t1 = time.perf_counter()
            it = items[i]
            n = it.frames
            codes_i, conf_i = all_codes[j], res.confidence[j, :n].clone()
            audio, codec_s = decoded[j]
            verdict = None
            if checking:
                t2 = time.perf_counter()
                # One BLAS thread: torch's threads are still spinning from the decode (synthesis/blas.py says why).
                with timing.span(timing.CHECKER), one_blas_thread():
                    verdict = self.check(audio, it, codes_i, conf_i)
                self._check_s += time.perf_counter() - t2
                self._checked_audio_s += n / self.frame_rate
            it.attempts.append(Attempt(mode=stage.mode, kind=stage.kind, max_steps=stage.steps, steps=level0,
                                       forward_passes=res.stats.forward_passes,
                                       seconds=decode_s + codec_s + time.perf_counter() - t1, run=run, codes=codes_i,
                                       confidence=conf_i, audio=audio, verdict=verdict,
                                       repaired_spans=repaired[j]))
        return run, res.stats.forward_passes

    def to_audios(self, codes: Sequence[torch.Tensor],
                  speakers: Sequence[int] | None = None) -> list[tuple[np.ndarray, float]]:
        """``to_audio`` of several items (of ``speakers``, each decoded by its codec view), each with its own decode
        seconds, in the order given.

        A codec that allows it (``Codec.concurrent_decode``) decodes them side by side on up to torch's thread
        count: token decoding has just finished, so those cores are free (a --threads 1 user keeps one core).
        """
        spk = list(speakers) if speakers is not None else [None] * len(codes)

        def one(c: torch.Tensor, speaker: int | None, parts: int = 1) -> tuple[np.ndarray, float]:
            t0 = time.perf_counter()
            audio = self.to_audio(c, parts, speaker=speaker)
            return audio, time.perf_counter() - t0

        threads = torch.get_num_threads() if getattr(self.codec, "concurrent_decode", False) else 1
        workers = min(len(codes), threads)
        if len(codes) == 1:  # one item: the codec may split it over the cores (Codec.decode_split)
            return [one(codes[0], spk[0], threads)]
        if workers <= 1:
            return [one(c, s) for c, s in zip(codes, spk)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, codes, spk))

    def to_audio(self, codes: torch.Tensor, parts: int = 1, *, speaker: int | None = None) -> np.ndarray:
        """Codes [Q, T] -> 1-D float32 audio of exactly T frames' worth of samples (``parts`` > 1: the codec
        may split the work over that many threads, ``Codec.decode_split``), by ``speaker``'s codec view."""
        n = codes.shape[1]
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        c = codes.cpu().numpy()
        codec = self.codec if speaker is None or self.codec_for is None else self.codec_for(speaker)
        split = parts > 1 and hasattr(codec, "decode_split")
        audio = codec.decode_split(c, parts) if split else codec.decode(c[None])[0]
        return fit_audio(audio, n, self.sample_rate, self.frame_rate)

    def check(self, audio: np.ndarray, item: Item, codes: torch.Tensor, confidence: torch.Tensor) -> dict:
        if self.checker is None:
            raise RuntimeError("checking was requested without a checker")
        return check_audio(self.checker, audio, item, codes.cpu().numpy(), confidence.cpu().numpy(),
                           sample_rate=self.sample_rate, frame_rate=self.frame_rate)
