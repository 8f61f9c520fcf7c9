"""The checker's phone recogniser in NumPy: ``audiopd.checker.phones_torch.PhoneRecognizer`` for inference, on
the same artifact (``checkers/phones16k``), so the default ("fast") check of a clip never imports torch.

log-mel [T, n_mels] at 100 frames/s -> a stride-2 convolution + GELU -> ``layers`` pre-norm blocks (depthwise
convolution, GELU, pointwise linear; LayerNorm, feed-forward) -> LayerNorm, linear, log-softmax: [ceil(T/2), 40]
log-posteriors at 50 frames/s. Dropout is off at inference and is left out.

Weights are laid out for the GEMMs at load time: each linear layer is stored transposed ([C_in, C_out],
contiguous) and the input convolution as one [5 * n_mels, d_model] matrix over its unfolded input (a strided
view of the features: five consecutive frames are contiguous).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audiopd.checker.phones import (
    DEFAULT_RECOGNIZER,
    FRAME_S,
    RecognizerConfig,
    log_mel,
    open_artifact,
    to_16k,
    weight_shapes,
)
from audiopd.errors import ArtifactError
from audiopd.lite.nn import conv1d, gelu, layer_norm, load_weights, log_softmax

Array = np.ndarray
_IN_KERNEL, _IN_STRIDE, _IN_PAD = 5, 2, 2  # PhoneRecognizer.inp


@dataclass(frozen=True)
class _Block:
    norm1: tuple[Array, Array]
    dw_weight: Array  # [d, 1, K], torch's depthwise layout
    dw_bias: Array
    pw: tuple[Array, Array]  # ([d, d] transposed, bias)
    norm2: tuple[Array, Array]
    ff1: tuple[Array, Array]  # ([d, ffn], bias)
    ff2: tuple[Array, Array]  # ([ffn, d], bias)


def _lin(w: dict[str, Array], name: str) -> tuple[Array, Array]:
    return np.ascontiguousarray(w[name + ".weight"].T), w[name + ".bias"]


def _norm(w: dict[str, Array], name: str) -> tuple[Array, Array]:
    return w[name + ".weight"], w[name + ".bias"]


class PhoneRecognizer:
    """The NumPy recogniser: ``posteriors(audio, rate)`` as the torch one's, from the same state dict."""

    frame_s = FRAME_S

    def __init__(self, cfg: RecognizerConfig, weights: dict[str, Array]) -> None:
        """``weights``: the torch state dict as float32 arrays, keys and shapes exactly ``weight_shapes(cfg)``."""
        expected = weight_shapes(cfg)
        got = {k: tuple(v.shape) for k, v in weights.items()}
        if got != expected:
            missing = sorted(set(expected) - set(got))
            extra = sorted(set(got) - set(expected))
            wrong = sorted(k for k in set(got) & set(expected) if got[k] != expected[k])
            raise ValueError(f"weights do not fit the recogniser config: missing {missing[:4]}, unexpected "
                             f"{extra[:4]}, wrong shape {wrong[:4]}")
        w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()}
        self.cfg = cfg
        # The unfolded input is in (tap, channel) order: torch's weight [d, n_mels, K] -> [K * n_mels, d].
        self._inp = np.ascontiguousarray(w["inp.weight"].transpose(2, 1, 0).reshape(-1, cfg.d_model)), w["inp.bias"]
        self._blocks = [
            _Block(_norm(w, p + "norm1"), w[p + "dw.weight"], w[p + "dw.bias"], _lin(w, p + "pw"),
                   _norm(w, p + "norm2"), _lin(w, p + "ff.0"), _lin(w, p + "ff.2"))
            for p in (f"blocks.{i}." for i in range(cfg.layers))
        ]
        self._norm = _norm(w, "norm")
        self._out = _lin(w, "out")

    def _input_conv(self, feats: Array) -> Array:
        """The stride-2, kernel-5 input convolution as one GEMM over an im2col view of the padded features."""
        w, b = self._inp
        x = np.pad(feats, ((_IN_PAD, _IN_PAD), (0, 0)))
        t_out = (x.shape[0] - _IN_KERNEL) // _IN_STRIDE + 1
        # Output frame i reads padded frames 2i .. 2i+4, which lie contiguous in memory: row i of the unfolded
        # input is x.flat[2i * n_mels:][:K * n_mels], in (tap, channel) order.
        n_mels = x.shape[1]
        rows = np.lib.stride_tricks.as_strided(x, (t_out, _IN_KERNEL * n_mels), (_IN_STRIDE * n_mels * 4, 4),
                                               writeable=False)
        y = np.ascontiguousarray(rows) @ w
        y += b
        return y

    def forward(self, feats: Array) -> Array:
        """log-mel [T, n_mels] -> log-posteriors [ceil(T/2), NUM_CLASSES], float32."""
        feats = np.ascontiguousarray(feats, dtype=np.float32)
        if feats.ndim != 2 or feats.shape[1] != self.cfg.n_mels or feats.shape[0] < 1:
            raise ValueError(f"expected log-mel [T >= 1, {self.cfg.n_mels}], got {feats.shape}")
        x = gelu(self._input_conv(feats))
        pad = self.cfg.kernel // 2
        for blk in self._blocks:
            h = conv1d(layer_norm(x, *blk.norm1), blk.dw_weight, blk.dw_bias, padding=pad, groups=x.shape[1])
            h = gelu(h) @ blk.pw[0]
            h += blk.pw[1]
            x += h  # x is this pass's own array: the residual adds go in place
            h = layer_norm(x, *blk.norm2) @ blk.ff1[0]
            h += blk.ff1[1]
            h = gelu(h) @ blk.ff2[0]
            h += blk.ff2[1]
            x += h
        logits = layer_norm(x, *self._norm) @ self._out[0]
        logits += self._out[1]
        return log_softmax(logits).astype(np.float32, copy=False)

    def posteriors(self, audio: Array, sample_rate: int) -> Array:
        """Log-posteriors [T', NUM_CLASSES] (float32) of one clip; one frame per ``frame_s`` seconds."""
        return self.forward(log_mel(to_16k(audio, sample_rate), self.cfg.n_mels))


def load_recognizer(name: str | Path = DEFAULT_RECOGNIZER) -> PhoneRecognizer:
    """Load a recogniser by name (``checkers/<name>``) or directory; verified as the torch loader does (checksums,
    kind, format version, rate, phone set, config keys, and exactly the state dict's keys and shapes), cached so a
    process reads it once."""
    return _load(name)


@functools.lru_cache(maxsize=4)
def _load(name: str | Path) -> PhoneRecognizer:  # keyed on the name itself: () and (DEFAULT,) share one entry
    d, cfg = open_artifact(name)
    try:
        return PhoneRecognizer(cfg, load_weights(d / "model.safetensors"))
    except ValueError as exc:
        raise ArtifactError(f"{d}: {exc}") from None
