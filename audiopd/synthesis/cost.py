"""A small cost model that picks the first decoding path from the workload's shape (frames x batch).

Why a model at all: on a CPU a full bidirectional pass costs about linearly in frames x batch, while
a KV-cached serial step costs about the same for any length and grows slowly with the batch. So for
one utterance K parallel passes beat T serial steps by roughly (cached step) / (K x per-frame pass
cost), whatever the length, while a batch can tip the balance to serial (a d256, full-attention model on
a 2-core CPU: serial wins at batch 8, samples/measured.md "Decoding cost"; the shipped voice, smaller and
block-local, stays faster in parallel there: samples/report.md). On a GPU a pass costs about the same for
any T and the balance moves again, which is why the figures are *measured* (``calibrate``) rather than
assumed.

Everything here except ``calibrate`` is a pure function of its arguments, so the choice is testable
and explainable: the report can say which path was predicted to cost what.

Cost terms (milliseconds):

* one full masked pass over ``batch`` items padded to ``frames``:
  ``pass_fixed_ms + pass_ms_per_frame * frames * batch``;
* one serial (KV-cached) level-0 step for ``batch`` items:
  ``step_fixed_ms + step_ms_per_item * batch``; level 0 takes ``frames`` such steps;
* both paths then fill the fine levels with the same full passes (SoundStorm: one per level).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from audiopd.synthesis.items import PARALLEL, SERIAL


@dataclass(frozen=True)
class CostModel:
    """Per-pass and per-step costs of one voice on one machine (ms)."""

    # Defaults: ``Synthesizer.calibrate()`` of the flite voice (d_model 128, 4 masked / 4 serial layers,
    # Q 8 x 1024; joe, the default voice, has the same layers over Q 16) on this 2-core CPU, torch fp32, 1 thread,
    # while another job used the other core; two runs, T = 200, batch 1 and 8: 2.9-3.4 + 0.038-0.044 ms per
    # frame-item per pass, 1.6-1.8 + 0.09-0.11 x batch ms per step. With them auto's first attempt is parallel at
    # batch 1 and at batch 8 (measured with K <= 4 + 2 fine passes in d338bea: 4.5x and 1.8x faster than serial at
    # 5 s); a bigger voice or another machine should calibrate its own.
    pass_fixed_ms: float = 3.1
    pass_ms_per_frame: float = 0.041
    step_fixed_ms: float = 1.7
    step_ms_per_item: float = 0.10
    source: str = "default"

    def validate(self) -> None:
        for name in ("pass_fixed_ms", "pass_ms_per_frame", "step_fixed_ms", "step_ms_per_item"):
            value = getattr(self, name)
            if not value >= 0.0:  # also rejects NaN
                raise ValueError(f"cost model: {name} must be >= 0, got {value}")

    def pass_ms(self, frames: int, batch: int) -> float:
        return self.pass_fixed_ms + self.pass_ms_per_frame * frames * batch

    def step_ms(self, batch: int) -> float:
        return self.step_fixed_ms + self.step_ms_per_item * batch


def _check_shape(frames: int, batch: int) -> None:
    if frames < 0 or batch < 1:
        raise ValueError(f"workload needs frames >= 0 and batch >= 1, got frames={frames}, batch={batch}")


def estimate_parallel_s(cost: CostModel, frames: int, batch: int, steps: int, fine_passes: int) -> float:
    """Predicted seconds for parallel decoding: ``steps`` level-0 passes + the fine-level passes.

    ``steps`` is the step budget K; the adaptive decoder may stop earlier, so this is an upper bound.
    """
    _check_shape(frames, batch)
    return (steps + fine_passes) * cost.pass_ms(frames, batch) / 1000.0


def estimate_serial_s(cost: CostModel, frames: int, batch: int, fine_passes: int) -> float:
    """Predicted seconds for serial decoding: ``frames`` cached steps + the fine-level passes."""
    _check_shape(frames, batch)
    return (frames * cost.step_ms(batch) + fine_passes * cost.pass_ms(frames, batch)) / 1000.0


def choose_path(cost: CostModel, frames: int, batch: int, steps: int, fine_passes: int = 0,
                serial_fine_passes: int | None = None) -> str:
    """The cheaper first path for a workload of ``batch`` items padded to ``frames`` ("parallel" on ties).

    ``fine_passes`` are the parallel decoder's, ``serial_fine_passes`` the serial one's (None = the same)."""
    par = estimate_parallel_s(cost, frames, batch, steps, fine_passes)
    ser = estimate_serial_s(cost, frames, batch, fine_passes if serial_fine_passes is None else serial_fine_passes)
    return PARALLEL if par <= ser else SERIAL


def _fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares (intercept, slope), both clamped at 0: a negative cost is measurement noise."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var > 0 else 0.0
    slope = max(slope, 0.0)
    return max(my - slope * mx, 0.0), slope


def _best_ms(fn, repeats: int) -> float:
    fn()  # warm-up: first calls pay for allocation and kernel selection
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1000.0


@torch.no_grad()
def calibrate(model, *, frames: int = 200, batches: tuple[int, ...] = (1, 8), serial_steps: int = 40,
              repeats: int = 3, window: int = 0) -> CostModel:
    """Measure this model's per-pass and per-step costs on this machine (a few seconds at d 256).

    Times one masked pass over ``frames`` x each batch size and ``serial_steps`` cached steps, then
    fits the linear cost terms. Uses the model's real decoding calls, with random phonemes, and the
    decoders' attention ``window`` (block-local attention makes a pass's cost linear in frames).
    """
    if frames < 2 or serial_steps < 1 or repeats < 1 or len(set(batches)) < 2 or min(batches) < 1:
        raise ValueError("calibrate needs frames >= 2, serial_steps >= 1, repeats >= 1 and two batch sizes")
    cfg = model.cfg
    gen = torch.Generator().manual_seed(0)
    pass_x, pass_y, step_x, step_y = [], [], [], []
    for b in sorted(set(batches)):
        n_ph = max(1, frames // 4)
        phon = torch.randint(1, cfg.num_symbols, (b, n_ph), generator=gen)
        dur = torch.full((b, n_ph), 4, dtype=torch.long)
        dur[:, -1] = frames - 4 * (n_ph - 1)
        cond = model.condition(phon, torch.zeros(b, dtype=torch.long), durations=dur)
        codes = torch.full((b, cfg.num_codebooks, cond.num_frames), model.mask_id, dtype=torch.long)
        pass_x.append(float(cond.num_frames * b))
        pass_y.append(_best_ms(lambda: model.masked(codes, cond, [0], window), repeats))

        def steps(cond=cond, b=b) -> None:
            state = model.serial.start(cond)
            prev = None
            for _ in range(min(serial_steps, cond.num_frames)):
                prev = model.serial.step(state, prev).argmax(-1)

        n_steps = min(serial_steps, cond.num_frames)
        step_x.append(float(b))
        step_y.append(_best_ms(steps, repeats) / n_steps)
    pass_fixed, pass_per = _fit_line(pass_x, pass_y)
    step_fixed, step_per = _fit_line(step_x, step_y)
    return CostModel(pass_fixed_ms=pass_fixed, pass_ms_per_frame=pass_per, step_fixed_ms=step_fixed,
                     step_ms_per_item=step_per, source=f"calibrated (torch threads {torch.get_num_threads()})")
