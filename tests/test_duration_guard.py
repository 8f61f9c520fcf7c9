"""The broken-duration-predictor guard: long but honest chunks pass, absurd per-token durations are refused."""

from __future__ import annotations

import math

import pytest
import torch
from voice_fixtures import tiny_voice

from audiopd.codec.fixture import make_fixture_codec
from audiopd.errors import ArtifactError
from audiopd.pipeline import Synthesizer

SENTENCE = ("The committee met on a quiet morning in the old library, and after a long discussion about the "
            "budget, the schedule and the people involved, it agreed to publish its findings before the end "
            "of the month, with a short summary for everyone who asked.")


def _synth(frames_per_token: int) -> Synthesizer:
    model = tiny_voice(("a",))
    with torch.no_grad():
        model.conditioner.duration.proj.bias.fill_(math.log(1 + frames_per_token))
    return Synthesizer(model, make_fixture_codec())


@pytest.mark.parametrize("text, speed", [(SENTENCE, 0.25), ("1" * 200, 1.0), ("1" * 200, 0.25)])
def test_slow_speech_and_long_digit_runs_are_not_refused(text: str, speed: float) -> None:
    """90 ms per token (ordinary speech): one chunk of > 60 s at speed 0.25, or 200 digits read one by one."""
    tts = _synth(9)
    result = tts.synthesize(text, mode="parallel", steps=1, seed=0, speed=speed)
    assert result.report["chunks"] == 1
    assert result.duration_s > 60 or text.isdigit()
    assert result.duration_s == pytest.approx(result.report["audio_seconds"])


def test_an_absurd_predictor_is_still_refused() -> None:
    tts = _synth(150)  # 1.5 s per phoneme token
    with pytest.raises(ArtifactError, match="duration predictor looks broken"):
        tts.synthesize("Hello there.", mode="parallel", steps=1, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("text, speed", [(SENTENCE, 0.25), ("1" * 200, 1.0)])
def test_the_shipped_voice_speaks_slowly_and_reads_long_digit_runs(text: str, speed: float) -> None:
    import audiopd

    result = audiopd.load().synthesize(text, mode="parallel", seed=0, speed=speed)
    assert result.duration_s > 30
