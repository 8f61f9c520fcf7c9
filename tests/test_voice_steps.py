"""A voice's own level-0 step budget (``VoiceInfo.parallel_steps``) and level-0 temperature
(``VoiceInfo.level0_temperature``): they set K and the draw for parallel mode and auto mode's first attempt when
the caller gives no config, an explicit config or ``steps=`` still wins, and the artifact rejects values it cannot
honour."""

from __future__ import annotations

import dataclasses

import pytest
from voice_fixtures import tiny_voice

from audiopd.codec.fixture import make_fixture_codec
from audiopd.errors import ArtifactError
from audiopd.model.info import MAX_TEMPERATURE
from audiopd.model.voice import MAX_PARALLEL_STEPS, VoiceInfo
from audiopd.pipeline import SynthesisConfig, Synthesizer, voice_config


def _with_steps(k: int):
    model = tiny_voice(("slt", "rms"))
    model.info = dataclasses.replace(model.info, parallel_steps=k)
    return model


def _with(k: int, temperature: float | None):
    model = _with_steps(k)
    model.info = dataclasses.replace(model.info, level0_temperature=temperature)
    return model


def _first_attempt(result) -> dict:
    return result.report["attempts"][0]


def test_voice_info_bounds_the_step_budget() -> None:
    assert VoiceInfo(voices=("a",), parallel_steps=2).parallel_steps == 2
    assert VoiceInfo(voices=("a",)).parallel_steps == 0  # the engine's default
    for bad in (-1, MAX_PARALLEL_STEPS + 1, True):
        with pytest.raises(ArtifactError, match="parallel_steps"):
            VoiceInfo(voices=("a",), parallel_steps=bad)


def test_voice_config_sets_parallel_and_auto_k() -> None:
    default = SynthesisConfig()
    assert voice_config(tiny_voice()) == default
    cfg = voice_config(_with_steps(2))
    assert cfg.parallel.steps == 2 and cfg.auto.first_steps == 2
    assert dataclasses.replace(cfg.parallel, steps=default.parallel.steps) == default.parallel  # nothing else moves
    assert cfg.auto.escalate_steps == default.auto.escalate_steps and cfg.serial == default.serial


@pytest.mark.parametrize("mode", ["parallel", "auto"])
def test_a_voice_decodes_with_its_own_k_unless_told_otherwise(mode: str) -> None:
    tts = Synthesizer(_with_steps(2), make_fixture_codec())
    assert _first_attempt(tts.synthesize("Hello there.", mode=mode, seed=0))["max_steps"] == 2
    assert _first_attempt(tts.synthesize("Hello there.", mode=mode, seed=0, steps=5))["max_steps"] == 5
    explicit = Synthesizer(_with_steps(2), make_fixture_codec(), config=SynthesisConfig())
    got = _first_attempt(explicit.synthesize("Hello there.", mode=mode, seed=0))["max_steps"]
    assert got == SynthesisConfig().parallel.steps


def test_voice_info_bounds_the_level0_temperature() -> None:
    assert VoiceInfo(voices=("a",)).level0_temperature is None  # the engine's
    assert VoiceInfo(voices=("a",), level0_temperature=0).level0_temperature == 0  # greedy
    for bad in (-0.1, MAX_TEMPERATURE + 0.5, True, "0.5"):
        with pytest.raises(ArtifactError, match="level0_temperature"):
            VoiceInfo(voices=("a",), level0_temperature=bad)


def test_voice_config_sets_the_level0_temperature_and_nothing_else() -> None:
    default = SynthesisConfig()
    cfg = voice_config(_with(1, 0.0))
    assert cfg.parallel.sampling.temperature == 0.0 and cfg.parallel.steps == 1 and cfg.auto.first_steps == 1
    assert dataclasses.replace(cfg.parallel.sampling, temperature=1.0) == default.parallel.sampling
    assert cfg.parallel.fine_sampling == default.parallel.fine_sampling and cfg.serial == default.serial
    assert voice_config(_with(0, 0.3)).parallel.steps == default.parallel.steps  # a temperature without a K


def test_a_greedy_voice_gives_every_seed_the_same_parallel_audio() -> None:
    greedy = Synthesizer(_with(1, 0.0), make_fixture_codec())
    a, b = (greedy.synthesize("Hello there, how are you?", mode="parallel", seed=s) for s in (0, 1))
    assert a.audio.size > 0 and (a.audio == b.audio).all()
    sampled = Synthesizer(_with(1, None), make_fixture_codec())
    c, d = (sampled.synthesize("Hello there, how are you?", mode="parallel", seed=s) for s in (0, 1))
    assert not (c.audio.size == d.audio.size and (c.audio == d.audio).all())  # the engine's draw: seeds differ
