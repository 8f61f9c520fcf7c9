"""Discriminators for the fast vocoder's adversarial phase, sized for CPU training, and their least-squares losses.

Reconstruction losses leave an iSTFT vocoder's fine structure (noise between harmonics, phase coherence) averaged
and buzzy; Vocos (Siuzdak 2023) reaches its quality by adding HiFi-GAN's multi-period discriminator (Kong et al.
2020: the waveform folded at periods 2, 3, 5, 7 and 11, judged by 2-D convolutions) and a multi-resolution
spectrogram discriminator, with least-squares GAN losses and an L1 feature-matching loss on every discriminator
layer. The channel counts here are an eighth of HiFi-GAN's (and half of Vocos's MRD's); even so a step of the
adversarial phase costs about ten reconstruction-only steps on one CPU thread (1.3 s against 0.1-0.15 s, batch
8 x 32 frames).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

PERIODS = (2, 3, 5, 7, 11)
RESOLUTIONS = ((512, 128), (1024, 256), (2048, 512))  # (n_fft, hop), as the reconstruction loss's

Judgement = tuple[torch.Tensor, list[torch.Tensor]]  # (logits [B, N], feature maps of every layer)


def _judge(layers: nn.ModuleList, post: nn.Module, x: torch.Tensor) -> Judgement:
    """Leaky-ReLU convolutions, then the logit layer; every layer's output kept for feature matching."""
    fmaps = []
    for layer in layers:
        x = F.leaky_relu(layer(x), 0.1)
        fmaps.append(x)
    x = post(x)
    fmaps.append(x)
    return x.flatten(1), fmaps


class PeriodDiscriminator(nn.Module):
    """The waveform folded into ``[B, 1, S / p, p]`` and judged by strided 2-D convolutions along time."""

    def __init__(self, period: int, channels: tuple[int, ...] = (8, 32, 64, 128)) -> None:
        super().__init__()
        self.period = period
        layers, c_in = [], 1
        for c in channels:
            layers.append(weight_norm(nn.Conv2d(c_in, c, (5, 1), (3, 1), padding=(2, 0))))
            c_in = c
        layers.append(weight_norm(nn.Conv2d(c_in, c_in, (5, 1), 1, padding=(2, 0))))
        self.layers = nn.ModuleList(layers)
        self.post = weight_norm(nn.Conv2d(c_in, 1, (3, 1), 1, padding=(1, 0)))

    def forward(self, y: torch.Tensor) -> Judgement:
        b, s = y.shape
        x = F.pad(y, (0, (-s) % self.period), mode="reflect").view(b, 1, -1, self.period)
        return _judge(self.layers, self.post, x)


class SpectrogramDiscriminator(nn.Module):
    """A compressed magnitude spectrogram ``[B, 1, bins, frames]`` judged by 2-D convolutions (Vocos's MRD)."""

    def __init__(self, n_fft: int, hop: int, channels: int = 16) -> None:
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft), persistent=False)
        c = channels
        self.layers = nn.ModuleList([
            weight_norm(nn.Conv2d(1, c, (7, 5), padding=(3, 2))),
            weight_norm(nn.Conv2d(c, c, (5, 3), (2, 1), padding=(2, 1))),
            weight_norm(nn.Conv2d(c, c, (5, 3), (2, 1), padding=(2, 1))),
            weight_norm(nn.Conv2d(c, c, (5, 3), (2, 1), padding=(2, 1))),
            weight_norm(nn.Conv2d(c, c, (3, 3), padding=(1, 1))),
        ])
        self.post = weight_norm(nn.Conv2d(c, 1, (3, 3), padding=(1, 1)))

    def forward(self, y: torch.Tensor) -> Judgement:
        spec = torch.stft(y, self.n_fft, self.hop, self.n_fft, window=self.window, center=True, return_complex=True)
        x = spec.abs().clamp(min=1e-7).pow(0.3).unsqueeze(1)  # power-compressed, as the complex loss's
        return _judge(self.layers, self.post, x)


class Discriminators(nn.Module):
    """Every period and resolution discriminator; ``forward`` returns one judgement each."""

    def __init__(self, periods: tuple[int, ...] = PERIODS,
                 resolutions: tuple[tuple[int, int], ...] = RESOLUTIONS) -> None:
        super().__init__()
        self.members = nn.ModuleList([PeriodDiscriminator(p) for p in periods]
                                     + [SpectrogramDiscriminator(n, h) for n, h in resolutions])

    def forward(self, y: torch.Tensor) -> list[Judgement]:
        return [m(y) for m in self.members]


def discriminator_loss(real: list[Judgement], fake: list[Judgement]) -> torch.Tensor:
    """Least squares: real judged 1, generated judged 0, summed over discriminators."""
    return sum(((1 - r) ** 2).mean() + (f ** 2).mean() for (r, _), (f, _) in zip(real, fake))


def generator_losses(real: list[Judgement], fake: list[Judgement]) -> tuple[torch.Tensor, torch.Tensor]:
    """(adversarial, feature matching): generated judged 1; L1 between every layer's features of real and generated
    audio (the real ones are constants here), each layer's mean, summed."""
    adv = sum(((1 - f) ** 2).mean() for f, _ in fake)
    fm = sum((a.detach() - b).abs().mean() for (_, ra), (_, fa) in zip(real, fake) for a, b in zip(ra, fa))
    return adv, fm
