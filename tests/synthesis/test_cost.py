"""The cost model: pure estimates, the path choice by workload shape, and calibration on a tiny model."""

from __future__ import annotations

import math

import pytest
import torch

from audiopd.model.config import ModelConfig
from audiopd.model.voice import VoiceModel
from audiopd.synthesis.cost import (
    PARALLEL,
    SERIAL,
    CostModel,
    calibrate,
    choose_path,
    estimate_parallel_s,
    estimate_serial_s,
)

DEFAULT = CostModel()


def test_estimates_follow_the_cost_terms() -> None:
    cm = CostModel(pass_fixed_ms=1.0, pass_ms_per_frame=0.5, step_fixed_ms=2.0, step_ms_per_item=0.25)
    # (8 + 3) passes of (1 + 0.5 * 100 * 2) ms.
    assert estimate_parallel_s(cm, 100, 2, 8, 3) == pytest.approx(11 * 101.0 / 1000)
    # 100 steps of (2 + 0.25 * 2) ms + 3 passes of 101 ms.
    assert estimate_serial_s(cm, 100, 2, 3) == pytest.approx((100 * 2.5 + 3 * 101.0) / 1000)


@pytest.mark.parametrize(
    "frames, batch, steps, fine, expected",
    [
        (400, 1, 8, 7, PARALLEL),  # one utterance: K passes beat T cached steps (samples/measured.md)
        (100, 1, 8, 7, PARALLEL),
        (1500, 1, 8, 7, PARALLEL),  # ... whatever its length on a CPU
        (400, 8, 8, 7, SERIAL),  # a batch of 8 with K=8 and one pass per fine level: serial wins
        (400, 8, 4, 2, PARALLEL),  # ... but not against K=4 + 2 fine passes (the defaults; measured 1.8x)
        (400, 8, 16, 7, SERIAL),
        (400, 2, 64, 7, SERIAL),  # a huge step budget makes even a small batch cheaper serially
    ],
)
def test_default_choice_by_workload_shape(frames: int, batch: int, steps: int, fine: int, expected: str) -> None:
    assert choose_path(DEFAULT, frames, batch, steps, fine_passes=fine) == expected


def test_each_decoder_is_charged_its_own_fine_passes() -> None:
    cm = CostModel(pass_fixed_ms=10.0, pass_ms_per_frame=0.0, step_fixed_ms=0.1, step_ms_per_item=0.0)
    # 100 frames: serial = 10 ms of steps + its fine passes; parallel = (K + its fine passes) x 10 ms.
    assert choose_path(cm, 100, 1, 2, fine_passes=1, serial_fine_passes=3) == PARALLEL  # 30 vs 40 ms
    assert choose_path(cm, 100, 1, 2, fine_passes=1) == SERIAL  # serial charged 1 pass too: 30 vs 20 ms
    assert choose_path(cm, 100, 1, 2, fine_passes=1, serial_fine_passes=0) == SERIAL  # 30 vs 10 ms


def test_choice_is_monotonic_in_batch() -> None:
    # Once serial wins for some batch size it keeps winning for larger batches.
    picks = [choose_path(DEFAULT, 400, b, 8, 7) for b in range(1, 17)]
    first_serial = picks.index(SERIAL)
    assert all(p == PARALLEL for p in picks[:first_serial]) and all(p == SERIAL for p in picks[first_serial:])


def test_the_facts_table_reproduces_the_measured_choice() -> None:
    # The 2-thread figures of samples/measured.md (d 256, T 400): 34.5 / 292 ms per pass, 2.24 / 4.88 ms per step.
    per_frame = (292.0 - 34.5) / (400 * 8 - 400)
    fixed = 34.5 - 400 * per_frame
    step_item = (4.88 - 2.24) / 7
    cm = CostModel(pass_fixed_ms=max(fixed, 0.0), pass_ms_per_frame=per_frame, step_fixed_ms=2.24 - step_item,
                   step_ms_per_item=step_item)
    assert estimate_serial_s(cm, 400, 1, 0) == pytest.approx(0.896, rel=0.02)
    assert choose_path(cm, 400, 1, 8) == PARALLEL and choose_path(cm, 400, 8, 8) == SERIAL


@pytest.mark.parametrize("frames, batch", [(-1, 1), (10, 0)])
def test_bad_workload_is_rejected(frames: int, batch: int) -> None:
    with pytest.raises(ValueError):
        choose_path(DEFAULT, frames, batch, 8)


@pytest.mark.parametrize("field", ["pass_fixed_ms", "pass_ms_per_frame", "step_fixed_ms", "step_ms_per_item"])
@pytest.mark.parametrize("value", [-1.0, math.nan])
def test_validate_rejects_negative_or_nan(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        CostModel(**{field: value}).validate()


def test_calibrate_measures_positive_costs_on_a_tiny_model() -> None:
    torch.manual_seed(0)
    cfg = ModelConfig(num_symbols=20, num_codebooks=2, cardinality=16, num_speakers=1, d_model=32, n_heads=2,
                      ff_mult=2, dropout=0.0, encoder_layers=1, duration_channels=16, masked_layers=1,
                      serial_layers=1, max_frames=128)
    cm = calibrate(VoiceModel(cfg).eval(), frames=40, batches=(1, 4), serial_steps=10, repeats=1, window=8)
    cm.validate()
    assert cm.source.startswith("calibrated")
    # Something was measured: a pass over 40 frames and a step both take time.
    assert cm.pass_ms(40, 1) > 0 and cm.step_ms(1) > 0
    with pytest.raises(ValueError):
        calibrate(VoiceModel(cfg).eval(), batches=(1,))
