"""A voice's parallel-path networks in NumPy: the frame conditioner, the masked codec transformer and the mel refiner,
loaded from the shipped artifact with the checks of ``audiopd.model.voice.load_voice`` (version, kind, checksums,
exact weight keys), for one item at a time.

Mirrors ``FrameConditioner`` (encode, durations_from_log, length regulation), ``MaskedCodecTransformer`` (hidden,
level_logits, greedy, forward(frames=...)) and ``MelRefiner``; the serial model's weights are ignored (that path stays
torch-only). Everything runs in float32: float16 weights are widened once, at load, and every projection is stored
transposed so each is one GEMM (tests/lite/test_voice_nets.py compares all of it against the torch modules).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from audiopd import artifacts
from audiopd.checker.config import CheckerConfig
from audiopd.errors import ArtifactError
from audiopd.lite.nn import conv1d, gelu, layer_norm, relu, sub
from audiopd.lite.transformer import LiteTransformer, transformer_shapes
from audiopd.model.config import ModelConfig
from audiopd.model.info import VoiceInfo, _checker_config, read_voice
from audiopd.model.refiner_config import (
    REFINER_CONFIG,
    REFINER_WEIGHTS,
    RefinerConfig,
    read_refiner_config,
    refiner_input,
)

Array = np.ndarray
FLOAT_DTYPES = {"F16": np.float16, "F32": np.float32}  # what a voice ships (model.voice.WEIGHT_DTYPES)


def read_tensors(path: Path, shapes: dict[str, tuple[int, ...]], *, ignore: str | None, what: str) -> dict[str, Array]:
    """The float32 tensors ``shapes`` names from safetensors ``path``, checked against it from the header before any
    data is read: float dtypes other than float16/32, missing or unexpected keys (those under ``ignore`` excepted)
    and wrong shapes raise ArtifactError, prefixed ``what``."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="np") as f:
            header = {k: (f.get_slice(k).get_dtype(), tuple(f.get_slice(k).get_shape())) for k in f.keys()}
            odd = sorted({dt for dt, _ in header.values() if dt.startswith(("F", "BF")) and dt not in FLOAT_DTYPES})
            if odd:
                raise ArtifactError(f"{what}: weights in {', '.join(odd)}; a voice ships float32 or float16")
            keys = {k for k in header if ignore is None or not k.startswith(ignore)}
            missing, unexpected = set(shapes) - keys, keys - set(shapes)
            if missing or unexpected:
                raise ArtifactError(f"{what} (missing {len(missing)}, unexpected {len(unexpected)})")
            for k, shape in shapes.items():
                if header[k][1] != shape or header[k][0] not in FLOAT_DTYPES:
                    raise ArtifactError(f"{what} ({k}: {header[k][0]} {list(header[k][1])}, expected {list(shape)})")
            return {k: f.get_tensor(k).astype(np.float32) for k in shapes}
    except (OSError, ValueError, SafetensorError) as exc:  # unreadable or truncated file
        raise ArtifactError(f"{what} ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None


def voice_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """State-dict keys and shapes of ``VoiceModel``'s conditioner and masked model (not its serial model)."""
    d, ns, q, c, k = cfg.d_model, cfg.num_speakers, cfg.num_codebooks, cfg.cardinality, cfg.duration_kernel
    dc = cfg.duration_channels
    return {
        "conditioner.encoder.embed.weight": (cfg.num_symbols, d), "conditioner.encoder.speaker.weight": (ns, d),
        **transformer_shapes("conditioner.encoder.layers.", d, cfg.ff_mult, cfg.encoder_layers),
        "conditioner.duration.conv1.weight": (dc, d, k), "conditioner.duration.conv1.bias": (dc,),
        "conditioner.duration.ln1.weight": (dc,), "conditioner.duration.ln1.bias": (dc,),
        "conditioner.duration.conv2.weight": (dc, dc, k), "conditioner.duration.conv2.bias": (dc,),
        "conditioner.duration.ln2.weight": (dc,), "conditioner.duration.ln2.bias": (dc,),
        "conditioner.duration.proj.weight": (1, dc), "conditioner.duration.proj.bias": (1,),
        "conditioner.progress.weight": (d, 32), "conditioner.progress.bias": (d,),
        "conditioner.speaker.weight": (ns, d),
        "masked.code_embed.weight": (q * (c + 1), d), "masked.target_level.weight": (q, d),
        "masked.cond_proj.weight": (d, d), "masked.cond_proj.bias": (d,),
        **transformer_shapes("masked.body.", d, cfg.ff_mult, cfg.masked_layers),
        "masked.head_weight": (q, c, d), "masked.head_bias": (q, c),
    }


def sinusoid(values: Array, dim: int) -> Array:
    """``layers.sinusoid``: float32 features [..., dim] of scalar ``values`` (within-phoneme progress)."""
    half = dim // 2
    freqs = np.exp(np.float32(-math.log(1000.0)) * np.arange(half, dtype=np.float32) / np.float32(half))
    ang = values.astype(np.float32)[..., None] * freqs * np.float32(math.pi)
    return np.concatenate((np.sin(ang), np.cos(ang)), axis=-1)


class LiteVoice:
    """The NumPy counterpart of a loaded ``VoiceModel`` for the parallel path (batch 1, arrays [T, D])."""

    def __init__(self, cfg: ModelConfig, info: VoiceInfo, weights: dict[str, Array]) -> None:
        cfg.validate()
        self.cfg = cfg
        self.info = info
        self.artifact_name = ""
        self.artifact_dir: Path | None = None  # where it was loaded from (None: built in code)
        self.checker_config: CheckerConfig | None = None
        self.training_record: dict[str, Any] = {}
        self.refiner: LiteRefiner | None = None
        self.num_codebooks = q = cfg.num_codebooks
        self.cardinality = c = cfg.cardinality
        self.mask_id = c
        w = weights
        self._embed = w["conditioner.encoder.embed.weight"]
        self._enc_speaker = w["conditioner.encoder.speaker.weight"]
        self._encoder = LiteTransformer(sub(w, "conditioner.encoder.layers."), cfg.n_heads, cfg.encoder_layers)
        self._dur = sub(w, "conditioner.duration.")
        self._progress_t = np.ascontiguousarray(w["conditioner.progress.weight"].T)
        self._progress_b = w["conditioner.progress.bias"]
        self._speaker = w["conditioner.speaker.weight"]
        self._code_embed = w["masked.code_embed.weight"]
        self._offsets = (np.arange(q, dtype=np.int64) * (c + 1))[:, None]  # one table, per-level offsets
        self._target = w["masked.target_level.weight"]
        self._cond_t = np.ascontiguousarray(w["masked.cond_proj.weight"].T)
        self._cond_b = w["masked.cond_proj.bias"]
        self._body = LiteTransformer(sub(w, "masked.body."), cfg.n_heads, cfg.masked_layers)
        # Every head side by side, [D, Q * C]: a run of consecutive levels (every decoder's case) is a column slice,
        # so all requested heads are one GEMM without a copy.
        self._heads_t = np.ascontiguousarray(w["masked.head_weight"].reshape(q * c, cfg.d_model).T)
        self._heads_b = np.ascontiguousarray(w["masked.head_bias"].reshape(q * c))

    @classmethod
    def load(cls, name_or_dir: str | Path) -> LiteVoice:
        """A voice by name or directory, verified as ``load_voice`` verifies it (ArtifactError otherwise)."""
        directory = artifacts.find_artifact("voices", name_or_dir)
        cfg, info, mcfg = read_voice(directory)
        sums = artifacts.read_checksums(directory)  # verified by read_voice
        checker = _checker_config(directory, sums)
        refiner = LiteRefiner.load(directory, voices=info.voices, sums=sums)
        path = directory / "model.safetensors"
        if not path.is_file():
            raise ArtifactError(f"{directory}: model.safetensors is missing")
        mcfg.validate()
        weights = read_tensors(path, voice_shapes(mcfg), ignore="serial.",
                               what=f"{directory}: weights do not match the config")
        voice = cls(mcfg, info, weights)
        voice.artifact_name, voice.artifact_dir = directory.name, directory
        voice.checker_config = checker
        voice.refiner = refiner
        voice.training_record = dict(cfg["training"]) if isinstance(cfg.get("training"), dict) else {}
        return voice

    # -- conditioner ---------------------------------------------------------------------------------------------

    def encode(self, ids: Array, speaker: int) -> tuple[Array, Array]:
        """Phoneme ids [L] (0 = padding) -> (states [L, D], predicted log(1 + frames) [L], 0 at padding)."""
        ids = np.asarray(ids)
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer) or not bool((ids != 0).any()):
            raise ValueError("expected phoneme ids [L] (integers) with at least one non-padding token")
        if int(ids.max()) >= self.cfg.num_symbols or int(ids.min()) < 0:
            raise ValueError(f"phoneme ids must lie in [0, {self.cfg.num_symbols})")
        self._check_speaker(speaker)
        mask = ids != 0
        full = bool(mask.all())
        x = self._embed[ids] + self._enc_speaker[speaker]
        x = self._encoder(x, None if full else mask)
        m = None if full else mask[:, None].astype(np.float32)
        if m is not None:
            x *= m
        return x, self._log_durations(x, m, mask)

    def _log_durations(self, states: Array, m: Array | None, mask: Array) -> Array:
        """``DurationPredictor``: conv, ReLU, LayerNorm twice, then a linear to log(1 + frames)."""
        p, pad = self._dur, self.cfg.duration_kernel // 2
        x = layer_norm(relu(conv1d(states, p["conv1.weight"], p["conv1.bias"], padding=pad)),
                       p["ln1.weight"], p["ln1.bias"])
        if m is not None:
            x *= m
        x = layer_norm(relu(conv1d(x, p["conv2.weight"], p["conv2.bias"], padding=pad)), p["ln2.weight"], p["ln2.bias"])
        out = x @ p["proj.weight"][0] + p["proj.bias"][0]
        return (out * mask).astype(np.float32)

    @staticmethod
    def durations(log_dur: Array, speed: float = 1.0) -> Array:
        """``durations_from_log`` for one item: int64 frames [L]; an all-zero item gets 1 frame on its first token."""
        if speed <= 0:
            raise ValueError(f"speed must be > 0, got {speed}")
        x = np.maximum(np.expm1(np.asarray(log_dur, dtype=np.float32).reshape(-1)), np.float32(0.0))
        frames = np.round(x / np.float32(speed)).astype(np.int64)
        if frames.size and frames.sum() == 0:
            frames[0] = 1
        return frames

    def frames(self, states: Array, durations: Array, speaker: int) -> Array:
        """``FrameConditioner.frames``: states [L, D] upsampled by ``durations`` [L], plus the within-phoneme progress
        features and the speaker -> [T, D] float32 (T = sum of durations)."""
        dur = np.asarray(durations, dtype=np.int64).reshape(-1)
        if dur.shape[0] != states.shape[0] or (dur < 0).any():
            raise ValueError(f"expected {states.shape[0]} non-negative durations, got {dur.tolist()}")
        self._check_speaker(speaker)
        ends = np.cumsum(dur)
        t = int(ends[-1]) if ends.size else 0
        pos = np.arange(t, dtype=np.int64)
        idx = np.minimum(np.searchsorted(ends, pos, side="right"), max(dur.shape[0] - 1, 0))
        start = (ends - dur)[idx]
        progress = (pos - start).astype(np.float32) / np.maximum(dur[idx], 1).astype(np.float32)
        x = states[idx] + (sinusoid(progress, 32) @ self._progress_t + self._progress_b)
        x += self._speaker[speaker]
        return x.astype(np.float32, copy=False)

    def condition(self, ids: Array, speaker: int, speed: float = 1.0,
                  durations: Array | None = None) -> tuple[Array, Array]:
        """(frames [T, D], durations [L] int64): predicted durations scaled by 1/``speed`` and by the speaker's
        ``VoiceInfo.duration_scale`` unless given."""
        states, log_dur = self.encode(ids, speaker)
        if durations is None and self.info.duration_scale:
            speed = self.info.scaled_speeds(speed, [speaker])[0]  # the torch model's float32 division
        dur = self.durations(log_dur, speed) if durations is None else np.asarray(durations, dtype=np.int64)
        return self.frames(states, dur, speaker), dur

    def _check_speaker(self, speaker: int) -> None:
        if not 0 <= int(speaker) < self.cfg.num_speakers:
            raise ValueError(f"speaker ids must lie in [0, {self.cfg.num_speakers})")

    # -- masked codec transformer --------------------------------------------------------------------------------

    def hidden(self, codes: Array, frames: Array, target_level: int, window: int = 0) -> Array:
        """codes [Q, T] int (``mask_id`` where masked), frames [T, D] -> hidden states [T, D]; ``window`` > 0
        attends block-locally."""
        codes = np.asarray(codes)
        q, c = self.num_codebooks, self.cardinality
        if codes.ndim != 2 or codes.shape[0] != q or codes.shape[1] != frames.shape[0]:
            raise ValueError(f"expected codes [{q}, {frames.shape[0]}], got {list(codes.shape)}")
        if codes.size and (int(codes.min()) < 0 or int(codes.max()) > c):
            raise ValueError(f"codes must lie in [0, {c}] ({c} = mask)")
        if not 0 <= target_level < q:
            raise ValueError(f"target level {target_level} out of range [0, {q})")
        x = self._code_embed[codes.astype(np.int64) + self._offsets].sum(0)
        x += frames @ self._cond_t + self._cond_b
        x += self._target[target_level]
        return self._body(x, None, window)

    def _heads(self, levels: Sequence[int]) -> tuple[Array, Array, list[int]]:
        """The requested heads' weights [D, n * C] and biases [n * C] (a view for consecutive levels)."""
        levels = [int(v) for v in levels]
        if not levels or any(not 0 <= v < self.num_codebooks for v in levels):
            raise ValueError(f"levels must be a non-empty list in [0, {self.num_codebooks}), got {levels}")
        c = self.cardinality
        if levels == list(range(levels[0], levels[0] + len(levels))):
            cols = slice(levels[0] * c, (levels[0] + len(levels)) * c)
            return self._heads_t[:, cols], self._heads_b[cols], levels
        cols_i = np.concatenate([np.arange(v * c, (v + 1) * c) for v in levels])
        return self._heads_t[:, cols_i], self._heads_b[cols_i], levels

    def logits(self, codes: Array, frames: Array, levels: Sequence[int], window: int = 0,
               rows: Array | None = None) -> Array:
        """One decoding pass (``MaskedCodecTransformer.forward``), target level min(levels): logits
        [len(levels), T, C]; with ``rows`` (bool [T]) only those frames' heads run -> [N, len(levels), C]."""
        w, b, levels = self._heads(levels)
        h = self.hidden(codes, frames, min(levels), window)
        n, c = len(levels), self.cardinality
        if rows is not None:
            h = h[np.asarray(rows, dtype=bool)]
        out = h @ w
        out += b
        out = out.reshape(h.shape[0], n, c)
        return out if rows is not None else out.transpose(1, 0, 2)

    def greedy(self, codes: Array, frames: Array, levels: Sequence[int], window: int = 0, chunk: int = 512) -> Array:
        """``logits(...).argmax(-1)`` [len(levels), T] int64, the heads run ``chunk`` frames at a time so the
        logits of a long pass never sit in memory whole (they stay in cache)."""
        w, b, levels = self._heads(levels)
        h = self.hidden(codes, frames, min(levels), window)
        t, n, c = h.shape[0], len(levels), self.cardinality
        out = np.empty((t, n), dtype=np.int64)
        for s in range(0, t, max(int(chunk), 1)):
            z = h[s : s + chunk] @ w
            z += b
            out[s : s + chunk] = z.reshape(-1, n, c).argmax(-1)
        return np.ascontiguousarray(out.T)


# -- mel refiner -----------------------------------------------------------------------------------------------------

class LiteRefiner:
    """``MelRefiner``: log-mel [T, n_mels] of one speaker -> the input plus its learnt correction."""

    def __init__(self, cfg: RefinerConfig, weights: dict[str, Array]) -> None:
        self.cfg = cfg
        self.w = weights

    @staticmethod
    def shapes(cfg: RefinerConfig) -> dict[str, tuple[int, ...]]:
        d, k = cfg.dim, cfg.kernel
        out = {"inp.weight": (d, cfg.n_mels, k), "inp.bias": (d,), "speaker.weight": (len(cfg.voices), d),
               "out.weight": (cfg.n_mels, d, k), "out.bias": (cfg.n_mels,)}
        for i in range(cfg.layers):
            out.update({f"body.{i}.weight": (d, d, k), f"body.{i}.bias": (d,),
                        f"norms.{i}.weight": (d,), f"norms.{i}.bias": (d,)})
        return out

    @classmethod
    def load(cls, directory: str | Path, *, voices: tuple[str, ...] | None, sums: dict[str, str],
             own_weights: bool = True) -> LiteRefiner | None:
        """``model.refiner.load_refiner``'s checks: None without refiner.yaml; both files listed in ``sums``
        (verified SHA256SUMS), its speakers ``voices`` (None: any) and, with ``own_weights``, its voice_sha256 the
        listed digest of model.safetensors."""
        directory = Path(directory)
        cfg = read_refiner_config(directory, voices=voices, sums=sums, own_weights=own_weights)
        if cfg is None:
            return None
        weights = read_tensors(directory / REFINER_WEIGHTS, cls.shapes(cfg), ignore=None,
                               what=f"{directory}: {REFINER_WEIGHTS} does not match {REFINER_CONFIG}")
        return cls(cfg, weights)

    def refine(self, mel: Array, speaker: int) -> Array:
        """One log-mel [T, n_mels] of ``speaker`` (an index of ``cfg.voices``) -> float32 [T, n_mels]."""
        m = refiner_input(mel, self.cfg, speaker)
        if m.shape[0] == 0:
            return m
        w, pad = self.w, self.cfg.kernel // 2
        h = conv1d(m, w["inp.weight"], w["inp.bias"], padding=pad) + w["speaker.weight"][speaker]
        for i in range(self.cfg.layers):
            # GroupNorm(1, dim): one mean and variance over the whole [T, dim] item, then a per-channel affine.
            mean = h.mean()
            var = np.mean(np.square(h - mean))
            g = (h - mean) / np.sqrt(var + np.float32(1e-5)) * w[f"norms.{i}.weight"] + w[f"norms.{i}.bias"]
            h = h + conv1d(gelu(g.astype(np.float32)), w[f"body.{i}.weight"], w[f"body.{i}.bias"], padding=pad)
        out = m + conv1d(gelu(h), w["out.weight"], w["out.bias"], padding=pad)
        return np.ascontiguousarray(out, dtype=np.float32)

    def for_speaker(self, speaker: int) -> Callable[[Array], Array]:
        """``mel -> refined mel`` for one speaker (as ``MelRefiner.for_speaker``)."""
        def apply(mel: Array) -> Array:
            return self.refine(mel, speaker)

        return apply
