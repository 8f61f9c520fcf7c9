"""A harmonic-plus-noise STFT magnitude, and a phase that follows the harmonics: the ``harmonic`` head of the fast
vocoder.

Why: a linear head from a 128-wide frame feature cannot draw the comb of harmonics at every F0, so the linear
head's magnitude smears them (on held-out speech its 0-1 kHz harmonic peaks are ~40% shallower than the
teacher's) and fast Griffin-Lim (``audiopd.codec.phase``) then finds no coherent phase. Here the comb is drawn
analytically from a predicted F0: the magnitude of frame t at bin f is
``voicing_t * envelope(f, t) * comb(f; F0_t) + noise(f, t)`` with ``comb`` the analysis window's main lobe at
every harmonic (Serra & Smith 1990's harmonic-plus-noise model, read in the STFT domain), and the starting phase
of bins near harmonic k is k times the running F0 phase, the phase a steady harmonic has at a frame's centre.
"""

from __future__ import annotations

import math

import torch

F0_MIN, F0_MAX = 50.0, 600.0  # Hz: the range the F0 head can say


def hann_lobe(delta: torch.Tensor) -> torch.Tensor:
    """|DTFT| of a Hann window, normalised to 1 at 0, at ``delta`` bins from its centre: sinc(d) / (1 - d^2)."""
    d = delta.abs()
    near_one = (d - 1.0).abs() < 1e-3
    safe = torch.where(near_one, torch.full_like(d, 2.0), d)  # the 0/0 at |d| = 1 has the limit 1/2
    value = torch.sinc(safe) / (1.0 - safe * safe)
    return torch.where(near_one, torch.full_like(d, 0.5), value).abs()


def comb(f0: torch.Tensor, *, bins: int, n_fft: int, sample_rate: int) -> torch.Tensor:
    """``[B, bins, T]``: the window's main lobe at each harmonic of ``f0`` ``[B, T]`` (Hz, > 0), the two harmonics
    nearest each bin summed, so lobes that overlap at a low F0 add up."""
    bin_hz = sample_rate / n_fft
    freq = torch.arange(bins, dtype=f0.dtype, device=f0.device)[None, :, None] * bin_hz
    f0 = f0[:, None, :]
    below = torch.floor(freq / f0).clamp(min=1.0)
    out = torch.zeros(())
    for k in (below, below + 1.0):
        out = out + hann_lobe((freq - k * f0) / bin_hz)
    return out


def harmonic_magnitude(f0: torch.Tensor, voicing: torch.Tensor, envelope: torch.Tensor, noise: torch.Tensor, *,
                       n_fft: int, sample_rate: int) -> torch.Tensor:
    """``voicing [B, T] * envelope [B, bins, T] * comb(f0) + noise [B, bins, T]`` (all non-negative)."""
    c = comb(f0, bins=envelope.shape[1], n_fft=n_fft, sample_rate=sample_rate)
    return voicing[:, None, :] * envelope * c + noise


def harmonic_phase(f0: torch.Tensor, *, bins: int, n_fft: int, hop: int, sample_rate: int) -> torch.Tensor:
    """Unit-complex ``[B, bins, T]``: each bin takes the phase of its nearest harmonic k, k times the F0 phase
    accumulated up to the frame's centre (a starting point for fast Griffin-Lim, not a final answer)."""
    # The F0 phase at frame t's centre: the running sum of 2 pi F0 over the hops before it (F0 held per hop).
    step = 2.0 * math.pi * f0 * (hop / sample_rate)
    running = torch.cumsum(step, dim=-1) - step
    index = torch.arange(bins, dtype=f0.dtype, device=f0.device)[None, :, None]
    k = torch.round(index * (sample_rate / n_fft) / f0[:, None, :]).clamp(min=1.0)
    # + pi per bin: the DFT's time origin is the frame's first sample, half a window before the centre.
    angle = torch.remainder(k * running[:, None, :] + math.pi * index, 2.0 * math.pi)
    return torch.polar(torch.ones_like(angle), angle)


def f0_from_logit(x: torch.Tensor) -> torch.Tensor:
    """A head's raw output -> F0 in [F0_MIN, F0_MAX] Hz, uniform in log frequency."""
    lo, hi = math.log(F0_MIN), math.log(F0_MAX)
    return torch.exp(lo + (hi - lo) * torch.sigmoid(x))


def f0_track(audio, *, sample_rate: int, hop: int, frames: int):
    """F0 in Hz (0 = unvoiced) at each STFT frame centre (sample t * hop) of ``audio``: WORLD's DIO refined by
    StoneMask (Morise et al. 2016), ``frames`` values, float32. The harmonic head's F0 target in training."""
    import numpy as np
    import pyworld

    x = np.asarray(audio, dtype=np.float64)
    f0, times = pyworld.dio(x, sample_rate, f0_floor=F0_MIN, f0_ceil=F0_MAX, frame_period=1000.0 * hop / sample_rate)
    f0 = pyworld.stonemask(x, f0, times, sample_rate)
    return np.pad(f0, (0, max(0, frames - len(f0))))[:frames].astype(np.float32)
