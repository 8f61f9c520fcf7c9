"""Smoke test of the shipped default voice: it loads offline, verifies, and speaks in both modes."""

from __future__ import annotations

import numpy as np

import audiopd


def test_default_voice_speaks_in_parallel_and_serial_mode() -> None:
    tts = audiopd.load()
    assert set(tts.voices) == {"slt", "rms", "awb", "kal16"}
    assert tts.sample_rate == 16000
    text = "Good morning."
    for mode in ("parallel", "serial"):
        r = tts.synthesize(text, voice="rms", mode=mode, seed=0)
        assert r.audio.dtype == np.float32 and r.audio.ndim == 1
        assert 0.4 < r.audio.size / r.sample_rate < 3.0  # a two-word sentence, not silence or a runaway
        assert np.isfinite(r.audio).all() and 0.01 < np.abs(r.audio).max() <= 0.95 + 1e-6
        assert r.report["mode"] == mode and r.report["forward_passes"] >= 1
        assert [w.word for w in r.words] == ["good", "morning"]
    again = tts.synthesize(text, voice="rms", mode="parallel", seed=0)
    first = tts.synthesize(text, voice="rms", mode="parallel", seed=0)
    assert np.array_equal(again.audio, first.audio)
