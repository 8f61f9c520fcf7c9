"""Parallel decoding: fills every token, adapts its step count, repairs spans only, handles batches."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from decoding_fixtures import CARD, Q, OracleModel, condition, pair, tiny_model

from audiopd.decoding.parallel import ParallelConfig, decode_parallel
from audiopd.decoding.refine import fine_level_groups
from audiopd.decoding.sampling import SamplingConfig

GREEDY = ParallelConfig(sampling=SamplingConfig(temperature=0.0), final_temperature=0.0, choice_noise=0.0,
                        adaptive=False, steps=6)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("cfg", [ParallelConfig(), ParallelConfig(adaptive=False, steps=5),
                                 ParallelConfig(remask=True, remask_below=0.5, adaptive=False),
                                 ParallelConfig(fine_passes=1)])
def test_fills_every_token(model, cfg: ParallelConfig) -> None:
    cond = condition(model, (25, 17))
    res = decode_parallel(model, cond, cfg, generator=_gen())
    assert res.codes.shape == (2, Q, 25)
    valid = res.codes.permute(0, 2, 1)[cond.frame_mask]
    assert (valid >= 0).all() and (valid < CARD).all()
    assert (res.codes[1, :, 17:] == 0).all()
    assert ((res.confidence > 0) & (res.confidence <= 1))[cond.frame_mask].all()
    assert res.stats.forward_passes == sum(res.stats.steps_per_level[:1]) + len(fine_level_groups(Q, cfg.fine_passes))


def test_deterministic_for_seed(model) -> None:
    cond = condition(model, (30,))
    a = decode_parallel(model, cond, generator=_gen(5))
    b = decode_parallel(model, cond, generator=_gen(5))
    c = decode_parallel(model, cond, generator=_gen(6))
    assert torch.equal(a.codes, b.codes) and torch.equal(a.confidence, b.confidence)
    assert not torch.equal(a.codes, c.codes)


def test_non_adaptive_uses_all_steps(model) -> None:
    res = decode_parallel(model, condition(model, (40,)), ParallelConfig(adaptive=False, steps=7), generator=_gen())
    assert res.stats.steps_per_level == [7] + [1] * (Q - 1)
    assert res.stats.forward_passes == 7 + Q - 1
    assert not res.stats.stopped_early


def test_adaptive_finishes_fast_on_a_confident_model(model) -> None:
    cond = condition(model, (40,))
    sure, unsure = OracleModel(sharpness=20.0), OracleModel(sharpness=0.5)
    cfg = ParallelConfig(steps=12, converge_delta=0.0)  # only the confidence rule may end early
    fast = decode_parallel(sure, cond, cfg, generator=_gen())
    slow = decode_parallel(unsure, cond, cfg, generator=_gen())
    assert fast.stats.steps_per_level[0] == 1 and fast.stats.stopped_early
    assert slow.stats.steps_per_level[0] == 12
    assert fast.stats.forward_passes < slow.stats.forward_passes
    # The confident model's answer is the one it was sure of.
    assert torch.equal(fast.codes[0], sure.target(40))
    # Without adaptivity the confident model pays for every step.
    fixed = decode_parallel(sure, cond, ParallelConfig(steps=12, adaptive=False), generator=_gen())
    assert fixed.stats.steps_per_level[0] == 12


def test_convergence_stops_when_predictions_are_stable(model) -> None:
    # The unsure oracle's argmax never changes, and its low-confidence fraction stalls: more steps
    # would commit the same tokens, so the decoder stops after min_steps.
    unsure = OracleModel(sharpness=0.5)
    cfg = ParallelConfig(steps=12, min_steps=3, converge_delta=0.05, sampling=SamplingConfig(temperature=0.0),
                         choice_noise=0.0)
    res = decode_parallel(unsure, condition(model, (40,)), cfg, generator=_gen())
    assert res.stats.stopped_early and res.stats.steps_per_level[0] < 12
    assert torch.equal(res.codes[0], unsure.target(40))


def test_span_repair_changes_only_the_span(model) -> None:
    cond = condition(model, (36, 28))
    first = decode_parallel(model, cond, generator=_gen(0))
    span = [(10, 20)]
    again = decode_parallel(model, cond, codes=first.codes, span=span, confidence=first.confidence,
                            generator=_gen(1))
    changed = (again.codes != first.codes).any(1)  # [B, T]
    outside = torch.ones(36, dtype=torch.bool)
    outside[10:20] = False
    assert not changed[:, outside].any()
    assert changed[:, 10:20].any()
    assert torch.equal(again.confidence[:, outside], first.confidence[:, outside])


def test_span_as_mask_and_validation(model) -> None:
    cond = condition(model, (20,))
    first = decode_parallel(model, cond, generator=_gen())
    m = torch.zeros(20, dtype=torch.bool)
    m[3:6] = True
    again = decode_parallel(model, cond, codes=first.codes, span=m, generator=_gen(2))
    assert not (again.codes != first.codes)[:, :, ~m].any()
    with pytest.raises(ValueError, match="previous codes"):
        decode_parallel(model, cond, span=[(0, 3)])
    with pytest.raises(ValueError, match="outside"):
        decode_parallel(model, cond, codes=first.codes, span=[(5, 40)])
    with pytest.raises(ValueError, match="out of range"):
        decode_parallel(model, cond, codes=first.codes + CARD, span=[(0, 3)])


def test_batch_with_padding_matches_single_items() -> None:
    model = tiny_model(3)
    both, singles = pair(model)
    batched = decode_parallel(model, both, GREEDY)
    for i, cond in enumerate(singles):
        alone = decode_parallel(model, cond, GREEDY)
        t = cond.num_frames
        assert torch.equal(batched.codes[i, :, :t], alone.codes[0])
        assert torch.allclose(batched.confidence[i, :t], alone.confidence[0], atol=1e-5)


def test_fine_passes_grouping() -> None:
    assert fine_level_groups(8, None) == [[1], [2], [3], [4], [5], [6], [7]]
    assert fine_level_groups(8, 2) == [[1, 2, 3, 4], [5, 6, 7]]
    assert fine_level_groups(8, 1) == [[1, 2, 3, 4, 5, 6, 7]]
    assert fine_level_groups(1, None) == []
    with pytest.raises(ValueError):
        fine_level_groups(8, 8)


def test_fewer_fine_passes_fewer_forwards(model) -> None:
    cond = condition(model, (20,))
    per_level = decode_parallel(model, cond, ParallelConfig(adaptive=False, steps=4), generator=_gen())
    grouped = decode_parallel(model, cond, ParallelConfig(adaptive=False, steps=4, fine_passes=1), generator=_gen())
    assert per_level.stats.forward_passes - grouped.stats.forward_passes == Q - 2
    assert grouped.stats.steps_per_level == [4] + [1] * (Q - 1)


def test_attention_window_reaches_every_pass() -> None:
    oracle = OracleModel(sharpness=0.5)
    res = decode_parallel(oracle, condition(tiny_model(), (30,)), ParallelConfig(attention_window=7), generator=_gen())
    assert oracle.windows == [7] * res.stats.forward_passes


def test_attention_window_keeps_padding_out_and_is_full_attention_when_wide() -> None:
    model = tiny_model(3)
    both, singles = pair(model)  # 24 and 15 frames
    local = replace(GREEDY, attention_window=4)  # six blocks: the short item's last ones hold padding only
    batched = decode_parallel(model, both, local)
    for i, cond in enumerate(singles):
        alone = decode_parallel(model, cond, local)
        assert torch.equal(batched.codes[i, :, : cond.num_frames], alone.codes[0])
    wide = decode_parallel(model, both, replace(GREEDY, attention_window=12))  # T <= 2W: every key in view
    assert torch.equal(wide.codes, decode_parallel(model, both, GREEDY).codes)
    with pytest.raises(ValueError, match="attention_window"):
        decode_parallel(model, both, replace(GREEDY, attention_window=-1))
