"""Helpers of the compare tests, built in code: a deterministic fake judge and checker, a few texts."""

from __future__ import annotations

import hashlib

import numpy as np

from audiopd.compare.judging import JudgeCost, Scores

TEXTS = ["The old bridge was painted green.", "She keeps a small notebook in her pocket.",
         "A cold wind blew across the field."]


def _digest(audio: np.ndarray) -> int:
    return int(hashlib.sha256(np.ascontiguousarray(audio, dtype=np.float32).tobytes()).hexdigest()[:8], 16)


class FakeJudge:
    """Scores that depend only on the audio's bytes: the same clip always gets the same scores, another clip
    (another system or seed) almost surely other ones."""

    name = "fake"

    def __init__(self) -> None:
        self.cost = JudgeCost()
        self.calls = 0

    def score(self, audio: np.ndarray, sample_rate: int, text: str) -> Scores:
        self.calls += 1
        self.cost.add("fake", 0.001)
        self.cost.audio_s += audio.size / sample_rate
        h = _digest(audio)
        return Scores(distillmos=1.5 + (h % 300) / 100, dnsmos=2.0 + (h % 150) / 100, dnsmos_p808=3.0,
                      wer=[0.0, 0.0, 0.125, 0.5][h % 4], hypothesis=f"heard {h % 97}")


def fake_checker(audio, sample_rate, text, **kwargs) -> dict:
    return {"passed": bool(_digest(audio) % 3), "score": 0.5, "reasons": [], "bad_spans": []}
