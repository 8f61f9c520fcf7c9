"""Masked codec transformer heads and the serial model's incremental decoding."""

from __future__ import annotations

import pytest
import torch
from model_fixtures import TINY, tiny_voice

from audiopd.errors import ArtifactError
from audiopd.model.config import ModelConfig


def _cond(model, b: int = 2):
    ph = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 0]])[:b]
    dur = torch.tensor([[3, 2, 4, 1], [2, 2, 3, 0]])[:b]
    return model.condition(ph, torch.arange(b), durations=dur)


def test_head_selection_agrees() -> None:
    model = tiny_voice()
    cond = _cond(model)
    codes = torch.randint(0, TINY.cardinality, (2, TINY.num_codebooks, cond.num_frames))
    with torch.no_grad():
        h = model.masked.hidden(codes, cond, 1)
        all_levels = model.masked.level_logits(h, [0, 1, 2, 3])
        some = model.masked.level_logits(h, [2])
        per_item = model.masked.item_logits(h, torch.tensor([3, 2]))
    torch.testing.assert_close(some[:, 0], all_levels[:, 2])
    torch.testing.assert_close(per_item[0], all_levels[0, 3])
    torch.testing.assert_close(per_item[1], all_levels[1, 2])
    assert model.masked(codes, cond, [1, 2]).shape == (2, 2, cond.num_frames, TINY.cardinality)
    # Non-consecutive levels take the gather path and agree too.
    torch.testing.assert_close(model.masked.level_logits(h, [3, 1])[:, 0], all_levels[:, 3])


def test_a_frame_embeds_as_the_sum_of_its_levels_rows() -> None:
    """``hidden`` sums one row per level in the gather (``embedding_bag``): the body's input is the levels'
    embeddings added one by one, plus the condition and the target level's embedding."""
    model = tiny_voice()
    masked = model.masked
    cond = _cond(model)
    codes = torch.randint(0, TINY.cardinality + 1, (2, TINY.num_codebooks, cond.num_frames))
    captured = []
    handle = masked.body.register_forward_pre_hook(lambda _m, args: captured.append(args[0]))
    try:
        with torch.no_grad():
            masked.hidden(codes, cond, 1)
    finally:
        handle.remove()
    c = TINY.cardinality + 1
    rows = sum(masked.code_embed.weight[codes[:, q] + q * c] for q in range(TINY.num_codebooks))  # [B, T, D]
    with torch.no_grad():
        expected = rows + masked.cond_proj(cond.frames) + masked.target_level.weight[1]
    torch.testing.assert_close(captured[0], expected)


@pytest.mark.parametrize("chunk", [None, 1, 7, 512])  # None: float32's one level at a time
def test_greedy_is_the_argmax_of_the_logits(chunk: int | None) -> None:
    model = tiny_voice()
    cond = _cond(model)
    codes = torch.randint(0, TINY.cardinality, (2, TINY.num_codebooks, cond.num_frames))
    with torch.no_grad():
        want = model.masked(codes, cond, [1, 2, 3]).argmax(-1)
        got = model.masked.greedy(codes, cond, [1, 2, 3], chunk=chunk)
    assert got.shape == (2, 3, cond.num_frames) and torch.equal(got, want)


def test_logits_of_selected_frames_only() -> None:
    model = tiny_voice()
    cond = _cond(model)
    codes = torch.randint(0, TINY.cardinality, (2, TINY.num_codebooks, cond.num_frames))
    frames = torch.rand(2, cond.num_frames, generator=torch.Generator().manual_seed(0)) < 0.4
    with torch.no_grad():
        full = model.masked(codes, cond, [0, 1])
        some = model.masked(codes, cond, [0, 1], frames=frames)
    assert some.shape == (int(frames.sum()), 2, TINY.cardinality)
    torch.testing.assert_close(some, full.transpose(1, 2)[frames])


def test_mask_token_changes_prediction() -> None:
    model = tiny_voice()
    cond = _cond(model, 1)
    codes = torch.randint(0, TINY.cardinality, (1, TINY.num_codebooks, cond.num_frames))
    masked = codes.clone()
    masked[:, 0, 3] = model.mask_id
    with torch.no_grad():
        assert not torch.allclose(model.masked(codes, cond, [0]), model.masked(masked, cond, [0]))


def test_serial_steps_equal_teacher_forced_pass() -> None:
    model = tiny_voice()
    cond = _cond(model)
    code0 = torch.randint(0, TINY.cardinality, (2, cond.num_frames))
    with torch.no_grad():
        full = model.serial(code0, cond)
        state = model.serial.start(cond)
        steps, prev = [], None
        for t in range(cond.num_frames):
            steps.append(model.serial.step(state, prev))
            prev = code0[:, t]
        with pytest.raises(RuntimeError, match="past the last frame"):
            model.serial.step(state, prev)
    step_logits = torch.stack(steps, 1)
    for i, n in enumerate(cond.lengths.tolist()):
        torch.testing.assert_close(step_logits[i, :n], full[i, :n], atol=1e-5, rtol=1e-5)


def test_config_validation() -> None:
    with pytest.raises(ArtifactError, match="num_symbols"):
        ModelConfig().validate()
    with pytest.raises(ArtifactError, match="divisible"):
        ModelConfig(num_symbols=5, num_codebooks=2, cardinality=4, num_speakers=1, d_model=30, n_heads=4).validate()
    filled = ModelConfig().with_data(num_symbols=9, num_codebooks=8, cardinality=1024, num_speakers=2)
    assert (filled.num_symbols, filled.num_codebooks, filled.cardinality) == (9, 8, 1024)
    with pytest.raises(ArtifactError, match="data has"):
        filled.with_data(num_symbols=9, num_codebooks=4, cardinality=1024, num_speakers=2)


def test_parameter_counts_cover_all_parts() -> None:
    counts = tiny_voice().num_parameters()
    assert set(counts) == {"conditioner", "masked", "serial"} and all(v > 0 for v in counts.values())
