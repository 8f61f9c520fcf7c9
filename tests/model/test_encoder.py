"""Length regulator, duration conversion with speed, and the frame conditioner."""

from __future__ import annotations

import pytest
import torch
from model_fixtures import tiny_voice

from audiopd.model.encoder import durations_from_log, length_regulate


def test_length_regulate_repeats_states() -> None:
    states = torch.arange(2 * 4 * 3, dtype=torch.float32).reshape(2, 4, 3)
    dur = torch.tensor([[2, 0, 1, 3], [1, 2, 0, 0]])
    out, mask, progress = length_regulate(states, dur)
    assert out.shape == (2, 6, 3)
    assert mask.tolist() == [[True] * 6, [True] * 3 + [False] * 3]
    expected0 = torch.stack([states[0, i] for i in [0, 0, 2, 3, 3, 3]])
    torch.testing.assert_close(out[0], expected0)
    torch.testing.assert_close(out[1, :3], torch.stack([states[1, i] for i in [0, 1, 1]]))
    assert (out[1, 3:] == 0).all()
    torch.testing.assert_close(progress[0], torch.tensor([0, 0.5, 0, 0, 1 / 3, 2 / 3]))


@pytest.mark.parametrize("speed, expected", [(1.0, [3, 5, 0]), (2.0, [2, 2, 0]), (0.5, [6, 10, 0])])
def test_durations_from_log_with_speed(speed: float, expected: list[int]) -> None:
    log_dur = torch.log1p(torch.tensor([[3.0, 5.0, 7.0]]))
    mask = torch.tensor([[True, True, False]])
    assert durations_from_log(log_dur, mask, speed).tolist() == [expected]


def test_durations_never_empty_and_speed_validated() -> None:
    log_dur = torch.full((2, 3), -5.0)
    out = durations_from_log(log_dur, torch.ones(2, 3, dtype=torch.bool))
    assert out.sum(-1).tolist() == [1, 1]
    with pytest.raises(ValueError, match="speed"):
        durations_from_log(log_dur, torch.ones(2, 3, dtype=torch.bool), speed=0.0)


def test_condition_predicts_durations_and_respects_speed() -> None:
    model = tiny_voice()
    with torch.no_grad():
        model.conditioner.duration.proj.bias.fill_(float(torch.log1p(torch.tensor(4.0))))
        model.conditioner.duration.proj.weight.zero_()
    ph = torch.tensor([[4, 5, 6, 0]])
    cond = model.condition(ph, torch.tensor([1]))
    assert cond.durations.tolist() == [[4, 4, 4, 0]] and cond.num_frames == 12
    fast = model.condition(ph, torch.tensor([1]), speed=2.0)
    assert fast.num_frames == 6
    given = model.condition(ph, torch.tensor([1]), durations=torch.tensor([[1, 2, 3, 0]]))
    assert given.lengths.tolist() == [6]


@pytest.mark.parametrize(
    "ph, spk, match",
    [([[0, 0]], [0], "at least one"), ([[1, 99]], [0], "phoneme ids"), ([[1, 2]], [7], "speaker ids")],
)
def test_condition_rejects_bad_input(ph, spk, match) -> None:
    with pytest.raises(ValueError, match=match):
        tiny_voice().condition(torch.tensor(ph), torch.tensor(spk))
