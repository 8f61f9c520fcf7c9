"""Serial decoding: one step per frame, deterministic, batch-with-padding safe, RAS active."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from decoding_fixtures import CARD, Q, condition, pair, tiny_model

from audiopd.decoding.sampling import SamplingConfig
from audiopd.decoding.serial import SerialConfig, decode_serial

GREEDY = SerialConfig(sampling=SamplingConfig(temperature=0.0))


def test_counts_and_shapes(model) -> None:
    cond = condition(model, (22, 9))
    res = decode_serial(model, cond, generator=torch.Generator().manual_seed(0))
    assert res.codes.shape == (2, Q, 22)
    assert res.stats.forward_passes == 22 + (Q - 1)
    assert res.stats.steps_per_level == [22] + [1] * (Q - 1)
    assert (res.codes[1, :, 9:] == 0).all()
    valid = res.codes.permute(0, 2, 1)[cond.frame_mask]
    assert (valid < CARD).all() and (valid >= 0).all()


def test_deterministic_for_seed(model) -> None:
    cond = condition(model, (30,))
    a = decode_serial(model, cond, generator=torch.Generator().manual_seed(1))
    b = decode_serial(model, cond, generator=torch.Generator().manual_seed(1))
    c = decode_serial(model, cond, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a.codes, b.codes) and not torch.equal(a.codes, c.codes)


def test_greedy_matches_teacher_forced_argmax(model) -> None:
    # Greedy AR decoding is a fixed point of the teacher-forced model: feeding the decoded tokens
    # back must predict exactly those tokens.
    cond = condition(model, (26,))
    res = decode_serial(model, cond, GREEDY)
    with torch.no_grad():
        logits = model.serial(res.codes[:, 0], cond)
    assert torch.equal(logits.argmax(-1), res.codes[:, 0])


def test_batch_with_padding_matches_single_items() -> None:
    model = tiny_model(4)
    both, singles = pair(model)
    batched = decode_serial(model, both, GREEDY)
    for i, cond in enumerate(singles):
        alone = decode_serial(model, cond, GREEDY)
        assert torch.equal(batched.codes[i, :, : cond.num_frames], alone.codes[0])


def test_ras_breaks_a_stuck_loop() -> None:
    model = tiny_model(5)
    # Force a loop: level-0 head biased hard towards token 3 with a mild second choice.
    with torch.no_grad():
        model.serial.head.bias.zero_()
        model.serial.head.weight.mul_(0.0)
        model.serial.head.bias[3] = 2.0
    cond = condition(model, (60,))
    plain = decode_serial(model, cond, SerialConfig(sampling=SamplingConfig(temperature=1.0, top_k=1)),
                          generator=torch.Generator().manual_seed(0))
    ras = decode_serial(model, cond, SerialConfig(sampling=SamplingConfig(temperature=1.0, top_k=1, ras_window=10,
                                                                          ras_threshold=0.1)),
                        generator=torch.Generator().manual_seed(0))
    assert (plain.codes[0, 0] == 3).all()
    assert (ras.codes[0, 0] != 3).sum() > 5


def test_attention_window_reaches_the_fine_passes() -> None:
    model = tiny_model(5)
    seen: list[int] = []
    hidden = model.masked.hidden  # every masked pass (logits or greedy) runs the body through it

    def spy(codes, cond, target_level, window=0):
        seen.append(window)
        return hidden(codes, cond, target_level, window)

    model.masked.hidden = spy
    cond = condition(model, (30,))
    res = decode_serial(model, cond, replace(GREEDY, attention_window=6))
    assert seen == [6] * (Q - 1) and res.stats.forward_passes == 30 + Q - 1
    with pytest.raises(ValueError, match="attention_window"):
        decode_serial(model, cond, replace(GREEDY, attention_window=-2))
