"""Smoke test of the shipped natural voice voices/joe: it loads offline, verifies, speaks, and its own checker passes."""

from __future__ import annotations

import numpy as np
import pytest

import audiopd


@pytest.fixture(scope="module")
def joe() -> audiopd.Synthesizer:
    return audiopd.load("joe")


def test_joe_speaks_through_the_mel_codec_in_both_modes(joe: audiopd.Synthesizer) -> None:
    assert joe.voices == ("joe",) and joe.sample_rate == 22050
    text = "Good morning."
    for mode in ("parallel", "serial"):
        r = joe.synthesize(text, mode=mode, seed=0)
        assert r.audio.dtype == np.float32 and r.audio.ndim == 1
        assert 0.4 < r.audio.size / r.sample_rate < 3.0  # a two-word sentence, not silence or a runaway
        assert np.isfinite(r.audio).all() and 0.01 < np.abs(r.audio).max() <= 0.99
        assert r.report["mode"] == mode and [w.word for w in r.words] == ["good", "morning"]


def test_joe_passes_its_own_checker_on_a_plain_sentence(joe: audiopd.Synthesizer) -> None:
    r = joe.synthesize("The weather will be clear and cold tomorrow morning.", mode="auto", seed=0)
    assert r.report["checker"] == "voice"  # voices/joe/checker.yaml, not the defaults
    assert r.report["check"]["passed"], r.report["check"]["reasons"]
