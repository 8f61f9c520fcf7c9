"""The outside judges ``audiopd compare`` scores every clip with, behind one small injectable interface.

A ``Judge`` turns (audio, sample rate, reference text) into ``Scores``: DistillMOS, DNSMOS (P.835 overall and
P.808) and an ASR word error rate (a fraction: 0.05 = 5%) with the hypothesis it came from. The real one wraps
``audiopd.eval.judges`` (the ``eval`` extra: Whisper tiny.en via faster-whisper, DistillMOS, DNSMOS; see
samples/measured.md for their costs); fast tests build a deterministic fake in code. ``asr="pocketsphinx"`` swaps
Whisper for the bundled recogniser (no extra needed for the words, but the naturalness judges still are).

The checker's verdict is not a judge: it is audiopd's own (``checker_for``), applied as ``audiopd check`` does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from audiopd.errors import AudiopdError

ASR_CHOICES = ("whisper", "pocketsphinx")


class JudgeUnavailableError(AudiopdError):
    """The judges' packages (the ``eval`` extra) are not installed."""


@dataclass(frozen=True)
class Scores:
    distillmos: float
    dnsmos: float  # DNSMOS P.835 overall
    dnsmos_p808: float
    wer: float  # fraction of reference words
    hypothesis: str


class Judge(Protocol):
    name: str

    def score(self, audio: np.ndarray, sample_rate: int, text: str) -> Scores: ...


@dataclass
class JudgeCost:
    """Seconds each judge spent, and the audio seconds it heard: the price of the evidence."""

    seconds: dict[str, float] = field(default_factory=dict)
    audio_s: float = 0.0

    def add(self, what: str, seconds: float) -> None:
        self.seconds[what] = self.seconds.get(what, 0.0) + seconds

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"audio_s": round(self.audio_s, 2)}
        for k, v in sorted(self.seconds.items()):
            out[f"{k}_s"] = round(v, 2)
            out[f"{k}_rtf"] = round(v / self.audio_s, 4) if self.audio_s > 0 else None
        return out


class RealJudge:
    """``audiopd.eval.judges``: Whisper (or pocketsphinx) words, DistillMOS and DNSMOS naturalness."""

    def __init__(self, asr: str = "whisper", threads: int | None = None) -> None:
        if asr not in ASR_CHOICES:
            raise AudiopdError(f"--asr must be one of {', '.join(ASR_CHOICES)}, got {asr!r}")
        try:
            from audiopd.eval import judges

            # Fail now, in one line naming the extra, not after an hour of synthesis.
            judges.check_installed(asr=asr == "whisper")
        except ImportError as exc:
            raise JudgeUnavailableError(f"the judges are not installed ({exc}); install the eval extra: "
                                        "pip install -e '.[eval]'") from None
        self.judges = judges
        self.asr = asr
        self.name = f"{asr}+distillmos+dnsmos"
        self.cost = JudgeCost()
        if threads is not None:
            judges.set_threads(threads)

    def costs(self) -> dict[str, Any]:
        """The judges' own accounting (load seconds, calls, seconds, RTF per judge) beside this wrapper's."""
        return {"judges": self.judges.costs(), "wrapper": self.cost.to_dict()}

    def _words(self, audio: np.ndarray, sample_rate: int) -> str:
        if self.asr == "pocketsphinx":
            from audiopd.checker.sphinx import recognize

            return recognize(audio, sample_rate)
        return self.judges.transcribe(audio, sample_rate)

    def score(self, audio: np.ndarray, sample_rate: int, text: str) -> Scores:
        t0 = time.perf_counter()
        hyp = self._words(audio, sample_rate)
        t1 = time.perf_counter()
        nat = self.judges.naturalness(audio, sample_rate)
        t2 = time.perf_counter()
        self.cost.add(self.asr, t1 - t0)
        self.cost.add("naturalness", t2 - t1)
        self.cost.audio_s += audio.size / sample_rate
        return Scores(distillmos=float(nat["distillmos"]), dnsmos=float(nat["dnsmos_ovrl"]),
                      dnsmos_p808=float(nat["dnsmos_p808"]), wer=float(self.judges.wer(text, hyp)), hypothesis=hyp)


Verdict = Callable[[np.ndarray, int, str], dict]


def checker_for(tts) -> Verdict:
    """The voice's checker as ``audiopd check --voice`` applies it: audio + text -> verdict dict.

    Parallel and serial clips are checked after synthesis (their wall time is the decoding alone); a custom
    checker on the Synthesizer (tests) is used as is, the default one with the voice's own thresholds.
    """
    from audiopd.synthesis.report import verdict_to_dict

    custom = getattr(tts, "checker", None)
    if custom is not None:
        def run_custom(audio: np.ndarray, sample_rate: int, text: str) -> dict:
            return verdict_to_dict(custom(audio, sample_rate, text, durations_s=None, tokens=None, confidence=None,
                                          token_rate=tts.frame_rate))
        return run_custom

    import audiopd

    config = getattr(tts, "checker_config", None)
    kwargs = {} if config is None else {"config": config}

    def run(audio: np.ndarray, sample_rate: int, text: str) -> dict:
        return verdict_to_dict(audiopd.check(audio, sample_rate, text, **kwargs))

    return run
