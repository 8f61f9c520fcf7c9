"""NumPy building blocks of the torch-free inference path: the few layers the voice, its mel refiner, the fast
vocoder and the checker's phone recogniser are made of, in float32, channels-last ([T, C] or [B, T, C]).

They mirror ``torch.nn``'s definitions (LayerNorm over the last axis, exact-erf GELU, zero-padded Conv1d with
PyTorch's weight layout [C_out, C_in / groups, K]), so weights load unchanged from the shipped safetensors; the
tests under tests/lite compare every network against its torch module.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

Array = np.ndarray


def load_weights(path: str | Path, prefix: str = "") -> dict[str, Array]:
    """A safetensors file as float32 arrays (the voices ship float16), optionally only the keys under ``prefix``
    (with it stripped). Integer tensors keep their dtype."""
    from safetensors.numpy import load_file

    out = {}
    for key, value in load_file(str(path)).items():
        if prefix and not key.startswith(prefix):
            continue
        name = key[len(prefix):]
        out[name] = value.astype(np.float32) if np.issubdtype(value.dtype, np.floating) else value
    return out


def sub(weights: Mapping[str, Array], prefix: str) -> dict[str, Array]:
    """The entries of ``weights`` under ``prefix`` ("encoder." ...), with the prefix stripped."""
    return {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}


def linear(x: Array, weight: Array, bias: Array | None = None) -> Array:
    """``torch.nn.functional.linear``: x [..., C_in] @ weight[C_out, C_in].T + bias."""
    y = x @ weight.T
    if bias is not None:
        y += bias
    return y


def layer_norm(x: Array, weight: Array | None, bias: Array | None, eps: float = 1e-5) -> Array:
    """LayerNorm over the last axis (biased variance, as torch)."""
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    y = centred / np.sqrt(var + eps)
    if weight is not None:
        y *= weight
    if bias is not None:
        y += bias
    return y


def erf(x: Array) -> Array:
    """Error function to ~3e-7 in float32 (the Chebyshev fit of Numerical Recipes' ``erfcc``): NumPy has none,
    and SciPy's import alone costs more than half a second of a cold start."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    r = 1.0 - t * np.exp(poly)
    return np.where(x >= 0, r, -r).astype(x.dtype, copy=False)


# GELU as relu(x) - |x|/2 erfc(|x|/sqrt2), erfc(z) ~ t poly(t) exp(-z^2) with t = 1/(1 + p z) (Abramowitz & Stegun
# 7.1.26, |error| <= 1.5e-7): GELU's 1/sqrt2 is folded into p and its 1/2 into the coefficients (highest first).
_GELU_P = np.float32(0.3275911 * 0.7071067811865476)
_GELU_A = tuple(np.float32(0.5 * a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_GELU_CHUNK = 1 << 16  # elements per pass: a chunk's temporaries stay in L2 instead of streaming through memory


def _gelu_into(x: Array, out: Array) -> None:
    a = np.minimum(np.abs(x), 10)  # beyond 10 the erfc term is 0 in float32; the clamp keeps inf * 0 out
    t = a * _GELU_P
    t += 1
    np.reciprocal(t, out=t)
    np.multiply(t, _GELU_A[0], out=out)
    for c in _GELU_A[1:]:
        out += c
        out *= t
    np.square(a, out=t)
    t *= -0.5
    np.exp(t, out=t)
    out *= t
    out *= a
    np.maximum(x, 0, out=t)
    np.subtract(t, out, out=out)


def gelu(x: Array) -> Array:
    """Exact GELU, x * Phi(x) (``torch.nn.GELU()``'s default), to ~5e-7 in float32.

    Evaluated in chunks with in-place passes: the plain ``0.5 * x * (1 + erf(x / sqrt2))`` made some thirty
    full-size temporaries and cost the phone recogniser more than all its matrix products.
    """
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    for s in range(0, flat.size, _GELU_CHUNK):
        _gelu_into(flat[s: s + _GELU_CHUNK], out[s: s + _GELU_CHUNK])
    return out.reshape(np.shape(x))


def relu(x: Array) -> Array:
    return np.maximum(x, 0, dtype=x.dtype)


def softmax(x: Array, axis: int = -1) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


def log_softmax(x: Array, axis: int = -1) -> Array:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def conv1d(x: Array, weight: Array, bias: Array | None = None, *, padding: int = 0, stride: int = 1,
           dilation: int = 1, groups: int = 1) -> Array:
    """``torch.nn.functional.conv1d`` on channels-last input: x [T, C_in] (or [B, T, C_in]) -> [T', C_out].

    Dense convolutions run as one GEMM over the unfolded input (im2col); depthwise ones (groups = C_in = C_out)
    as K multiply-adds of shifted views. Other groupings are not used by any shipped network.
    """
    batched = x.ndim == 3
    xb = x if batched else x[None]
    c_out, c_in_g, k = weight.shape
    b, t, c_in = xb.shape
    if padding:
        xb = np.pad(xb, ((0, 0), (padding, padding), (0, 0)))
    span = dilation * (k - 1) + 1
    t_out = (xb.shape[1] - span) // stride + 1
    if t_out <= 0:
        raise ValueError(f"input of {t} frames is too short for a kernel of {k} (dilation {dilation})")
    last = (t_out - 1) * stride + 1
    if groups == 1:
        cols = np.stack([xb[:, j * dilation: j * dilation + last: stride] for j in range(k)], axis=-1)
        y = cols.reshape(b, t_out, c_in * k) @ weight.reshape(c_out, c_in * k).T
    elif groups == c_in == c_out and c_in_g == 1:
        y = np.zeros((b, t_out, c_out), dtype=np.float32)
        for j in range(k):
            y += xb[:, j * dilation: j * dilation + last: stride] * weight[:, 0, j]
    else:
        raise NotImplementedError(f"conv1d with groups={groups} of {c_in} channels")
    if bias is not None:
        y += bias
    return y if batched else y[0]


def embedding(table: Array, ids: Array) -> Array:
    return table[np.asarray(ids, dtype=np.int64)]
