"""Fast Griffin-Lim (audiopd.codec.phase): it inverts, converges towards a consistent magnitude, and FGLA's momentum
gets there sooner than plain Griffin-Lim."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from audiopd.codec.phase import fast_griffin_lim, istft, spectral_convergence, stft, unit

N_FFT, HOP, SR = 512, 128, 16000


def voiced(seconds: float = 0.5) -> torch.Tensor:
    """A gliding harmonic tone (120-180 Hz, 20 harmonics) with a little noise: speech-like structure."""
    t = np.arange(int(seconds * SR)) / SR
    f0 = 120 + 60 * t / seconds
    phase = 2 * np.pi * np.cumsum(f0) / SR
    y = sum(np.sin(k * phase) / k for k in range(1, 21))
    y = 0.3 * y / np.abs(y).max() + 0.003 * np.random.default_rng(0).standard_normal(len(t))
    return torch.from_numpy(y.astype(np.float32))


def random_phase(shape: torch.Size) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.exp(2j * torch.pi * torch.rand(shape, generator=g))


def test_zero_iterations_inverts_the_given_spectrum() -> None:
    y = voiced()
    spec = stft(y, N_FFT, HOP, torch.hann_window(N_FFT))
    out = fast_griffin_lim(spec.abs(), unit(spec), n_fft=N_FFT, hop=HOP, length=len(y), iters=0)
    assert out.shape == y.shape
    assert torch.allclose(out, y, atol=1e-4)


def test_iterations_approach_the_magnitude_and_momentum_gets_there_sooner() -> None:
    y = voiced()
    mag = stft(y, N_FFT, HOP, torch.hann_window(N_FFT)).abs()
    start = random_phase(mag.shape)

    def sc(iters: int, momentum: float) -> float:
        out = fast_griffin_lim(mag, start, n_fft=N_FFT, hop=HOP, length=len(y), iters=iters, momentum=momentum)
        return spectral_convergence(out, mag, N_FFT, HOP)

    none, plain, fgla = sc(0, 0.99), sc(16, 0.0), sc(16, 0.99)
    assert none > 0.5  # random phase: far from consistent
    assert plain < 0.6 * none
    assert fgla < 0.9 * plain
    assert sc(64, 0.99) < fgla


def test_batched_input_matches_one_at_a_time() -> None:
    y = torch.stack([voiced(), 0.5 * voiced()])
    mag = stft(y, N_FFT, HOP, torch.hann_window(N_FFT)).abs()
    start = random_phase(mag.shape)
    both = fast_griffin_lim(mag, start, n_fft=N_FFT, hop=HOP, length=y.shape[-1], iters=4)
    one = fast_griffin_lim(mag[1], start[1], n_fft=N_FFT, hop=HOP, length=y.shape[-1], iters=4)
    assert torch.allclose(both[1], one, atol=1e-5)


@pytest.mark.parametrize("kwargs, message", [
    ({"iters": -1}, "iters must be >= 0"),
    ({"momentum": 2.0}, "momentum must be in"),
    ({"length": 1000}, "do not fit"),
])
def test_bad_arguments_are_refused(kwargs, message) -> None:
    y = voiced(0.25)
    spec = stft(y, N_FFT, HOP, torch.hann_window(N_FFT))
    args = {"n_fft": N_FFT, "hop": HOP, "length": len(y), "iters": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        fast_griffin_lim(spec.abs(), unit(spec), **args)


@pytest.mark.parametrize("n_fft, hop, length", [(512, 128, 8000), (512, 128, 8000 - 77), (1024, 256, 256 * 9),
                                                 (1024, 256, 256 * 9 + 511), (400, 160, 3000)])
def test_istft_is_torchs_and_so_is_its_gradient(n_fft: int, hop: int, length: int) -> None:
    """The overlap-add ``istft`` (hop dividing n_fft) and its fallback (400/160) give ``torch.istft``'s samples and
    gradients, batch axes included."""
    window = torch.hann_window(n_fft)
    frames = length // hop + 1
    g = torch.Generator().manual_seed(length)
    spec = torch.complex(torch.randn(2, 3, n_fft // 2 + 1, frames, generator=g),
                         torch.randn(2, 3, n_fft // 2 + 1, frames, generator=g))
    ours_in, ref_in = spec.clone().requires_grad_(), spec.clone().requires_grad_()
    ours = istft(ours_in, n_fft, hop, window, length)
    ref = torch.istft(ref_in.reshape(6, *spec.shape[-2:]), n_fft, hop, n_fft, window=window, center=True,
                      length=length).reshape(2, 3, length)
    assert ours.shape == (2, 3, length)
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=1e-5)
    weights = torch.randn(2, 3, length, generator=g)
    (ours * weights).sum().backward()
    (ref * weights).sum().backward()
    torch.testing.assert_close(ours_in.grad, ref_in.grad, atol=1e-6, rtol=1e-5)
    y = voiced()[:length] if length <= 8000 else torch.randn(length, generator=g)
    torch.testing.assert_close(istft(stft(y, n_fft, hop, window), n_fft, hop, window, len(y)), y, atol=1e-5, rtol=0)


def test_scale_is_the_complex_times_real_product() -> None:
    from audiopd.codec.phase import scale

    g = torch.Generator().manual_seed(1)
    z = torch.complex(torch.randn(3, 5, generator=g), torch.randn(3, 5, generator=g))
    r = torch.rand(3, 5, generator=g)
    torch.testing.assert_close(scale(z, r), z * r)
    torch.testing.assert_close(scale(z.T, r.T), z.T * r.T)  # a transposed (non-contiguous) input too
    w = z.clone()
    out = scale(w, r, out=True)
    torch.testing.assert_close(w, z * r)
    assert out.data_ptr() == w.data_ptr()


def test_istft_refuses_a_window_that_cannot_be_inverted() -> None:
    window = torch.zeros(512)
    window[:64] = 1.0  # 64 non-zero samples, hop 128: gaps that no frame covers
    spec = torch.zeros(1, 257, 9, dtype=torch.complex64)
    with pytest.raises(ValueError, match="overlap-add is zero"):
        istft(spec, 512, 128, window, 1024)


@pytest.mark.parametrize("n_fft, hop", [(512, 128), (1024, 256), (400, 160)])
def test_frames_first_transforms_are_the_transposed_ones(n_fft: int, hop: int) -> None:
    """``frame_stft`` / ``frame_istft`` (frames first, what FGLA iterates on) are ``stft`` / ``istft`` transposed,
    batch axes included; ``frame_istft``'s gradient reaches its spectrum as ``istft``'s does."""
    from audiopd.codec.phase import frame_istft, frame_stft

    window = torch.hann_window(n_fft)
    g = torch.Generator().manual_seed(n_fft)
    y = torch.randn(2, 3, 20 * hop, generator=g)
    spec = stft(y.reshape(6, -1), n_fft, hop, window).reshape(2, 3, n_fft // 2 + 1, -1)
    torch.testing.assert_close(frame_stft(y, n_fft, hop, window), spec.transpose(-1, -2))
    ours_in = spec.transpose(-1, -2).contiguous().requires_grad_()
    ref_in = spec.clone().requires_grad_()
    ours = frame_istft(ours_in, n_fft, hop, window, y.shape[-1])
    ref = istft(ref_in, n_fft, hop, window, y.shape[-1])
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(ours, y, atol=1e-5, rtol=0)
    weights = torch.randn(ref.shape, generator=g)
    (ours * weights).sum().backward()
    (ref * weights).sum().backward()
    torch.testing.assert_close(ours_in.grad, ref_in.grad.transpose(-1, -2), atol=1e-6, rtol=1e-5)


def test_fgla_phase_is_the_plain_transcription_of_the_algorithm() -> None:
    """The frames-first, lerp-accelerated FGLA gives what the textbook loop in torch's own layout gives:
    ``c_n = STFT(iSTFT(mag * phase_{n-1}))``, ``t_n = c_n + alpha (c_n - c_{n-1})``, ``phase_n = t_n / |t_n|``."""
    from audiopd.codec.phase import fgla_phase

    y = voiced()
    window = torch.hann_window(N_FFT)
    mag = stft(y, N_FFT, HOP, window).abs()
    start = random_phase(mag.shape)
    phase, previous = start, None
    for _ in range(5):
        rebuilt = torch.stft(torch.istft(mag * phase, N_FFT, HOP, N_FFT, window=window, length=len(y)), N_FFT, HOP,
                             N_FFT, window=window, return_complex=True)
        accelerated = rebuilt if previous is None else rebuilt + 1.1 * (rebuilt - previous)
        previous = rebuilt
        phase = accelerated / accelerated.abs()
    ours = fgla_phase(mag, start, n_fft=N_FFT, hop=HOP, length=len(y), iters=5, momentum=1.1)
    assert ours.shape == mag.shape
    # float rounding, amplified by five iterations in the faintest bins: compare the spectra the phases make
    assert float(torch.linalg.norm(mag * (ours - phase)) / torch.linalg.norm(mag)) < 1e-5


def test_fgla_keeps_a_silent_bin_silent_and_its_gain_matches_istfts_own() -> None:
    """Where the estimate is exactly 0 (a silent input) the magnitude step leaves 0, as ``sgn`` does, never NaN;
    and the overlap-add gain FGLA builds once is the one every plain iSTFT divides by."""
    from audiopd.codec.phase import fgla_phase, frame_istft, frame_stft, ola_gain

    y = voiced()
    window = torch.hann_window(N_FFT)
    mag = stft(y, N_FFT, HOP, window).abs()
    silence = torch.zeros_like(y)
    start = random_phase(mag.shape)
    ours = fgla_phase(mag, start, n_fft=N_FFT, hop=HOP, length=len(y), iters=4, momentum=1.1)
    assert torch.isfinite(torch.view_as_real(ours)).all()
    quiet = fgla_phase(torch.zeros_like(mag), start, n_fft=N_FFT, hop=HOP, length=len(silence), iters=3,
                       momentum=1.1)
    assert torch.equal(quiet, torch.zeros_like(quiet))  # all-zero estimates: 0, not NaN
    spec = frame_stft(y, N_FFT, HOP, window)
    frames = spec.shape[-2]
    gain = ola_gain(window, N_FFT, HOP, frames, len(y))
    torch.testing.assert_close(frame_istft(spec, N_FFT, HOP, window, len(y), gain),
                               frame_istft(spec, N_FFT, HOP, window, len(y)))
    torch.testing.assert_close(frame_istft(spec, N_FFT, HOP, window, len(y)), y, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="overlap-add is zero"):
        ola_gain(torch.zeros(N_FFT), N_FFT, HOP, frames, len(y))
