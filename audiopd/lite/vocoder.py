"""The mel codec's ``fast`` decoder in NumPy: codes -> log-mel -> ConvNeXt trunk -> harmonic head -> postfilter ->
fast Griffin-Lim -> iSTFT, what ``audiopd.codec.mel.MelCodec`` with ``decoder="fast"`` computes, without torch.

A one-off ``audiopd say`` spends ~2.5 s importing torch and ~10 ms per second of audio in this decoder, so the
torch-free path reuses the codec's own torch-free parts (``MelCodec.decode_mel``, ``mel.smooth_time``, its config
and artifact checks) and ports only what ``audiopd.codec.mel_vocoders.FastVocoder`` runs at inference: the net
(Vocos, Siuzdak 2023), ``audiopd.codec.harmonic`` (a harmonic-plus-noise magnitude and a harmonic starting phase,
Serra & Smith 1990), ``audiopd.codec.postfilter`` and ``audiopd.codec.phase`` (``audiopd.lite.phase``).

Arrays are channels-last / frames-first throughout (``[T, C]``, spectra ``[T, bins]``), float32 where torch is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from audiopd import artifacts, timing
from audiopd.codec.mel import MelCodec, load_artifact, replace_config, smooth_time, unknown_decoder
from audiopd.codec.mel_config import FAST, MelCodecConfig, mel_basis
from audiopd.codec.registry import read_codec_config
from audiopd.errors import ArtifactError
from audiopd.lite import LiteUnsupported, nn
from audiopd.lite.phase import CHUNK, Stft, fgla_phase

Array = np.ndarray
Refine = Callable[[Array], Array]

F0_MIN, F0_MAX = 50.0, 600.0  # Hz: audiopd.codec.harmonic's range (not imported: that module imports torch)


def exp32(x: Array) -> Array:
    """float32 ``exp`` rounded from float64: torch's (SLEEF's) float32 exp agreed with it on 99% of inputs, NumPy's
    own on 61%, and the harmonic phase needs F0 to the bit (``LiteFastVocoder.harmonic_angle``)."""
    return np.exp(x.astype(np.float64)).astype(np.float32)


def sigmoid(x: Array) -> Array:
    """``torch.sigmoid`` in float32, its steps rounded where torch rounds them: 1 / (1 + exp(-x))."""
    return np.float32(1.0) / (exp32(-x) + np.float32(1.0))


def hann_lobe(delta: Array) -> Array:
    """``harmonic.hann_lobe``: |DTFT| of a Hann window at ``delta`` bins, sinc(d) / (1 - d^2), 1/2 at |d| = 1."""
    d = np.abs(delta)
    near_one = np.abs(d - 1.0) < 1e-3
    safe = np.where(near_one, np.float32(2.0), d)
    value = np.sinc(safe) / (1.0 - safe * safe)
    return np.abs(np.where(near_one, np.float32(0.5), value))


class Postfilter:
    """``postfilter.FineStructureSharpener`` on ``[T, bins]``: each bin's magnitude raised to its exponent inside
    the frame's peak-normalised spectrum, every mel band rescaled back to its level (so the mel is kept)."""

    def __init__(self, cfg: MelCodecConfig, eps: float = 1e-30) -> None:
        fast, bins = cfg.fast, cfg.n_fft // 2 + 1
        if fast.sharpen_high:  # postfilter.exponents: low at 0 Hz rising linearly to high at high_hz
            freq = np.linspace(0.0, cfg.sample_rate / 2, bins, dtype=np.float32)
            rise = np.minimum(freq / np.float32(fast.sharpen_high_hz), np.float32(1.0))
            gamma = np.float32(fast.sharpen) + np.float32(fast.sharpen_high - fast.sharpen) * rise
        else:
            gamma = np.full(bins, fast.sharpen, dtype=np.float32)
        basis = mel_basis(cfg)  # [bands, bins]
        cover = basis.sum(0)
        self.gamma = gamma.astype(np.float32)
        self.eps = np.float32(eps)
        self.basis_t = np.ascontiguousarray(basis.T)  # [bins, bands]
        self.covered = cover > 0
        self.spread_t = np.ascontiguousarray(basis / np.maximum(cover, self.eps))  # [bands, bins]

    def __call__(self, mag: Array) -> Array:
        peak = np.maximum(mag.max(axis=-1, keepdims=True), self.eps)  # float32 headroom for mag ** gamma
        unit = mag / peak
        sharp = unit ** self.gamma
        ratio = (unit @ self.basis_t) / np.maximum(sharp @ self.basis_t, self.eps)  # [T, bands]
        return np.where(self.covered, sharp * (ratio @ self.spread_t) * peak, mag)


class LiteFastVocoder:
    """``FastVocoder`` (harmonic head) at inference: log-mel ``[T, n_mels]`` -> float32 audio ``[T * hop]``."""

    def __init__(self, cfg: MelCodecConfig, weights: dict[str, Array]) -> None:
        fast = cfg.fast
        self.w, self.layers, self.kernel = weights, fast.layers, fast.kernel
        self.n_fft, self.hop, self.sample_rate = cfg.n_fft, cfg.hop, cfg.sample_rate
        self.bins = cfg.n_fft // 2 + 1
        self.phase_iters, self.phase_momentum = fast.phase_iters, fast.phase_momentum
        self.postfilter = Postfilter(cfg) if fast.sharpens else None
        self.plan = Stft(cfg.n_fft, cfg.hop)
        # the harmonic head's per-bin constants, in torch's float32 arithmetic (harmonic.comb / harmonic_phase)
        self.bin_hz = cfg.sample_rate / cfg.n_fft
        index = np.arange(self.bins, dtype=np.float32)
        self.freq = index * np.float32(self.bin_hz)  # each bin's frequency, Hz
        self.pi_index = index * np.float32(math.pi)
        self.log_f0 = (math.log(F0_MIN), math.log(F0_MAX))

    # -- the net
    def features(self, mel: Array) -> Array:
        """The head's output ``[T, n_fft + 4]`` (``FastVocoder.features``, channels-last)."""
        w, pad = self.w, self.kernel // 2
        with timing.span(timing.CODEC_NET):
            x = nn.conv1d(mel, w["embed.weight"], w["embed.bias"], padding=pad)
            x = nn.layer_norm(x, w["norm.weight"], w["norm.bias"], eps=1e-6)
            for i in range(self.layers):
                b = f"blocks.{i}."
                y = nn.conv1d(x, w[b + "dwconv.weight"], w[b + "dwconv.bias"], padding=pad, groups=x.shape[-1])
                y = nn.layer_norm(y, w[b + "norm.weight"], w[b + "norm.bias"], eps=1e-6)
                y = nn.linear(nn.gelu(nn.linear(y, w[b + "pwconv1.weight"], w[b + "pwconv1.bias"])),
                              w[b + "pwconv2.weight"], w[b + "pwconv2.bias"])
                y *= w[b + "gamma"]
                x = x + y  # ConvNeXt's residual (Liu et al. 2022), layer-scaled
            x = nn.layer_norm(x, w["final_norm.weight"], w["final_norm.bias"], eps=1e-6)
            return nn.linear(x, w["head.weight"], w["head.bias"])

    # -- the harmonic head
    def harmonic_params(self, x: Array) -> tuple[Array, Array]:
        """F0 ``[T]`` (Hz, uniform in log frequency between F0_MIN and F0_MAX) and the voicing probability ``[T]``
        from the head's output ``x`` (``FastVocoder.harmonic_params``; envelope and noise stay in ``x``)."""
        lo, hi = self.log_f0
        f0 = exp32(np.float32(lo) + np.float32(hi - lo) * sigmoid(x[:, -2]))
        return f0, sigmoid(x[:, -1])

    def comb(self, f0: Array) -> Array:
        """``harmonic.comb``: ``[T, bins]``, the window's main lobe at the two harmonics of ``f0`` nearest each bin."""
        f0 = f0[:, None]
        below = np.maximum(np.floor(self.freq / f0), np.float32(1.0))
        bin_hz = np.float32(self.bin_hz)
        out = hann_lobe((self.freq - below * f0) / bin_hz)
        out += hann_lobe((self.freq - (below + np.float32(1.0)) * f0) / bin_hz)
        return out

    def running_phase(self, f0: Array) -> Array:
        """The F0 phase at each frame's centre ``[T]``: the sum of 2 pi F0 over the hops before it."""
        step = np.float32(2.0 * math.pi) * f0 * np.float32(self.hop / self.sample_rate)
        # torch's CPU cumsum accumulates float32 in double: the high harmonics' phase (k up to ~200) keeps every bit
        return np.cumsum(step, dtype=np.float64).astype(np.float32) - step

    def harmonic_angle(self, f0: Array, running: Array) -> Array:
        """``harmonic.harmonic_phase``'s angle ``[T, bins]``: each bin's nearest harmonic k times the running F0
        phase, plus pi per bin (the DFT's origin is the frame's first sample), in [0, 2 pi). Float32 in torch's
        order: at k ~ 100 the angle reaches ~1e6 rad in 20 s, where float32 rounding is the phase."""
        k = np.maximum(np.round(self.freq / f0[:, None]), np.float32(1.0))
        return np.remainder(k * running[:, None] + self.pi_index, np.float32(2.0 * math.pi))

    def spectrum(self, x: Array, *, sharpen: bool = True, closing: bool = False) -> tuple[Array, Array]:
        """The head's output ``x`` ``[T, outputs]`` -> the magnitude ``[T, bins]`` (postfiltered when ``sharpen``
        and the config asks for it) and the starting phase (unit complex64) that decoding synthesises; with
        ``closing``, one more frame, a copy of the last (``mel_vocoders.with_closing_frame``: the centred iSTFT is
        then exactly ``T * hop`` long).

        Frame blocks of ``CHUNK`` keep the ~40 elementwise passes over ``[T, bins]`` inside the cache."""
        frames, bins = x.shape[0], self.bins
        f0, voiced = self.harmonic_params(x)
        running = self.running_phase(f0)
        mag = np.empty((frames + closing, bins), dtype=np.float32)
        phase = np.empty((frames + closing, bins), dtype=np.complex64)
        clip = np.float32(5.0)  # exp keeps envelope and noise positive; the clip keeps a diverging net finite
        for i in range(0, frames, CHUNK):
            rows = slice(i, min(i + CHUNK, frames))
            with timing.span(timing.CODEC_HARMONIC):
                envelope = np.exp(np.minimum(x[rows, :bins], clip))
                noise = np.exp(np.minimum(x[rows, bins:2 * bins], clip))
                m = voiced[rows, None] * envelope * self.comb(f0[rows]) + noise
                angle = self.harmonic_angle(f0[rows], running[rows])
                phase.real[rows], phase.imag[rows] = np.cos(angle), np.sin(angle)
            if sharpen and self.postfilter is not None:
                with timing.span(timing.CODEC_POSTFILTER):
                    m = self.postfilter(m)
            mag[rows] = m
        if closing:
            mag[-1], phase[-1] = mag[-2], phase[-2]
        return mag, phase

    # -- synthesis
    def __call__(self, mel: Array) -> Array:
        """Log-mel ``[T, n_mels]`` -> float32 audio ``[T * hop]`` (``FastVocoder.forward`` for one item)."""
        mag, phase = self.spectrum(self.features(np.ascontiguousarray(mel, dtype=np.float32)), closing=True)
        length = (mag.shape[0] - 1) * self.hop
        with timing.span(timing.CODEC_PHASE):
            spec = fgla_phase(self.plan, mag, phase, length=length, iters=self.phase_iters,
                              momentum=self.phase_momentum)
        with timing.span(timing.CODEC_ISTFT):
            return self.plan.istft(spec, length).astype(np.float32, copy=False)


def _weights(cfg: MelCodecConfig, directory: Path) -> dict[str, Array]:
    """The fast vocoder's weights with ``load_fast``'s checks: the file exists and its keys and shapes are exactly
    the network's (strict, as ``load_state_dict``)."""
    if not cfg.fast.weights_file:
        raise ArtifactError(f"mel codec {cfg.name!r} has no fast vocoder weights")
    path = directory / cfg.fast.weights_file
    if not path.is_file():
        raise ArtifactError(f"mel codec {cfg.name!r}: {path} is missing")
    fast, outputs = cfg.fast, cfg.n_fft + 2 + (2 if cfg.fast.head == "harmonic" else 0)
    want = {"embed.weight": (fast.dim, cfg.n_mels, fast.kernel), "embed.bias": (fast.dim,),
            "head.weight": (outputs, fast.dim), "head.bias": (outputs,)}
    for norm in ("norm", "final_norm"):
        want |= {f"{norm}.weight": (fast.dim,), f"{norm}.bias": (fast.dim,)}
    for i in range(fast.layers):
        b = f"blocks.{i}."
        want |= {b + "dwconv.weight": (fast.dim, 1, fast.kernel), b + "dwconv.bias": (fast.dim,),
                 b + "norm.weight": (fast.dim,), b + "norm.bias": (fast.dim,), b + "gamma": (fast.dim,),
                 b + "pwconv1.weight": (fast.intermediate, fast.dim), b + "pwconv1.bias": (fast.intermediate,),
                 b + "pwconv2.weight": (fast.dim, fast.intermediate), b + "pwconv2.bias": (fast.dim,)}
    weights = nn.load_weights(path)
    got = {k: tuple(v.shape) for k, v in weights.items()}
    if got != want:
        wrong = sorted(k for k in want.keys() | got.keys() if got.get(k) != want.get(k))
        raise ArtifactError(f"{path} does not fit the fast vocoder of {cfg.name!r}: {', '.join(wrong[:8])}")
    return weights


class LiteMelDecoder:
    """Codes ``[Q', T]`` -> float32 audio by the mel codec's ``fast`` decoder, torch-free."""

    def __init__(self, codec: MelCodec, vocoder: LiteFastVocoder) -> None:
        self.codec = codec
        self.cfg: MelCodecConfig = codec.cfg
        self.vocoder = vocoder
        self.name: str = codec.name
        self.sample_rate: int = codec.sample_rate
        self.frame_rate: float = codec.frame_rate
        self.num_codebooks: int = codec.num_codebooks
        self.cardinality: int = codec.cardinality
        self.token_fingerprint: str = codec.token_fingerprint
        self.decoder: str = FAST
        # the codec's own blur, what torch decodes a speaker with when the voice sets neither a blur nor a refiner
        self.smooth_frames: float = codec.cfg.smooth_frames

    @classmethod
    def load(cls, name_or_dir: str | Path = "mel22k", *, decoder: str | None = None) -> LiteMelDecoder:
        """A shipped mel codec by name, or its directory, with ``load_codec``'s checks (kind, format version,
        SHA256SUMS) and its fast vocoder's weights. ``decoder``: None = the codec's default; a decoder the codec
        lacks is an ``ArtifactError`` (as ``load_codec``), one it has but NumPy cannot run (``hq``, a fast vocoder
        with another head than ``harmonic``, a codec of another kind) ``audiopd.lite.synth.LiteUnsupported``, so
        that a caller can hand it to torch."""
        directory, raw = read_codec_config(name_or_dir)
        if raw["kind"] != "mel":
            raise LiteUnsupported(f"codec {directory.name!r} is of kind {raw['kind']!r}: only a mel codec decodes "
                               "without torch")
        artifacts.verify_checksums(directory)
        codec = load_artifact(directory, raw)  # validates the config, its format version included
        name = decoder or codec.cfg.default_decoder
        if name not in codec.decoders:
            raise ArtifactError(unknown_decoder(codec, name))
        if name != FAST or codec.cfg.fast.head != "harmonic":
            raise LiteUnsupported(f"decoder {name!r} of codec {codec.name!r} needs torch (NumPy runs the fast decoder "
                               "with the harmonic head)")
        return cls(codec, LiteFastVocoder(codec.cfg, _weights(codec.cfg, Path(directory))))

    def decode(self, codes: Array, *, refine: Refine | None = None, smooth_frames: float = 0.0) -> Array:
        """Codes ``[Q', T]`` (``1 <= Q' <= Q``) -> float32 audio ``[T * hop]``: the codewords' log-mel, ``refine``
        (a voice's mel refiner for one speaker; None = none), a Gaussian blur of ``smooth_frames`` (sigma, frames),
        then the fast vocoder, as ``MelCodec.refined(refine).smoothed(smooth_frames).decode(codes[None])[0]``."""
        c = np.asarray(codes)
        if c.ndim != 2 or not 1 <= c.shape[0] <= self.num_codebooks:
            raise ValueError(f"expected codes [Q', T] with 1 <= Q' <= {self.num_codebooks}, got {tuple(c.shape)}")
        if c.size and (c.min() < 0 or c.max() >= self.cardinality):
            raise ValueError(f"codes out of range [0, {self.cardinality})")
        if c.shape[1] == 0:
            return np.zeros(0, dtype=np.float32)
        if float(smooth_frames) != self.cfg.smooth_frames:
            replace_config(self.cfg, smooth_frames=float(smooth_frames))  # the codec's own bounds on the blur
        with timing.span(timing.CODEC_LOOKUP):
            mel = self.codec.decode_mel(c.astype(np.int64))
        if refine is not None:
            with timing.span(timing.CODEC_REFINE):
                mel = np.asarray(refine(mel))  # cast after the blur, as MelCodec.vocode
        with timing.span(timing.CODEC_LOOKUP):
            mel = smooth_time(mel, float(smooth_frames))
        with timing.span(timing.CODEC_VOCODER):
            return self.vocoder(mel)
