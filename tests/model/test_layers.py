"""Transformer blocks: KV-cached steps equal the full causal pass; padding and rotary behaviour."""

from __future__ import annotations

import pytest
import torch

from audiopd.model.layers import Rotary, Transformer, apply_rotary, block_key_mask, block_local_attention


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


# ------------------------------------------------------------------------------ block-local attention
def _banded_reference(q, k, v, valid, w):
    """Full attention under an explicit [T, T] mask: block(i) and block(j) at most one apart."""
    block = torch.arange(q.shape[2]) // w
    mask = ((block[:, None] - block[None, :]).abs() <= 1)[None, None] & valid[:, None, None, :]
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask), mask.any(-1)


@pytest.mark.parametrize(("t", "w"), [(37, 8), (64, 16), (9, 4)])
def test_block_local_attention_matches_a_banded_mask(t: int, w: int) -> None:
    torch.manual_seed(3)
    q, k, v = (torch.randn(2, 3, t, 8) for _ in range(3))
    valid = torch.ones(2, t, dtype=torch.bool)
    valid[1, t // 2 :] = False  # a shorter second item: its last blocks hold padding only
    got = block_local_attention(q, k, v, block_key_mask(valid, 2, t, 3, w, q.device), w)
    want, has_key = _banded_reference(q, k, v, valid, w)
    assert torch.isfinite(got).all()  # padding-only windows stay finite (their values feed later layers)
    keep = has_key.expand(2, 3, t)
    torch.testing.assert_close(got[keep], want[keep], atol=1e-5, rtol=1e-5)


def test_block_local_attention_ignores_keys_outside_the_window() -> None:
    torch.manual_seed(4)
    q, k, v = (torch.randn(1, 2, 40, 8) for _ in range(3))
    k2, v2 = k.clone(), v.clone()
    k2[:, :, 24:], v2[:, :, 24:] = torch.randn(1, 2, 16, 8), torch.randn(1, 2, 16, 8)
    mask = block_key_mask(None, 1, 40, 2, 8, q.device)
    a = block_local_attention(q, k, v, mask, 8)
    b = block_local_attention(q, k2, v2, mask, 8)
    torch.testing.assert_close(a[:, :, :8], b[:, :, :8])  # block 0 sees frames 0..15 only
    assert not torch.allclose(a[:, :, 16:24], b[:, :, 16:24])  # block 2 sees block 3


def test_windowed_transformer_equals_full_when_short_and_is_bidirectional_only() -> None:
    torch.manual_seed(5)
    net = Transformer(32, 4, 2, 2, 0.0).eval()
    x = torch.randn(2, 30, 32)
    with torch.no_grad():
        torch.testing.assert_close(net(x, window=15), net(x))  # T <= 2W: every query sees every key
        assert not torch.allclose(net(x, window=10), net(x))  # 3 blocks: the outer two never meet
    with pytest.raises(RuntimeError, match="bidirectional"):
        _causal()(x, window=4)
    with pytest.raises(ValueError, match="window"):
        net(x, window=-1)
