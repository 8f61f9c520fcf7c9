"""Transformer blocks: KV-cached steps equal the full causal pass; padding and rotary behaviour."""

from __future__ import annotations

import pytest
import torch

from audiopd.model.layers import Rotary, Transformer, apply_rotary


def _causal(seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(32, 4, 3, 2, 0.0, causal=True, max_len=8).eval()


def test_kv_cache_steps_equal_full_causal_pass() -> None:
    net = _causal()
    x = torch.randn(3, 40, 32)  # longer than max_len: rotary tables must grow
    with torch.no_grad():
        full = net(x)
        cache = net.new_cache(3, 40, x.device, x.dtype)
        steps = torch.cat([net.step(x[:, t : t + 1], cache) for t in range(40)], dim=1)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)


def test_kv_cache_chunked_prefix() -> None:
    net = _causal(1)
    x = torch.randn(2, 12, 32)
    with torch.no_grad():
        full = net(x)
        cache = net.new_cache(2, 12, x.device, x.dtype)
        a = net.step(x[:, :5], cache)
        b = torch.cat([net.step(x[:, t : t + 1], cache) for t in range(5, 12)], dim=1)
    torch.testing.assert_close(torch.cat([a, b], 1), full, atol=1e-5, rtol=1e-5)


def test_cache_overflow_is_an_error() -> None:
    net = _causal()
    cache = net.new_cache(1, 2, torch.device("cpu"), torch.float32)
    with torch.no_grad():
        net.step(torch.randn(1, 2, 32), cache)
        with pytest.raises(RuntimeError, match="full"):
            net.step(torch.randn(1, 1, 32), cache)


def test_causal_future_does_not_leak() -> None:
    net = _causal()
    x = torch.randn(1, 10, 32)
    y = x.clone()
    y[:, 6:] = torch.randn(1, 4, 32)
    with torch.no_grad():
        torch.testing.assert_close(net(x)[:, :6], net(y)[:, :6])


@pytest.mark.parametrize("causal", [False, True])
def test_padding_does_not_change_real_positions(causal: bool) -> None:
    torch.manual_seed(2)
    net = Transformer(32, 4, 2, 2, 0.0, causal=causal).eval()
    x = torch.randn(1, 9, 32)
    padded = torch.cat([x, torch.randn(1, 5, 32)], dim=1)
    valid = torch.zeros(1, 14, dtype=torch.bool)
    valid[:, :9] = True
    with torch.no_grad():
        torch.testing.assert_close(net(padded, valid)[:, :9], net(x), atol=1e-5, rtol=1e-5)


def test_rotary_is_relative() -> None:
    rot = Rotary(8, 16)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)

    def score(i: int, j: int) -> torch.Tensor:
        ci, si = rot.tables(i, 1, q.device, q.dtype)
        cj, sj = rot.tables(j, 1, q.device, q.dtype)
        return (apply_rotary(q, ci, si) * apply_rotary(k, cj, sj)).sum()

    torch.testing.assert_close(score(3, 1), score(10, 8))
    assert not torch.allclose(score(3, 1), score(3, 2))
