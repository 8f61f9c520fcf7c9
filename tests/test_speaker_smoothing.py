"""A voice's per-speaker decode-time blur (``VoiceInfo.smooth_frames``): each speaker's tokens go through its own
codec view (``Codec.smoothed``), the views share the loaded decoder, and a codec that cannot blur fails at load."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from mel_fixtures import chirp, write_mel_artifact
from voice_fixtures import tiny_voice

from audiopd.codec import load_codec
from audiopd.codec.fixture import make_fixture_codec
from audiopd.codec.mel import smooth_time
from audiopd.errors import ArtifactError
from audiopd.model.voice import VoiceInfo
from audiopd.pipeline import Synthesizer


class _Blurring:
    """The fixture codec with a ``smoothed`` that records which view decoded what (the fixture cannot blur)."""

    def __init__(self, frames: float = 0.0, log: list | None = None) -> None:
        self.inner = make_fixture_codec()
        self.frames, self.log = frames, log if log is not None else []
        for k in ("name", "sample_rate", "frame_rate", "num_codebooks", "cardinality", "decoder"):
            setattr(self, k, getattr(self.inner, k))

    def smoothed(self, frames: float) -> _Blurring:
        return _Blurring(frames, self.log)

    def decode(self, codes):
        self.log.append(self.frames)
        return self.inner.decode(codes)


def test_a_mel_codec_view_blurs_as_asked_and_shares_the_vocoder(tmp_path) -> None:
    codec = load_codec(write_mel_artifact(tmp_path / "mel", default="fast"))
    assert codec.cfg.smooth_frames == 0.0 and codec.smoothed(0.0) is codec
    view = codec.smoothed(1.5)
    assert view.cfg.smooth_frames == 1.5 and codec.cfg.smooth_frames == 0.0  # the original is untouched
    assert view.token_fingerprint == codec.token_fingerprint and view.decoder == codec.decoder
    codes = codec.encode(chirp(0.3))
    want = codec.vocode(smooth_time(codec.decode_mel(codes[0])[None], 1.5))
    np.testing.assert_allclose(view.decode(codes), want, atol=1e-5)
    assert not np.allclose(codec.decode(codes), want, atol=1e-3)
    assert view._vocoders is codec._vocoders  # one loaded decoder for every speaker's view
    with pytest.raises(ArtifactError, match="smooth_frames must be in"):
        codec.smoothed(9.0)


def test_voice_info_checks_one_blur_per_voice() -> None:
    assert VoiceInfo(voices=("a", "b"), smooth_frames=(0.7, 1.0)).smoothing("b") == 1.0
    assert VoiceInfo(voices=("a", "b")).smoothing("a") is None
    with pytest.raises(ArtifactError, match="1 value"):
        VoiceInfo(voices=("a", "b"), smooth_frames=(0.7,))
    with pytest.raises(ArtifactError, match=r"\[0, 4\]"):
        VoiceInfo(voices=("a",), smooth_frames=(-1.0,))


def test_each_speaker_is_decoded_by_its_own_view() -> None:
    model = tiny_voice(("slt", "rms"))
    model.info = dataclasses.replace(model.info, smooth_frames=(0.5, 2.0))
    codec = _Blurring()
    tts = Synthesizer(model, codec)
    assert tts.codec_for(0).frames == 0.5 and tts.codec_for(1).frames == 2.0
    for voice, frames in (("rms", 2.0), ("slt", 0.5)):
        codec.log.clear()
        tts.synthesize("Hello there.", voice=voice, mode="parallel", seed=0)
        assert codec.log and set(codec.log) == {frames}


def test_a_codec_that_cannot_blur_fails_at_load() -> None:
    model = tiny_voice(("slt", "rms"))
    model.info = dataclasses.replace(model.info, smooth_frames=(0.5, 2.0))
    with pytest.raises(ArtifactError, match="no decode-time smoothing"):
        Synthesizer(model, make_fixture_codec())
    plain = make_fixture_codec()
    assert Synthesizer(tiny_voice(("slt", "rms")), plain).codec_for(1) is plain  # no blur asked: the codec itself


def test_a_codec_without_a_token_mel_refuses_a_voices_refiner() -> None:
    from audiopd.model.refiner import MelRefiner, RefinerConfig

    model = tiny_voice(("slt", "rms"))
    model.attach_refiner(MelRefiner(RefinerConfig(dim=8, layers=1, kernel=3, voices=("slt", "rms"))))
    with pytest.raises(ArtifactError, match="cannot apply a voice's refiner"):
        Synthesizer(model, make_fixture_codec())
