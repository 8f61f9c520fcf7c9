"""The bidirectional transformer of ``audiopd.model.layers`` in NumPy, for one item ([T, D] arrays, float32).

Pre-LayerNorm blocks with exact GELU, rotary positions (half-split layout) and a final LayerNorm, attending either
over every key or block-locally (``layers.block_local_attention``: the queries of each block of W frames see that
block and its two neighbours). Only the bidirectional stacks live here (the phoneme encoder and the masked codec
transformer); the serial model's causal, KV-cached stack stays torch-only.

Weights are laid out for the GEMMs at load time: each projection is stored transposed ([C_in, C_out], contiguous),
and the softmax scale 1/sqrt(head_dim) is folded into the query rows of the QKV projection (rotation is linear, so
scaling before it is the same as scaling after), which saves a pass over every query per layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from audiopd.lite.nn import gelu, layer_norm

Array = np.ndarray


def rotary_tables(head_dim: int, length: int, base: float = 10000.0) -> tuple[Array, Array]:
    """cos, sin [length, head_dim / 2] in float32, computed as ``layers.Rotary`` does (float32 angles)."""
    inv = np.float32(1.0) / (np.float32(base) ** (np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim)))
    ang = np.arange(length, dtype=np.float32)[:, None] * inv[None]
    return np.cos(ang), np.sin(ang)


def apply_rotary(x: Array, cos: Array, sin: Array, out: Array | None = None) -> Array:
    """Rotate ``x`` [..., T, d] by position (half-split layout, as ``layers.apply_rotary``), into ``out`` when given
    (the attention's padded buffer: no concatenation copy)."""
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    if out is None:
        out = np.empty(x.shape, dtype=np.float32)
    lo, hi = out[..., :d], out[..., d:]
    np.multiply(x1, cos, out=lo)
    lo -= x2 * sin
    np.multiply(x2, cos, out=hi)
    hi += x1 * sin
    return out


def _weighted(scores: Array, v: Array) -> Array:
    """softmax(scores) @ v over the last axis, with ``scores`` overwritten: the exponentials are summed once and
    the division applied to the [.., d] result rather than to the [.., keys] weights (keys >> d)."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    total = scores.sum(axis=-1, keepdims=True)
    y = scores @ v
    y /= total
    return y


def full_attention(q: Array, k: Array, v: Array, key_bias: Array | None = None) -> Array:
    """Scaled-dot-product attention with pre-scaled ``q``: q, k, v [H, T, d] -> [H, T, d]. ``key_bias`` [T]
    (0 or -inf) masks keys, as a boolean key mask does in ``F.scaled_dot_product_attention``."""
    scores = q @ k.transpose(0, 2, 1)
    if key_bias is not None:
        scores += key_bias
    return _weighted(scores, v)


def _local(buf: Array, t: int, w: int) -> Array:
    """Block-local attention over ``buf`` [3, H, (nb + 2) W, d]: pre-scaled q, k, v of positions [0, T) at
    [W, W + T), zeros around them -> [H, T, d]."""
    _, h, _, d = buf.shape
    nb = -(-t // w)
    pad = nb * w - t
    q = buf[0, :, w : w + nb * w].reshape(h, nb, w, d)
    s_h, s_t, s_d = buf.strides[1:]

    def windows(x: Array) -> Array:  # [H, (nb + 2) W, d] -> [H, nb, 3W, d]: block i sees [(i - 1) W, (i + 2) W)
        return np.lib.stride_tricks.as_strided(x, (h, nb, 3 * w, d), (s_h, w * s_t, s_t, s_d), writeable=False)

    scores = q @ windows(buf[1]).transpose(0, 1, 3, 2)  # [H, nb, W, 3W]
    # Keys outside [0, T) are padding (block_key_mask): the first block's left neighbour, and past T the last two
    # blocks' windows (the last one's right neighbour always; T > 2W, so nb >= 3 and these blocks differ).
    scores[:, 0, :, :w] = -np.inf
    scores[:, -1, :, 2 * w - pad :] = -np.inf
    if pad:
        scores[:, -2, :, 3 * w - pad :] = -np.inf
    y = _weighted(scores, windows(buf[2]))
    return y.reshape(h, nb * w, d)[:, :t]


def _local_buffer(n_heads: int, t: int, w: int, d: int) -> Array:
    return np.zeros((3, n_heads, (-(-t // w) + 2) * w, d), dtype=np.float32)


def block_local_attention(q: Array, k: Array, v: Array, window: int) -> Array:
    """``layers.block_local_attention`` with ``block_key_mask`` for one item whose keys are all valid, pre-scaled
    ``q``: q, k, v [H, T, d] -> [H, T, d], for T > 2 * window. Block i's queries see keys [(i-1)W, (i+2)W) within
    [0, T)."""
    h, t, d = q.shape
    if t <= 2 * window:
        raise ValueError(f"block-local attention needs T > 2 * window ({t} frames, window {window})")
    buf = _local_buffer(h, t, window, d)
    for i, x in enumerate((q, k, v)):
        buf[i, :, window : window + t] = x
    return _local(buf, t, window)


@dataclass
class LiteBlock:
    """One pre-LN block (``layers.Block``) with its projections stored transposed for ``x @ W``."""

    ln1_w: Array
    ln1_b: Array
    qkv_t: Array  # [D, 3D], query columns pre-scaled by 1/sqrt(head_dim)
    qkv_b: Array
    out_t: Array  # [D, D]
    out_b: Array
    ln2_w: Array
    ln2_b: Array
    ff1_t: Array  # [D, F]
    ff1_b: Array
    ff2_t: Array  # [F, D]
    ff2_b: Array

    def __call__(self, x: Array, n_heads: int, cos: Array, sin: Array, key_bias: Array | None,
                 window: int) -> Array:
        t, dm = x.shape
        hd = dm // n_heads
        qkv = layer_norm(x, self.ln1_w, self.ln1_b) @ self.qkv_t
        qkv += self.qkv_b
        parts = qkv.reshape(t, 3, n_heads, hd).transpose(1, 2, 0, 3)  # [3, H, T, hd], a view
        if window > 0:
            buf = _local_buffer(n_heads, t, window, hd)
            inner = buf[:, :, window : window + t]
            apply_rotary(parts[:2], cos, sin, out=inner[:2])
            inner[2] = parts[2]
            y = _local(buf, t, window)
        else:
            qk = apply_rotary(parts[:2], cos, sin)
            y = full_attention(qk[0], qk[1], parts[2], key_bias)
        a = y.transpose(1, 0, 2).reshape(t, dm) @ self.out_t
        a += self.out_b
        a += x  # the residual, added into the fresh projection rather than into a new array
        f = layer_norm(a, self.ln2_w, self.ln2_b) @ self.ff1_t
        f += self.ff1_b
        f = gelu(f) @ self.ff2_t
        f += self.ff2_b
        f += a
        return f


def transformer_shapes(prefix: str, d_model: int, ff_mult: int, n_layers: int) -> dict[str, tuple[int, ...]]:
    """The state-dict keys (under ``prefix``) and shapes of a ``layers.Transformer``: what a loader checks."""
    d, f = d_model, ff_mult * d_model
    shapes: dict[str, tuple[int, ...]] = {}
    for i in range(n_layers):
        p = f"{prefix}blocks.{i}."
        shapes.update({
            p + "ln1.weight": (d,), p + "ln1.bias": (d,),
            p + "attn.qkv.weight": (3 * d, d), p + "attn.qkv.bias": (3 * d,),
            p + "attn.out.weight": (d, d), p + "attn.out.bias": (d,),
            p + "ln2.weight": (d,), p + "ln2.bias": (d,),
            p + "ff.0.weight": (f, d), p + "ff.0.bias": (f,),
            p + "ff.2.weight": (d, f), p + "ff.2.bias": (d,),
        })
    shapes[prefix + "norm.weight"] = (d,)
    shapes[prefix + "norm.bias"] = (d,)
    return shapes


class LiteTransformer:
    """``layers.Transformer`` (bidirectional) for one item: x [T, D] -> [T, D]."""

    def __init__(self, weights: Mapping[str, Array], n_heads: int, n_layers: int) -> None:
        """``weights``: float32 arrays keyed as the torch module's state dict (``blocks.0.ln1.weight`` ...)."""
        d = weights["norm.weight"].shape[0]
        if d % n_heads or (d // n_heads) % 2:
            raise ValueError(f"d_model {d} does not split into {n_heads} heads of even size")
        self.n_heads = n_heads
        self.head_dim = hd = d // n_heads
        scale = np.ones(3 * d, dtype=np.float32)
        scale[:d] = np.float32(1.0 / np.sqrt(hd))

        def t(name: str) -> Array:
            return np.ascontiguousarray(weights[name].T, dtype=np.float32)

        self.blocks: list[LiteBlock] = []
        for i in range(n_layers):
            p = f"blocks.{i}."
            self.blocks.append(LiteBlock(
                ln1_w=weights[p + "ln1.weight"], ln1_b=weights[p + "ln1.bias"],
                qkv_t=np.ascontiguousarray(weights[p + "attn.qkv.weight"].T * scale),
                qkv_b=weights[p + "attn.qkv.bias"] * scale,
                out_t=t(p + "attn.out.weight"), out_b=weights[p + "attn.out.bias"],
                ln2_w=weights[p + "ln2.weight"], ln2_b=weights[p + "ln2.bias"],
                ff1_t=t(p + "ff.0.weight"), ff1_b=weights[p + "ff.0.bias"],
                ff2_t=t(p + "ff.2.weight"), ff2_b=weights[p + "ff.2.bias"],
            ))
        self.norm_w = weights["norm.weight"]
        self.norm_b = weights["norm.bias"]
        self._cos, self._sin = rotary_tables(hd, 0)

    def tables(self, length: int) -> tuple[Array, Array]:
        """Rotary tables for positions [0, length), grown on demand (a position's angle does not depend on the
        table's size, so the cached prefix stays exact)."""
        if length > self._cos.shape[0]:
            self._cos, self._sin = rotary_tables(self.head_dim, max(length, 2 * self._cos.shape[0]))
        return self._cos[:length], self._sin[:length]

    def __call__(self, x: Array, valid: Array | None = None, window: int = 0) -> Array:
        """x [T, D]; ``valid`` [T] bool marks real keys (None = all); ``window`` > 0 attends block-locally when
        T > 2 * window (shorter: every query would see every key anyway), which needs every key valid."""
        if window < 0:
            raise ValueError(f"window must be >= 0, got {window}")
        t = x.shape[0]
        local = window > 0 and t > 2 * window
        key_bias = None
        if valid is not None and not bool(np.all(valid)):
            if local:
                raise ValueError("block-local attention needs every key valid")
            key_bias = np.where(valid, np.float32(0.0), np.float32(-np.inf))
        cos, sin = self.tables(t)
        x = np.asarray(x, dtype=np.float32)
        for blk in self.blocks:
            x = blk(x, self.n_heads, cos, sin, key_bias, window if local else 0)
        return layer_norm(x, self.norm_w, self.norm_b)
