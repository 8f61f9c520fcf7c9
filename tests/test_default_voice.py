"""Smoke test of the shipped voices: the default (natural, the Kokoro-taught voice), joe and the flite voice load
offline, verify, and speak in both modes."""

from __future__ import annotations

import numpy as np
import pytest

import audiopd


@pytest.mark.parametrize("name, speakers, rate, speaker", [
    (None, {"adam", "heart", "joe"}, 22050, "adam"),             # audiopd.load(): the default voice, natural
    ("joe", {"joe"}, 22050, "joe"),
    ("flite", {"slt", "rms", "awb", "kal16"}, 16000, "rms"),
    ("natural", {"heart", "adam", "joe"}, 22050, "heart"),        # float16 weights, widened on load
    ("natural", {"heart", "adam", "joe"}, 22050, "joe"),          # its Piper-taught speaker
])
def test_shipped_voice_speaks_in_parallel_and_serial_mode(name, speakers, rate, speaker) -> None:
    tts = audiopd.load(name)
    assert set(tts.voices) == speakers and tts.sample_rate == rate
    assert tts.voice_name == (name or "natural")
    text = "Good morning."
    for mode in ("parallel", "serial"):
        r = tts.synthesize(text, voice=speaker, mode=mode, seed=0)
        assert r.audio.dtype == np.float32 and r.audio.ndim == 1
        assert 0.4 < r.audio.size / r.sample_rate < 3.0  # a two-word sentence, not silence or a runaway
        assert np.isfinite(r.audio).all() and 0.01 < np.abs(r.audio).max() <= 0.95 + 1e-6
        assert r.report["mode"] == mode and r.report["forward_passes"] >= 1
        assert [w.word for w in r.words] == ["good", "morning"]
    again = tts.synthesize(text, voice=speaker, mode="parallel", seed=0)
    first = tts.synthesize(text, voice=speaker, mode="parallel", seed=0)
    assert np.array_equal(again.audio, first.audio)
