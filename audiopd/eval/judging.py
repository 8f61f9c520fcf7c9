"""The judge every evaluation command shares: ``--asr whisper|pocketsphinx`` for WER, DistillMOS and DNSMOS beside it.

    parser = argparse.ArgumentParser(); judging.add_arguments(parser)
    judge = judging.from_args(args, threads=1)         # fails fast, one line, if the eval extra is missing
    s = judge.score(text, audio, sample_rate)          # ref/hyp words, edits, distillmos, dnsmos_ovrl, dnsmos_p808
    judging.mos_means([s, ...])                        # row figures; judge.describe() for the report

Recognisers: ``whisper`` (default; Whisper tiny.en through ``audiopd.eval.judges``, ~1-5% WER on clean synthetic
speech) or ``pocketsphinx`` (``audiopd.checker.sphinx``, 13-23%, the checker's own recogniser, so not independent
of it). Both sides of every WER go through the one normaliser ``audiopd.text.wer.judge_words``. Naturalness
(``--no-mos`` to skip) needs the ``eval`` extra whatever the recogniser.

``--judge-cache FILE`` keeps every judgement in a JSON-lines file keyed by a hash of the audio (and the
recogniser), so a rerun of an interrupted evaluation re-synthesises (deterministic for a seed) but judges only
what is new: the expensive part (Whisper RTF ~0.12 per thread, DistillMOS ~0.07, DNSMOS ~0.12) resumes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audiopd.errors import AudiopdError
from audiopd.text.wer import count_errors, judge_words

ASR_CHOICES = ("whisper", "pocketsphinx")
MOS_KEYS = ("distillmos", "dnsmos_ovrl", "dnsmos_p808")
NORMALISER = "audiopd.text.wer.judge_words"

Recognizer = Callable[[np.ndarray, int], str]
Naturalness = Callable[[np.ndarray, int], dict[str, float]]


@dataclass(frozen=True)
class JudgeConfig:
    """Which recogniser scores WER, whether naturalness is scored, where judgements are cached, threads."""

    asr: str = "whisper"
    mos: bool = True
    dnsmos: bool = True
    cache: str | None = None
    threads: int = 1


def add_asr_argument(parser: argparse.ArgumentParser, *, asr_flag: str = "--asr") -> None:
    """``--asr`` alone, for commands that read judged reports rather than judge audio (compare, checker_calib)."""
    parser.add_argument(asr_flag, dest="judge_asr", choices=ASR_CHOICES, default="whisper",
                        help="recogniser for WER: whisper (tiny.en, default) or pocketsphinx")


def add_arguments(parser: argparse.ArgumentParser, *, asr_flag: str = "--asr") -> None:
    """The judge's options, the same in every evaluation command."""
    add_asr_argument(parser, asr_flag=asr_flag)
    parser.add_argument("--no-mos", dest="judge_mos", action="store_false",
                        help="skip DistillMOS and DNSMOS (they need the 'eval' extra)")
    parser.add_argument("--no-dnsmos", dest="judge_dnsmos", action="store_false",
                        help="skip DNSMOS only (it scores every clip as 9 s: the costliest judge on sentences)")
    parser.add_argument("--judge-cache", default=None, metavar="FILE.jsonl",
                        help="reuse judgements of identical audio from this file and add new ones (resumable runs)")


def from_args(args: argparse.Namespace, *, threads: int = 1) -> EvalJudge:
    return make_judge(JudgeConfig(asr=args.judge_asr, mos=args.judge_mos, dnsmos=args.judge_dnsmos,
                                  cache=args.judge_cache, threads=threads))


def make_judge(config: JudgeConfig) -> EvalJudge:
    """An ``EvalJudge`` for ``config``; raises ``JudgesMissingError`` now if the eval extra it needs is absent."""
    from audiopd.eval import judges

    if config.asr not in ASR_CHOICES:
        raise ValueError(f"asr must be one of {', '.join(ASR_CHOICES)}, got {config.asr!r}")
    judges.check_installed(asr=config.asr == "whisper", mos=config.mos)
    outside = judges.Judges(threads=config.threads)
    if config.asr == "whisper":
        recognizer: Recognizer = outside.transcribe
    else:
        from audiopd.checker.sphinx import recognize as recognizer
    def naturalness(audio: np.ndarray, sample_rate: int) -> dict[str, float | None]:
        return outside.naturalness(audio, sample_rate, dnsmos=config.dnsmos)

    return EvalJudge(recognizer, naturalness if config.mos else None, asr=config.asr, cache=config.cache,
                     costs=outside.costs, dnsmos=config.dnsmos)


def _audio_key(audio: np.ndarray, sample_rate: int) -> str:
    x = np.ascontiguousarray(np.asarray(audio, dtype=np.float32))
    return hashlib.sha1(x.tobytes() + str(int(sample_rate)).encode()).hexdigest()


class _Cache:
    """Append-only JSON-lines store: one ``{"key": ..., "value": ...}`` per judgement."""

    def __init__(self, path: str | None) -> None:
        self.path = Path(path) if path else None
        self.items: dict[str, Any] = {}
        self._lock = threading.Lock()
        if self.path is not None and self.path.is_dir():
            raise AudiopdError(f"--judge-cache {self.path} is a directory, not a file")
        if self.path is not None and self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self.items[row["key"]] = row["value"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a line cut by an interrupted write: judged again
        self.hits = 0

    def get(self, key: str) -> Any:
        value = self.items.get(key)
        if value is not None:
            self.hits += 1
        return value

    def put(self, key: str, value: Any) -> None:
        self.items[key] = value
        if self.path is not None:
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"key": key, "value": value}) + "\n")


class EvalJudge:
    """Scores one clip against its text: recogniser WER words, and naturalness when a scorer is given."""

    def __init__(self, recognizer: Recognizer, naturalness: Naturalness | None = None, *, asr: str = "custom",
                 cache: str | None = None, costs: Callable[[], dict[str, Any]] | None = None,
                 dnsmos: bool = True) -> None:
        self.asr = asr
        self.dnsmos = dnsmos
        self._recognize = recognizer
        self._naturalness = naturalness
        self._cache = _Cache(cache)
        self._costs = costs

    @property
    def mos(self) -> bool:
        return self._naturalness is not None

    def words(self, text: str) -> list[str]:
        return judge_words(text)

    def recognize(self, audio: np.ndarray, sample_rate: int) -> str:
        key = f"{self.asr}:{_audio_key(audio, sample_rate)}"
        text = self._cache.get(key) if self.asr != "custom" else None
        if text is None:
            text = self._recognize(audio, sample_rate)
            if self.asr != "custom":
                self._cache.put(key, text)
        return text

    def naturalness(self, audio: np.ndarray, sample_rate: int) -> dict[str, float | None] | None:
        if self._naturalness is None:
            return None
        key = f"mos:{_audio_key(audio, sample_rate)}"
        scores = self._cache.get(key)
        # A judgement cached without DNSMOS does not answer a judge that wants it.
        if scores is None or (self.dnsmos and any(scores.get(k) is None for k in MOS_KEYS)):
            scores = {k: (None if v is None else float(v)) for k, v in self._naturalness(audio, sample_rate).items()}
            self._cache.put(key, scores)
        if not self.dnsmos:  # a cached DNSMOS of some clips only would make a row's mean cover a subset
            scores = {**scores, "dnsmos_ovrl": None, "dnsmos_p808": None}
        return scores

    def score(self, text: str | list[str], audio: np.ndarray, sample_rate: int) -> dict[str, Any]:
        """``ref``/``hyp`` word lists, ``edits``, ``ref_words``, and the MOS keys (None without naturalness).

        ``text`` may be a reference word list already normalised (``words``), to normalise a passage once.
        """
        ref = self.words(text) if isinstance(text, str) else list(text)
        hyp = self.words(self.recognize(audio, sample_rate))
        edits = count_errors(ref, hyp)
        out: dict[str, Any] = {"ref": ref, "hyp": hyp, "edits": edits, "ref_words": len(ref)}
        mos = self.naturalness(audio, sample_rate)
        out.update({k: (round(mos[k], 4) if mos and mos.get(k) is not None else None) for k in MOS_KEYS})
        return out

    def describe(self) -> dict[str, Any]:
        """For a report: recogniser, whether MOS was scored, the normaliser, cache hits, per-judge costs."""
        return {"asr": self.asr, "mos": self.mos, "dnsmos": self.mos and self.dnsmos, "normaliser": NORMALISER,
                "cache_hits": self._cache.hits,
                "costs": self._costs() if self._costs else None}


def report_asr(report: dict[str, Any], key: str = "judge") -> str:
    """The recogniser a report's WERs come from; reports written before ``--asr`` existed used pocketsphinx."""
    return (report.get(key) or {}).get("asr", "pocketsphinx")


def mos_means(scores: Iterable[dict[str, Any]]) -> dict[str, float | None]:
    """Mean of each MOS key over the scores that carry it (None where none does)."""
    scores = list(scores)
    out: dict[str, float | None] = {}
    for k in MOS_KEYS:
        vals = [s[k] for s in scores if s.get(k) is not None]
        out[k] = round(float(np.mean(vals)), 3) if vals else None
    return out


MOS_HEADER = "DistillMOS | DNSMOS OVRL | DNSMOS P.808"


def mos_cells(row: dict[str, Any]) -> str:
    """The three MOS cells of a markdown row ("-" where absent)."""
    return " | ".join("-" if row.get(k) is None else f"{row[k]:.2f}" for k in MOS_KEYS)
