"""Audio file I/O."""

from __future__ import annotations

import math

import numpy as np
import pytest

SR = 16000


def test_write_audio_gives_normal_permissions(tmp_path) -> None:
    import os

    from audiopd.audio import write_audio

    umask = os.umask(0o022)
    try:
        out = write_audio(tmp_path / "x.wav", np.zeros(160, np.float32) + 0.1, SR)
    finally:
        os.umask(umask)
    assert oct(out.stat().st_mode & 0o777) == oct(0o644)


@pytest.mark.parametrize("rate, target", [(22050, 16000), (16000, 24000), (24000, 16000), (48000, 16000),
                                          (16000, 48000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 4000, 100_001])
def test_resample_is_scipys_resample_poly_with_its_filter_designed_once(rate, target, dtype, n) -> None:
    """numpy's own polyphase filter (no scipy.signal import on a cold start) gives resample_poly's samples."""
    from scipy.signal import resample_poly

    from audiopd.audio import resample

    x = np.random.default_rng(0).standard_normal(n).astype(dtype)
    g = math.gcd(rate, target)
    want = resample_poly(x, target // g, rate // g)
    for _ in range(2):  # the second call takes the cached filter
        got = resample(x, rate, target)
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 if dtype == np.float32 else 1e-12)


def test_resample_keeps_a_signal_at_its_rate_and_takes_integers_as_float() -> None:
    from audiopd.audio import resample

    x = np.arange(10, dtype=np.float32)
    assert resample(x, 16000, 16000) is x
    assert resample(np.arange(10, dtype=np.int16), 16000, 16000).dtype == np.float64
    with pytest.raises(ValueError, match="1-D"):
        resample(np.zeros((2, 10)), 16000, 24000)


def test_audio_bytes_hold_to_pcm16_samples_in_wav_and_flac(tmp_path) -> None:
    """One quantisation for every writer: file bytes (render, server) decode to exactly ``to_pcm16``'s samples."""
    import io

    import soundfile as sf

    from audiopd.audio import audio_bytes, to_pcm16
    from audiopd.batch.worker import encode_audio
    from audiopd.compare.run import write_clip
    from audiopd.serve import openai_api

    x = np.random.default_rng(1).uniform(-1.2, 1.2, 3000).astype(np.float32)
    want = to_pcm16(x)
    assert want.min() == -32768 and want.max() == 32767  # beyond full scale is clipped
    for fmt in ("WAV", "FLAC"):
        for data in (audio_bytes(x, SR, fmt), encode_audio(x, SR, fmt.lower())):
            got, rate = sf.read(io.BytesIO(data), dtype="int16")
            assert rate == SR and sf.info(io.BytesIO(data)).format == fmt and np.array_equal(got, want)
    # compare's clips, the OpenAI route's FLAC and its raw PCM stream hold the same samples.
    write_clip(tmp_path / "a.flac", x, SR, "flac")
    assert np.array_equal(sf.read(tmp_path / "a.flac", dtype="int16")[0], want)
    assert np.array_equal(sf.read(io.BytesIO(openai_api.encode(x, SR, "flac")), dtype="int16")[0], want)
    assert np.array_equal(np.frombuffer(openai_api.pcm16(x), "<i2"), want)


def test_audio_bytes_give_lossy_codecs_the_clipped_floats() -> None:
    import io

    import soundfile as sf

    from audiopd.audio import audio_bytes

    x = 0.3 * np.sin(np.arange(SR) * 2 * np.pi * 440 / SR).astype(np.float32)
    data = audio_bytes(x, SR, "OGG", "VORBIS")
    got, rate = sf.read(io.BytesIO(data), dtype="float32")
    assert sf.info(io.BytesIO(data)).subtype == "VORBIS" and rate == SR and abs(got.size - x.size) < 2000
    assert 0.2 < np.abs(got).max() < 0.4  # the tone survives the lossy round trip at its level


@pytest.mark.parametrize("rate, sent", [(22050, 24000), (16000, 16000), (44100, 48000)])
def test_opus_goes_out_at_an_opus_rate(rate: int, sent: int) -> None:
    import io

    import soundfile as sf

    from audiopd.audio import audio_bytes

    if "OPUS" not in sf.available_subtypes("OGG"):
        pytest.skip("this libsndfile has no Opus encoder (optional)")
    x = 0.3 * np.sin(np.arange(rate) * 2 * np.pi * 440 / rate).astype(np.float32)  # 1 s of 440 Hz
    got, got_rate = sf.read(io.BytesIO(audio_bytes(x, rate, "OGG", "OPUS")), dtype="float32")
    assert got_rate == sent and abs(got.size / sent - 1.0) < 0.03  # still one second
    spectrum = np.abs(np.fft.rfft(got[sent // 10: -sent // 10]))
    assert abs(np.argmax(spectrum) * sent / (2 * (spectrum.size - 1)) - 440) < 5  # and still 440 Hz
