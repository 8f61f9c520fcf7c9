"""The fast decoder's postfilter (``audiopd.codec.postfilter``): harmonics sharpen, the mel stays."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from mel_fixtures import TINY_FAST, chirp

from audiopd.codec.harmonic import comb, harmonic_contrast
from audiopd.codec.mel import MelAnalyzer, MelCodecConfig, mel_basis
from audiopd.codec.postfilter import FineStructureSharpener

CFG = MelCodecConfig(name="x")
BINS = CFG.n_fft // 2 + 1


def voiced_frames(f0: float = 140.0, frames: int = 12, noise: float = 0.3) -> torch.Tensor:
    """``[1, bins, T]``: a comb at ``f0`` over a sloping envelope, with flat noise between the harmonics."""
    f = torch.full((1, frames), f0)
    tilt = torch.exp(-torch.arange(BINS, dtype=torch.float32) / 150.0)[None, :, None]
    return tilt * (comb(f, bins=BINS, n_fft=CFG.n_fft, sample_rate=CFG.sample_rate) + noise)


def sharpener(gamma: float) -> FineStructureSharpener:
    return FineStructureSharpener(torch.from_numpy(mel_basis(CFG)), gamma)


def test_gamma_one_is_the_identity() -> None:
    mag = voiced_frames()
    assert sharpener(1.0)(mag) is mag


def test_harmonics_stand_out_more_and_the_mel_stays() -> None:
    mag = voiced_frames()
    out = sharpener(3.0)(mag)
    assert out.shape == mag.shape and bool(torch.isfinite(out).all()) and bool((out >= 0).all())
    track = np.full(mag.shape[-1], 140.0)
    before = harmonic_contrast(mag[0].numpy(), track, n_fft=CFG.n_fft, sample_rate=CFG.sample_rate)
    after = harmonic_contrast(out[0].numpy(), track, n_fft=CFG.n_fft, sample_rate=CFG.sample_rate)
    assert all(after[k] > before[k] + 0.3 for k in ("k1-3", "k4-7", "k8-15"))
    basis = torch.from_numpy(mel_basis(CFG))

    def mel_change(x: torch.Tensor) -> float:
        return float(((basis @ x).log() - (basis @ mag).log()).abs().mean())

    # The plain power law, frame energy kept, tilts the whole envelope; the sharpener keeps each band's level (the
    # bands' triangles overlap and the lowest are narrower than this comb's spacing, so only nearly: on real speech
    # the decoded log-mel moved by ~0.02 nats, codecs/mel22k/README.md).
    power = mag ** 3.0
    power = power * ((mag ** 2).sum(1, keepdim=True) / (power ** 2).sum(1, keepdim=True)).sqrt()
    assert mel_change(out) < 0.2 and mel_change(out) < 0.25 * mel_change(power)


def test_bins_above_the_mel_are_left_alone_and_scale_carries_through() -> None:
    mag = voiced_frames()
    top = int(np.ceil(CFG.fmax * CFG.n_fft / CFG.sample_rate)) + 1
    out = sharpener(3.0)(mag)
    assert torch.equal(out[:, top:], mag[:, top:])
    # homogeneous: a louder input gives the same output, louder (the peak normalisation keeps float32 in range)
    torch.testing.assert_close(sharpener(3.0)(mag * 1e-4), out * 1e-4, rtol=1e-4, atol=1e-12)
    silent = torch.zeros_like(mag)
    assert torch.equal(sharpener(3.0)(silent), silent)


@pytest.mark.parametrize("gamma", [0.5, 9.0])
def test_out_of_range_gamma_is_refused(gamma: float) -> None:
    with pytest.raises(ValueError, match="gamma must be in"):
        sharpener(gamma)


def test_the_decoder_applies_it_at_decode_only() -> None:
    """With ``fast.sharpen`` the decoder's output changes, its training spectrum does not, and the weights are the
    same keys (an artifact's sharpen is a decoding setting, not a new model)."""
    from audiopd.codec.mel_vocoders import new_fast

    def model(sharpen: float):
        cfg = MelCodecConfig(name="fx", fast=dataclasses.replace(TINY_FAST, head="harmonic", sharpen=sharpen))
        torch.manual_seed(0)
        return new_fast(cfg).eval()

    plain, sharp = model(1.0), model(3.0)
    assert plain.state_dict().keys() == sharp.state_dict().keys()
    mel = torch.from_numpy(MelAnalyzer(CFG)(chirp(0.3))).T[None]
    with torch.inference_mode():
        assert torch.equal(plain.spectrum(mel), sharp.spectrum(mel))
        a, b = plain.decode_spectrum(mel), sharp.decode_spectrum(mel)
        torch.testing.assert_close(b / b.abs().clamp(min=1e-8), a / a.abs().clamp(min=1e-8), atol=1e-4, rtol=0)
        assert not torch.allclose(a.abs(), b.abs())
        assert plain(mel).shape == sharp(mel).shape


def test_an_exponent_per_bin_rises_with_frequency() -> None:
    from audiopd.codec.postfilter import exponents

    flat = exponents(3.0, 0.0, 4000.0, bins=BINS, sample_rate=CFG.sample_rate)
    assert torch.equal(flat, torch.full((BINS,), 3.0))
    rising = exponents(2.5, 4.0, 4000.0, bins=BINS, sample_rate=CFG.sample_rate)
    hz = torch.linspace(0, CFG.sample_rate / 2, BINS)
    assert rising[0] == 2.5 and bool((rising[hz >= 4000] == 4.0).all())
    assert bool((rising.diff() >= 0).all())
    # per bin: low harmonics sharpen as at 2.5, high ones as at 4 (compare each band with the flat exponents)
    mag = voiced_frames()
    track = np.full(mag.shape[-1], 140.0)

    def contrast(gamma):
        out = FineStructureSharpener(torch.from_numpy(mel_basis(CFG)), gamma)(mag)
        return harmonic_contrast(out[0].numpy(), track, n_fft=CFG.n_fft, sample_rate=CFG.sample_rate)

    low, high, both = contrast(2.5), contrast(4.0), contrast(rising)
    assert abs(both["k1-3"] - low["k1-3"]) < abs(both["k1-3"] - high["k1-3"])
    assert abs(both["k16-40"] - high["k16-40"]) < abs(both["k16-40"] - low["k16-40"])
    with pytest.raises(ValueError, match="one exponent or one per bin"):
        FineStructureSharpener(torch.from_numpy(mel_basis(CFG)), torch.full((7,), 2.0))
