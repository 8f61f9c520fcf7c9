"""audiopd.lite.vocoder against the torch mel codec's ``fast`` decoder (codecs/mel22k): the audio, stage by stage.

Why the audio matches to ~45-65 dB and not to float rounding: the harmonic head's starting phase at harmonic k is k
times an F0 phase summed over the utterance (~1e5 rad at k ~ 100 within a second), so a 1e-6 relative difference in
the net's F0 (float32 GEMMs summed in another order) moves the high harmonics' starting phase by up to ~0.1 rad, and
Griffin-Lim's 12 iterations at momentum 1.1 amplify it. Torch differs from itself about as much when its mel moves
by one float32 ulp. From torch's own net output the rest of the decoder matches to ~85-100 dB.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from audiopd.artifacts import find_artifact, write_checksums
from audiopd.codec import load_codec
from audiopd.codec.harmonic import comb, harmonic_phase
from audiopd.codec.mel_vocoders import postfilter, with_closing_frame
from audiopd.codec.phase import fgla_phase, istft, scale, stft, unit
from audiopd.errors import ArtifactError
from audiopd.lite.phase import Stft, fast_griffin_lim, hann_window
from audiopd.lite.phase import fgla_phase as lite_fgla
from audiopd.lite.vocoder import LiteMelDecoder, Postfilter

SR, N_FFT, HOP = 22050, 1024, 256


def snr_db(ref: np.ndarray, got: np.ndarray) -> float:
    ref = ref.astype(np.float64)
    return float(10 * np.log10(np.sum(ref ** 2) / max(np.sum((ref - got) ** 2), 1e-30)))


def voiced(seconds: float, f0: float, seed: int) -> np.ndarray:
    """A gliding harmonic tone under a syllable-rate envelope, with a little noise: speech-like mel frames."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    phase = 2 * np.pi * np.cumsum(f0 + 0.3 * f0 * np.sin(2 * np.pi * 1.5 * t)) / SR
    y = sum(np.sin(k * phase) / k for k in range(1, 30)) * (0.55 + 0.45 * np.sin(2 * np.pi * 3 * t))
    return (0.3 * y / np.abs(y).max() + 0.01 * rng.standard_normal(len(t))).astype(np.float32)


@pytest.fixture(scope="module")
def codec():
    return load_codec("mel22k", decoder="fast")


@pytest.fixture(scope="module")
def lite() -> LiteMelDecoder:
    return LiteMelDecoder.load("mel22k")


@pytest.fixture(scope="module")
def net(codec):
    return codec._vocoder("fast").module


@pytest.fixture(scope="module")
def codes(codec) -> np.ndarray:
    return codec.encode(voiced(1.0, 140.0, seed=0))[0]


@pytest.fixture(scope="module")
def mel(codec, codes) -> np.ndarray:
    return codec.decode_mel(codes)


def as_torch(mel: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(mel).T[None]  # [1, n_mels, T]


def test_the_decoder_describes_the_codec(codec, lite) -> None:
    for name in ("name", "sample_rate", "frame_rate", "num_codebooks", "cardinality", "token_fingerprint", "decoder"):
        assert getattr(lite, name) == getattr(codec, name), name
    assert codec.decoder == "fast" == codec.cfg.default_decoder  # what mel22k decodes with by default


def test_decoded_audio_matches_torch(codec, lite, codes) -> None:
    higher = codec.encode(voiced(0.6, 230.0, seed=1))[0][:8]  # another voice, its 8 coarsest levels only
    for grid in (codes, higher):
        ref = codec.smoothed(0.0).decode(grid[None])[0]
        got = lite.decode(grid)
        assert got.dtype == np.float32 and got.shape == ref.shape == (grid.shape[1] * HOP,)
        snr = snr_db(ref, got)
        print(f"decode Q={grid.shape[0]} T={grid.shape[1]}: SNR {snr:.1f} dB, max |diff| "
              f"{np.abs(ref - got).max():.2e} (peak {np.abs(ref).max():.2f})")
        assert snr > 40.0


def test_refiner_and_blur_match_torch(codec, lite, codes) -> None:
    def refine(m: np.ndarray) -> np.ndarray:  # a stand-in for a voice's mel refiner: any [T, n_mels] map
        return 0.92 * m + 0.05 * np.linspace(-1.0, 1.0, m.shape[1], dtype=np.float32)

    for fn, blur in ((refine, 0.7), (None, 0.7), (refine, 0.0)):
        ref = codec.refined(fn).smoothed(blur).decode(codes[None])[0]
        got = lite.decode(codes, refine=fn, smooth_frames=blur)
        snr = snr_db(ref, got)
        print(f"decode refine={fn is not None} smooth_frames={blur}: SNR {snr:.1f} dB, "
              f"max |diff| {np.abs(ref - got).max():.2e}")
        assert got.shape == ref.shape and snr > 40.0
    assert snr_db(codec.decode(codes[None])[0], lite.decode(codes)) < 30  # the codec's own default blur is 0.7


def test_the_net_matches_torch(lite, net, mel) -> None:
    with torch.inference_mode():
        ref = net.features(as_torch(mel))[0].T.numpy()
    got = lite.vocoder.features(mel)
    assert got.shape == ref.shape
    assert np.abs(got - ref).max() < 1e-5 * np.abs(ref).max() + 1e-5


def test_from_torchs_net_output_the_rest_matches_to_rounding(lite, net, mel) -> None:
    voc = lite.vocoder
    with torch.inference_mode():
        x = net.features(as_torch(mel))[0].T.numpy().copy()
        f0 = net.harmonic_params(as_torch(mel))[0][0].numpy()
        ref = net(as_torch(mel))[0].numpy()
    assert np.mean(voc.harmonic_params(x)[0] == f0) > 0.95  # F0 to the bit on nearly every frame
    mag, phase = voc.spectrum(x, closing=True)
    length = (mag.shape[0] - 1) * HOP
    got = voc.plan.istft(lite_fgla(voc.plan, mag, phase, length=length, iters=voc.phase_iters,
                                   momentum=voc.phase_momentum), length)
    snr = snr_db(ref, got)
    print(f"head, postfilter, Griffin-Lim and iSTFT from torch's net output: SNR {snr:.1f} dB")
    assert snr > 70.0


def test_the_harmonic_head_matches_torch(lite, net, mel) -> None:
    voc = lite.vocoder
    with torch.inference_mode():
        f0, _, _, _ = net.harmonic_params(as_torch(mel))
        spec, _, _ = net.harmonic_spectrum(as_torch(mel))
        sharpened = net.decode_spectrum(as_torch(mel))
        ref_comb = comb(f0, bins=voc.bins, n_fft=N_FFT, sample_rate=SR)[0].T.numpy()
        ref_phase = harmonic_phase(f0, bins=voc.bins, n_fft=N_FFT, hop=HOP, sample_rate=SR)[0].T.numpy()
    x = voc.features(mel)
    got_f0, _ = voc.harmonic_params(x)
    assert np.abs(got_f0 / f0[0].numpy() - 1).max() < 1e-5
    mag, phase = voc.spectrum(x, sharpen=False)
    ref_mag = spec[0].abs().T.numpy()
    assert np.abs(mag - ref_mag).max() < 1e-4 * ref_mag.max()
    sharp, _ = voc.spectrum(x)
    ref_sharp = sharpened[0].abs().T.numpy()
    assert np.abs(sharp - ref_sharp).max() < 1e-4 * ref_sharp.max()
    # given torch's F0, the comb and the starting phase are torch's to float rounding (angles of ~1e6 rad included)
    f = f0[0].numpy()
    np.testing.assert_allclose(voc.comb(f), ref_comb, atol=1e-6)
    angle = voc.harmonic_angle(f, voc.running_phase(f))
    assert np.abs(np.angle(ref_phase * np.exp(-1j * angle))).max() < 1e-5
    # and from its own F0 the phase of the low harmonics, where the speech is, stays close
    low = np.abs(np.angle(ref_phase * np.conj(phase)))[:, : 1000 * N_FFT // SR]
    assert low.max() < 1e-3


def test_the_postfilter_matches_torch(codec, lite) -> None:
    mag = np.exp(np.random.default_rng(0).normal(-2.0, 1.5, size=(40, N_FFT // 2 + 1))).astype(np.float32)
    ref = postfilter(codec.cfg)(torch.from_numpy(mag.T.copy())).numpy().T
    got = Postfilter(codec.cfg)(mag)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-7 * ref.max())


def test_stft_and_istft_match_torch() -> None:
    window = torch.hann_window(N_FFT)
    np.testing.assert_allclose(hann_window(N_FFT), window.numpy(), atol=1e-7)
    y = voiced(0.5, 180.0, seed=2)
    plan = Stft(N_FFT, HOP)
    ref = stft(torch.from_numpy(y), N_FFT, HOP, window).numpy().T
    got = plan.stft(y)
    assert got.dtype == np.complex64 and got.shape == ref.shape
    assert np.abs(got - ref).max() < 1e-5 * np.abs(ref).max()
    length = (ref.shape[0] - 1) * HOP
    back = istft(torch.from_numpy(ref.T.copy()), N_FFT, HOP, window, length).numpy()
    np.testing.assert_allclose(plan.istft(ref, length), back, atol=1e-6)


def test_griffin_lim_matches_torch(lite, net, mel) -> None:
    voc = lite.vocoder
    with torch.inference_mode():
        spec = with_closing_frame(net.decode_spectrum(as_torch(mel)))
        mag, length = spec.abs(), (spec.shape[-1] - 1) * HOP
        phase = fgla_phase(mag, unit(spec), n_fft=N_FFT, hop=HOP, iters=voc.phase_iters,
                           momentum=voc.phase_momentum, length=length, window=net.window)
        ref = istft(scale(phase, mag), N_FFT, HOP, net.window, length)[0].numpy()
    got = fast_griffin_lim(voc.plan, mag[0].T.numpy(), unit(spec)[0].T.numpy(), length=length,
                           iters=voc.phase_iters, momentum=voc.phase_momentum)
    snr = snr_db(ref, got)
    print(f"Griffin-Lim ({voc.phase_iters} iterations) from torch's spectrum: SNR {snr:.1f} dB")
    assert voc.phase_iters == 12 and snr > 70.0


def test_codes_and_blur_are_checked(lite) -> None:
    with pytest.raises(ValueError, match="out of range"):
        lite.decode(np.full((16, 5), 1024))
    with pytest.raises(ValueError, match="expected codes"):
        lite.decode(np.zeros((17, 5), np.int64))
    with pytest.raises(ArtifactError, match="smooth_frames"):
        lite.decode(np.zeros((16, 5), np.int64), smooth_frames=9.0)
    assert lite.decode(np.zeros((16, 0), np.int64)).shape == (0,)
    # torch's reflect padding refuses 1-2 frames; numpy reflects again and still gives T * hop samples
    assert lite.decode(np.zeros((16, 2), np.int64)).shape == (2 * HOP,)


def test_decoders_numpy_cannot_run_are_handed_back(lite) -> None:
    from audiopd.lite.synth import LiteUnsupported

    assert lite.decoder == "fast" and lite.smooth_frames == 0.7  # the codec's own blur, for voices without one
    with pytest.raises(LiteUnsupported, match="needs torch"):
        LiteMelDecoder.load("mel22k", decoder="hq")
    with pytest.raises(LiteUnsupported, match="only a mel codec"):
        LiteMelDecoder.load("world16k")
    with pytest.raises(ArtifactError, match="no decoder 'nope'"):
        LiteMelDecoder.load("mel22k", decoder="nope")


def test_the_artifact_is_checked(tmp_path) -> None:
    src = find_artifact("codecs", "mel22k")
    bad = tmp_path / "bad"
    shutil.copytree(src, bad)
    weights = bad / "fast.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="checksum"):
        LiteMelDecoder.load(bad)
    shutil.copy(src / "fast.safetensors", weights)
    config = bad / "config.yaml"
    config.write_text(config.read_text().replace("format_version: 1", "format_version: 99"))
    write_checksums(bad)
    with pytest.raises(ArtifactError, match="format_version"):
        LiteMelDecoder.load(bad)


def test_importing_it_leaves_torch_out() -> None:
    code = "import sys, audiopd.lite.vocoder; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
