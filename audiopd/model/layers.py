"""Transformer building blocks shared by the encoder, the masked model and the serial model.

Pre-LayerNorm blocks (stable without LR warm-up tricks at small scale) with rotary position
embeddings (RoPE, Su et al. 2021): relative positions generalise to utterances longer than those
seen in training, and a KV-cached step only needs the rotation for its own position.

A bidirectional stack may also attend block-locally (``Transformer.forward(window=W)``): queries in
each block of W frames see only that block and its two neighbours, so a pass costs T x 3W instead of
T x T. Full attention is most of a parallel pass over long chunks (a profile of a 20 s synthesis put
44% of the time in it); relative positions (RoPE) are what make a window a test-time choice.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Rotary(nn.Module):
    """Rotary tables, grown on demand. Not parameters: nothing to save."""

    def __init__(self, head_dim: int, max_len: int = 4096, base: float = 10000.0) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.base = base
        self._build(max_len)

    def _build(self, length: int) -> None:
        inv = 1.0 / (self.base ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        ang = torch.arange(length, dtype=torch.float32)[:, None] * inv[None]
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def tables(self, start: int, length: int, device: torch.device, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        if start + length > self.cos.shape[0]:
            self._build(max(start + length, 2 * self.cos.shape[0]))
        cos = self.cos[start : start + length].to(device=device, dtype=dtype)
        sin = self.sin[start : start + length].to(device=device, dtype=dtype)
        return cos, sin


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate ``x`` [..., T, D] by position (half-split layout)."""
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class KVCache:
    """Preallocated key/value buffers for one layer stack, so a step writes in place (no concat copies)."""

    def __init__(self, n_layers: int, batch: int, n_heads: int, max_len: int, head_dim: int,
                 device: torch.device, dtype: torch.dtype) -> None:
        shape = (batch, n_heads, max_len, head_dim)
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(n_layers)]
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(n_layers)]
        self.length = 0
        self.max_len = max_len


def block_key_mask(valid: Tensor | None, batch: int, t: int, n_heads: int, window: int,
                   device: torch.device) -> Tensor:
    """The key mask of ``block_local_attention`` [B, H * nb, 1, 3W] (True = may attend), from the key
    validity ``valid`` [B, T] (None = all valid). Built once per pass, like ``Transformer.attention_mask``."""
    w = window
    nb = -(-t // w)
    pad = nb * w - t
    if valid is None:
        valid = torch.ones(batch, t, dtype=torch.bool, device=device)
    keys = F.pad(valid, (w, w + pad), value=False).unfold(1, 3 * w, w)  # [B, nb, 3W]
    # A block of padding only (a short item batched with a long one) has no valid key: letting it see its
    # whole window keeps its (discarded) output finite; a NaN there would reach real frames as a value.
    keys = keys | ~keys.any(-1, keepdim=True)
    return keys[:, None, :, None, :].expand(batch, n_heads, nb, 1, 3 * w).reshape(batch, n_heads * nb, 1, 3 * w)


def block_local_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, window: int) -> Tensor:
    """Attention where the queries of each block of ``window`` frames see the keys of that block and its
    two neighbours. q, k, v [B, H, T, D]; ``mask`` from ``block_key_mask`` -> [B, H, T, D].

    Every query sees at least ``window`` frames on each side; for T <= 2 * window it sees every key, so
    the result equals full attention.
    """
    b, h, t, d = q.shape
    w = window
    nb = -(-t // w)
    pad = nb * w - t

    def windows(x: Tensor) -> Tensor:  # [B, H, T, D] -> [B, H * nb, 3W, D]
        x = F.pad(x, (0, 0, w, w + pad))
        return x.unfold(2, 3 * w, w).transpose(-1, -2).reshape(b, h * nb, 3 * w, d)

    qb = F.pad(q, (0, 0, 0, pad)).reshape(b, h * nb, w, d)
    y = F.scaled_dot_product_attention(qb, windows(k), windows(v), attn_mask=mask)
    return y.reshape(b, h, nb * w, d)[:, :, :t]


class Attention(nn.Module):
    # No dropout on the attention weights: it sends PyTorch's CPU attention down its unfused path, ~6x slower
    # at T = 1,200 frames (CHANGELOG, 2026-12-06); the blocks' residual and feed-forward dropout regularise.
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Tensor | None,
                cache: KVCache | None = None, layer: int = 0, window: int = 0) -> Tensor:
        """``window`` > 0: block-local attention, and ``mask`` is then ``block_key_mask``'s."""
        b, t, _ = x.shape
        qkv = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        # queries and keys rotated together: the same products, half the (small, overhead-bound) kernel calls
        q, k = apply_rotary(qkv[:2], cos, sin)
        v = qkv[2]
        if cache is not None:
            start = cache.length
            cache.k[layer][:, :, start : start + t] = k
            cache.v[layer][:, :, start : start + t] = v
            k = cache.k[layer][:, :, : start + t]
            v = cache.v[layer][:, :, : start + t]
        if window > 0:
            y = block_local_attention(q, k, v, mask, window)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, ff_mult: int, dropout: float) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, ff_mult * d_model), nn.GELU(), nn.Linear(ff_mult * d_model, d_model)
        )
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Tensor | None,
                cache: KVCache | None = None, layer: int = 0, window: int = 0) -> Tensor:
        x = x + self.drop(self.attn(self.ln1(x), cos, sin, mask, cache, layer, window))
        return x + self.drop(self.ff(self.ln2(x)))


class Transformer(nn.Module):
    """A stack of blocks + final LayerNorm. ``causal`` selects the serial (autoregressive) variant."""

    def __init__(self, d_model: int, n_heads: int, n_layers: int, ff_mult: int, dropout: float,
                 causal: bool = False, max_len: int = 4096) -> None:
        super().__init__()
        self.causal = causal
        self.n_heads = n_heads
        self.blocks = nn.ModuleList(Block(d_model, n_heads, ff_mult, dropout) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.rotary = Rotary(d_model // n_heads, max_len)

    def attention_mask(self, valid: Tensor | None, t: int, device: torch.device) -> Tensor | None:
        """Boolean mask [B or 1, 1, T, T] (True = may attend) from key validity and causality."""
        mask = None
        if valid is not None:
            mask = valid[:, None, None, :]
        if self.causal:
            tri = torch.ones(t, t, dtype=torch.bool, device=device).tril()[None, None]
            mask = tri if mask is None else mask & tri
        return mask

    def forward(self, x: Tensor, valid: Tensor | None = None, window: int = 0) -> Tensor:
        """Full-sequence pass. ``valid`` [B, T] bool marks real (non-padding) positions; ``window`` > 0
        attends block-locally (an inference setting: the decoders' ``attention_window``)."""
        t = x.shape[1]
        cos, sin = self.rotary.tables(0, t, x.device, x.dtype)
        w = window
        if w < 0:
            raise ValueError(f"window must be >= 0, got {w}")
        if w > 0 and self.causal:
            raise RuntimeError("block-local attention is only defined for a bidirectional transformer")
        local = w > 0 and t > 2 * w  # shorter sequences: every query would see every key anyway
        if local:
            mask = block_key_mask(valid, x.shape[0], t, self.n_heads, w, x.device)
        else:
            mask = self.attention_mask(valid, t, x.device)
        for i, blk in enumerate(self.blocks):
            x = blk(x, cos, sin, mask, None, i, w if local else 0)
        return self.norm(x)

    def new_cache(self, batch: int, max_len: int, device: torch.device, dtype: torch.dtype) -> KVCache:
        d_model = self.norm.normalized_shape[0]
        return KVCache(len(self.blocks), batch, self.n_heads, max_len, d_model // self.n_heads, device, dtype)

    def step(self, x: Tensor, cache: KVCache) -> Tensor:
        """Causal pass over ``x`` [B, t, D] continuing the cached prefix (t = 1 per frame).

        Work per call is one token's projections + attention over the cached prefix: no recomputation
        of earlier frames.
        """
        if not self.causal:
            raise RuntimeError("step() is only defined for a causal transformer")
        t = x.shape[1]
        if cache.length + t > cache.max_len:
            raise RuntimeError(f"KV cache full ({cache.max_len} positions)")
        cos, sin = self.rotary.tables(cache.length, t, x.device, x.dtype)
        mask = None
        if t > 1:  # a multi-token chunk (prompt) must stay causal inside itself
            full = torch.ones(t, cache.length + t, dtype=torch.bool, device=x.device)
            mask = full.tril(diagonal=cache.length)[None, None]
        for i, blk in enumerate(self.blocks):
            x = blk(x, cos, sin, mask, cache, i)
        cache.length += t
        return self.norm(x)


def sinusoid(values: Tensor, dim: int) -> Tensor:
    """Sinusoidal features of scalar ``values`` [...] -> [..., dim] (for within-phoneme progress)."""
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, device=values.device, dtype=torch.float32) / half)
    ang = values.float()[..., None] * freqs * math.pi
    return torch.cat((ang.sin(), ang.cos()), dim=-1)
