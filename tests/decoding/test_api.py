"""The one-call decode API: padding, speakers, methods, span helper."""

from __future__ import annotations

import pytest
import torch
from decoding_fixtures import Q

from audiopd.decoding.api import decode, pad_ids, phone_span_to_frames
from audiopd.decoding.parallel import ParallelConfig, decode_parallel


def test_decode_both_methods(model) -> None:
    ids = [[3, 4, 5], [6, 7]]
    durs = [[2, 3, 4], [5, 1]]
    for method in ("parallel", "serial"):
        res, cond = decode(model, ids, [0, 1], method=method, durations=durs, seed=3)
        assert res.codes.shape == (2, Q, 9) and res.lengths.tolist() == [9, 6]
        again, _ = decode(model, ids, [0, 1], method=method, durations=durs, seed=3)
        assert torch.equal(res.codes, again.codes)


def test_span_repair_via_returned_condition(model) -> None:
    res, cond = decode(model, [[3, 4, 5, 6]], 1, durations=[[3, 3, 3, 3]])
    start, end = phone_span_to_frames(cond.durations[0], 1, 3)
    assert (start, end) == (3, 9)
    fixed = decode_parallel(model, cond, codes=res.codes, span=[(start, end)], generator=torch.Generator())
    assert torch.equal(fixed.codes[..., :3], res.codes[..., :3]) and torch.equal(fixed.codes[..., 9:], res.codes[..., 9:])


def test_errors(model) -> None:
    with pytest.raises(ValueError, match="at least one"):
        pad_ids([[1], []])
    with pytest.raises(ValueError, match="speakers"):
        decode(model, [[1], [2]], [0, 1, 1])
    with pytest.raises(ValueError, match="method"):
        decode(model, [[1]], method="beam")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        decode(model, [[1]], method="serial", config=ParallelConfig())
    with pytest.raises(ValueError, match="outside"):
        phone_span_to_frames(torch.tensor([1, 2]), 1, 3)
