"""The harmonic head's pieces (audiopd.codec.harmonic): the window lobe, the comb at a given F0, the magnitude model
and the phase that follows the harmonics, which starts fast Griffin-Lim far closer than a random phase."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from audiopd.codec.harmonic import (F0_MAX, F0_MIN, comb, f0_from_logit, f0_track, hann_lobe, harmonic_magnitude,
                                    refine_f0,
                                    harmonic_phase)
from audiopd.codec.phase import fast_griffin_lim, spectral_convergence, stft

SR, N_FFT, HOP = 22050, 1024, 256
BINS = N_FFT // 2 + 1


def test_hann_lobe_matches_the_windows_transform() -> None:
    w = torch.hann_window(N_FFT, dtype=torch.float64)
    spectrum = torch.fft.rfft(w, n=N_FFT * 8).abs()  # 8x zero padding: samples every 1/8 bin
    delta = torch.arange(0, 24) / 8.0
    want = spectrum[:24] / spectrum[0]
    assert torch.allclose(hann_lobe(delta), want.float(), atol=2e-3)
    assert hann_lobe(torch.tensor([1.0, -1.0])).tolist() == [0.5, 0.5]


def test_hann_lobe_is_the_closed_form_with_finite_gradients() -> None:
    d = torch.linspace(-30.0, 30.0, 60_001)
    far = d[((d.abs() - 1.0).abs() > 2e-3) & (d.abs() > 1e-6)]  # off the two 0/0s, where float32 cancels
    want = (torch.sinc(far.double()) / (1.0 - far.double() ** 2)).abs()
    assert torch.allclose(hann_lobe(far).double(), want, rtol=0, atol=2e-5)  # torch.sinc's float32 form: 1.1e-5
    # 0 and +-1 are removable 0/0s: the values are the limits and training's F0 gradient stays finite there
    at = torch.tensor([0.0, 1.0, -1.0, 1e-7, 0.999999], requires_grad=True)
    value = hann_lobe(at)
    value.sum().backward()
    assert value.detach().tolist()[:3] == [1.0, 0.5, 0.5] and torch.isfinite(at.grad).all()


def test_comb_peaks_at_every_harmonic() -> None:
    f0 = torch.full((1, 3), 10 * SR / N_FFT)  # exactly 10 bins apart
    c = comb(f0, bins=BINS, n_fft=N_FFT, sample_rate=SR)[0, :, 0]
    assert c.shape == (BINS,)
    assert torch.allclose(c[[10, 20, 200, 500]], torch.ones(4), atol=1e-3)
    assert c[15] < 0.01 and c[5] < 0.01


def test_magnitude_is_noise_alone_when_unvoiced() -> None:
    f0, env, noise = torch.full((1, 4), 150.0), torch.ones(1, BINS, 4), torch.full((1, BINS, 4), 0.1)
    assert torch.equal(harmonic_magnitude(f0, torch.zeros(1, 4), env, noise, n_fft=N_FFT, sample_rate=SR), noise)
    voiced = harmonic_magnitude(f0, torch.ones(1, 4), env, noise, n_fft=N_FFT, sample_rate=SR)
    assert voiced.max() > 1.0 and torch.all(voiced >= noise)


def test_f0_from_logit_stays_in_range() -> None:
    f0 = f0_from_logit(torch.tensor([-50.0, 0.0, 50.0]))
    assert f0[0] == pytest.approx(F0_MIN) and f0[2] == pytest.approx(F0_MAX)
    assert f0[1] == pytest.approx(math.sqrt(F0_MIN * F0_MAX), rel=1e-4)


def test_harmonic_phase_starts_griffin_lim_near_a_consistent_spectrum() -> None:
    t = np.arange(SR) / SR
    f0 = 150 + 30 * np.sin(2 * np.pi * 1.5 * t)  # a gliding voice, 1 s
    phase = 2 * np.pi * np.cumsum(f0) / SR
    y = 0.1 * sum(np.cos(k * phase) / k for k in range(1, 60) if k * 180 < SR / 2)
    y = torch.from_numpy(y[: len(y) // HOP * HOP].astype(np.float32))
    mag = stft(y, N_FFT, HOP, torch.hann_window(N_FFT)).abs()
    track = torch.from_numpy(np.interp(np.arange(mag.shape[-1]) * HOP, np.arange(len(t)), f0)).float()[None]
    start = harmonic_phase(track, bins=BINS, n_fft=N_FFT, hop=HOP, sample_rate=SR)[0]
    g = torch.Generator().manual_seed(0)
    rnd = torch.polar(torch.ones_like(mag), 2 * math.pi * torch.rand(mag.shape, generator=g))

    def sc(init: torch.Tensor, iters: int) -> float:
        out = fast_griffin_lim(mag, init, n_fft=N_FFT, hop=HOP, length=len(y), iters=iters)
        return spectral_convergence(out, mag, N_FFT, HOP)

    assert sc(start, 0) < 0.4 * sc(rnd, 0)
    assert sc(start, 8) < 0.8 * sc(rnd, 8)


def test_f0_track_follows_a_tone_and_marks_silence_unvoiced() -> None:
    t = np.arange(SR // 2) / SR  # a harmonic tone: Harvest, like speech, calls a bare sine unvoiced
    tone = sum(0.1 / k * np.sin(2 * np.pi * k * 220.0 * t) for k in range(1, 10))
    audio = np.concatenate([tone, np.zeros(SR // 2)]).astype(np.float32)
    frames = len(audio) // HOP + 1
    track = f0_track(audio, sample_rate=SR, hop=HOP, frames=frames, n_fft=N_FFT)
    assert track.shape == (frames,) and track.dtype == np.float32
    assert np.median(track[5:35]) == pytest.approx(220.0, rel=0.02)
    assert np.all(track[-20:] == 0)


def test_refine_f0_lines_the_comb_up_with_the_harmonics() -> None:
    """A start 4% off (a tracker's typical miss on low voices) moves to the F0 the harmonics have; unvoiced frames
    stay unvoiced and a track with none comes back as it was."""
    t = np.arange(SR) / SR
    audio = sum(np.sin(2 * np.pi * k * 130.0 * t) / k for k in range(1, 25)).astype(np.float32) * 0.1
    mag = torch.stft(torch.from_numpy(audio), N_FFT, HOP, N_FFT, window=torch.hann_window(N_FFT),
                     return_complex=True).abs().numpy()
    start = np.full(mag.shape[1], 130.0 * 1.04, np.float32)
    start[:3] = 0.0
    refined = refine_f0(mag, start, n_fft=N_FFT, sample_rate=SR)
    assert np.all(refined[:3] == 0)
    assert np.median(np.abs(refined[5:-5] / 130.0 - 1.0)) < 0.004
    silent = np.zeros(mag.shape[1], np.float32)
    assert np.array_equal(refine_f0(mag, silent, n_fft=N_FFT, sample_rate=SR), silent)


def test_harmonic_contrast_sees_harmonics_fade_into_noise() -> None:
    """A comb that stands out in every band scores high everywhere; the same comb with its upper harmonics buried
    in flat noise scores ~0 in those bands only; unvoiced frames count nowhere."""
    from audiopd.codec.harmonic import harmonic_contrast

    f0 = torch.full((1, 20), 150.0)
    clean = comb(f0, bins=N_FFT // 2 + 1, n_fft=N_FFT, sample_rate=SR)[0].numpy() + 1e-3
    freq = np.arange(N_FFT // 2 + 1) * SR / N_FFT
    buried = np.where(freq[:, None] > 8 * 150.0 + 75.0, 1.0, clean)  # harmonics above the 8th: noise only
    track = np.full(20, 150.0)
    track[:5] = 0.0
    a = harmonic_contrast(clean, track, n_fft=N_FFT, sample_rate=SR)
    b = harmonic_contrast(buried, track, n_fft=N_FFT, sample_rate=SR)
    assert set(a) == {"k1-3", "k4-7", "k8-15", "k16-40"} and min(a.values()) > 3.0
    assert b["k1-3"] == a["k1-3"] and b["k4-7"] == a["k4-7"] and abs(b["k16-40"]) < 1e-6
    assert harmonic_contrast(clean, np.zeros(20), n_fft=N_FFT, sample_rate=SR) == dict.fromkeys(a)
