"""``score``: does this audio say this text, completely and cleanly?

Four groups of checks (thresholds and their calibration: ``audiopd.checker.config``):

(a) forced alignment of the intended phones: by default with the small CTC phone recogniser
    (``audiopd.checker.phones``/``ctc``, run in NumPy by ``audiopd.lite.recognizer``: alignment gap windows,
    dense unheard or extra phones, phone error rate), or with PocketSphinx (``recognizer="sphinx"``, the
    thorough option: per-word scores, poorly aligned windows, speech the text does not account for, or no
    alignment at all);
(b) free recognition against the normalised text: runs of unheard or extra words, WER;
(c) signal: long internal silence, truncation, clipping, drop-outs, noise bursts;
(d) tokens, when codes are given: repetition (VALL-E 2), low confidence, length vs expectation.

All audio is analysed at 16 kHz (both recognisers' rate); clipping is measured on the input itself.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from audiopd.checker import signal as sig
from audiopd.checker import speech
from audiopd.checker import tokens as tok
from audiopd.checker.config import CheckerConfig
from audiopd.checker.signal import Finding
from audiopd.checker.sphinx import SAMPLE_RATE, align, recognize_words, to_sphinx_pcm
from audiopd.errors import AudioInputError, NothingToSpeakError
from audiopd.text.lexicon import Lexicon
from audiopd.text.wer import text_to_words

RUNTIMES = ("numpy", "torch")  # where the phone recogniser runs (``score(runtime=)``)


@dataclass(frozen=True)
class WordResult:
    """One intended word: where the aligner put it, its acoustic score, and what looked wrong.

    ``issues`` holds any of: "unaligned" (no pronunciation), "squeezed" (every phone at the
    aligner's minimum: no audio for it), "low_score" (inside a badly aligned window),
    "unheard" (the recogniser deleted it). Times are None when the alignment failed.
    """

    word: str
    index: int
    start: float | None
    end: float | None
    score: float | None  # mean log score per frame: PocketSphinx acoustic (sphinx), phone log-posterior (ctc)
    issues: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"word": self.word, "index": self.index, "start": self.start, "end": self.end,
                "score": self.score, "issues": list(self.issues)}


@dataclass(frozen=True)
class Verdict:
    """Whether audio says its text cleanly.

    ``score`` is ``1 / (1 + b**2)`` for the worst check's badness ``b`` (value / threshold), so
    1.0 is flawless, 0.5 is the pass/fail line and ``passed == (score > 0.5)``. ``bad_spans`` are
    merged (start_s, end_s) stretches that failed, for span repair.
    """

    passed: bool
    score: float
    reasons: list[str] = field(default_factory=list)
    words: list[WordResult] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    bad_spans: list[tuple[float, float]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # names of the failed checks, worst first

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (non-finite metrics become None)."""

        def num(v: float) -> float | None:
            return float(v) if math.isfinite(v) else None

        return {
            "passed": bool(self.passed),
            "score": float(self.score),
            "reasons": list(self.reasons),
            "words": [w.to_dict() for w in self.words],
            "metrics": {k: num(v) for k, v in self.metrics.items()},
            "bad_spans": [[float(a), float(b)] for a, b in self.bad_spans],
            "failed": list(self.failed),
        }


def merge_spans(spans: Iterable[tuple[float, float]], duration: float, gap: float = 0.05) -> list[tuple[float, float]]:
    """Sort, clip to [0, duration] and merge spans closer than ``gap`` seconds."""
    clipped = sorted((max(0.0, a), min(duration, b)) for a, b in spans)
    out: list[tuple[float, float]] = []
    for a, b in clipped:
        if b < a:
            continue
        if out and a <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return [(round(a, 3), round(b, 3)) for a, b in out]


def score_from_badness(badness: float) -> float:
    """Map the worst badness to 0..1: 1 at 0, 0.5 at the threshold, falling towards 0 beyond."""
    if not math.isfinite(badness):
        return 0.0
    return 1.0 / (1.0 + max(0.0, badness) ** 2)


def _as_1d(audio: np.ndarray) -> np.ndarray:
    arr = np.asarray(audio.detach().cpu().numpy() if hasattr(audio, "detach") else audio)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    return arr


def _durations(durations: Sequence[float] | np.ndarray | None) -> np.ndarray | None:
    if durations is None:
        return None
    d = np.asarray(durations.detach().cpu().numpy() if hasattr(durations, "detach") else durations,
                   dtype=np.float64).reshape(-1)
    if d.size == 0 or not np.all(np.isfinite(d)) or np.any(d < 0):
        raise AudioInputError("durations must be a non-empty sequence of non-negative seconds")
    return d


def score(
    audio: np.ndarray,
    sample_rate: int,
    text: str,
    *,
    durations: Sequence[float] | np.ndarray | None = None,
    tokens: np.ndarray | None = None,
    confidences: np.ndarray | None = None,
    token_rate: float | None = None,
    config: CheckerConfig = CheckerConfig(),
    runtime: str = "numpy",
    lexicon: Lexicon | None = None,
) -> Verdict:
    """Check that ``audio`` says ``text``; returns a ``Verdict``.

    ``durations``: expected duration in seconds of each unit (phone, word or pause) in order, e.g.
    a duration model's prediction; it bounds the allowed pauses and the expected length.
    ``tokens``: codec codes [Q, T] that produced the audio; ``confidences``: [T] (or [Q, T])
    probabilities of the chosen tokens; ``token_rate``: frames per second (default: T / audio
    duration). ``runtime``: where the phone recogniser runs, "numpy" (the default: a check never imports torch)
    or "torch" (the same network and weights, for a process that has torch loaded anyway: on two threads it takes
    11.8 against 15.6 ms at 5 s of speech and 39.9 against 79.1 at 20 s, CHANGELOG 2026-12-07). ``lexicon``: the
    user's pronunciations the audio was synthesised with (``audiopd.text.lexicon``), so the phone recogniser expects
    those phones (PocketSphinx, the thorough level, keeps its own dictionary). Raises
    ``AudioInputError`` for unusable audio and ``NothingToSpeakError`` when the text holds no words.
    """
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    t_start = time.perf_counter()
    raw = _as_1d(audio)
    pcm = to_sphinx_pcm(raw, sample_rate)  # validates shape, emptiness, finiteness and rate
    words = text_to_words(text) if isinstance(text, str) else []
    if not words:
        raise NothingToSpeakError(f"nothing to check against: text {str(text)[:40]!r} holds no words")
    x = pcm.astype(np.float32) / 32767.0
    duration = len(x) / SAMPLE_RATE
    exp = _durations(durations)
    cfg = config
    findings: list[Finding] = []
    metrics: dict[str, float] = {"duration_s": duration, "words": float(len(words))}

    # (c) signal
    fr = sig.analyse(x, SAMPLE_RATE, active_db=cfg.active_db)
    max_sil = cfg.max_internal_silence_s
    if exp is not None:
        max_sil = max(max_sil, float(exp.max()) + cfg.silence_slack_s)
    raw_f = raw.astype(np.float64) / 32768.0 if raw.dtype == np.int16 else raw.astype(np.float64)
    if fr.first < 0:
        findings.append(Finding("no_speech", float("inf"), 1.0, ((0.0, duration),), "no speech found (silent audio)"))
    else:
        findings += [
            sig.internal_silence(fr, max_sil),
            sig.truncation(fr, cfg.end_margin_s, cfg.end_level_db),
            sig.clipping(raw_f, int(sample_rate), cfg.max_clipped_fraction),
            sig.dropouts(fr, cfg.dropout_min_s, cfg.dropout_max_s, cfg.dropout_edge_db),
            sig.noise_bursts(fr, cfg.noise_flatness, cfg.noise_level_db, cfg.min_noise_s),
        ]

    # (d) tokens
    if tokens is not None or confidences is not None:
        findings += _token_findings(tokens, confidences, token_rate, duration, exp, cfg)
    elif exp is not None:
        findings.append(tok.check_length(duration, float(exp.sum()), cfg.max_length_ratio))

    # (a) forced alignment of the intended phones: the CTC recogniser (default) or PocketSphinx (thorough)
    t_align = time.perf_counter()
    al = None
    low: frozenset[int] = frozenset()
    squeezed: frozenset[int] = frozenset()
    ctc_words: list[WordResult] | None = None
    if fr.first >= 0 and cfg.recognizer == "ctc":
        # The recogniser reads the 16 kHz samples PocketSphinx gets instead of resampling the input a second time
        # (0.9 / 1.3 / 4.2 ms at 1 / 5 / 20 s); their 16-bit rounding sits ~90 dB below the engine's peak level
        # (24 clips of voices/natural: the same verdicts, phone error rates equal, other metrics within 6e-4).
        ctc_findings, ctc_words, ctc_metrics = _ctc_checks(x, SAMPLE_RATE, text, cfg, runtime, lexicon)
        findings += ctc_findings
        metrics.update(ctc_metrics)
    elif fr.first >= 0:
        # The recogniser and aligner get the very samples ``recognize(audio, rate)`` would: a float round trip
        # could move samples by one LSB, and on marginal audio that can flip PocketSphinx's answer.
        al = align(pcm, SAMPLE_RATE, words)
        if al is None:
            findings.append(speech.alignment_failed(duration))
        else:
            rep = speech.check_alignment(al, fr, cfg)
            findings += rep.findings
            low, squeezed = rep.low_words, rep.squeezed
            metrics["squeezed_words"] = float(len(squeezed))
            metrics["unaligned_words"] = float(len(al.unaligned))
    # The recognition passes are nearly all of the checker's cost; timing them apart says which one a cheaper
    # configuration would have to shrink (asr_seconds is 0 when recognition did not run).
    metrics["align_seconds"] = time.perf_counter() - t_align

    # (b) ASR, always or only when something else is borderline
    worst = max((f.badness for f in findings), default=0.0)
    run_asr = cfg.asr == "always" or (cfg.asr == "borderline" and cfg.asr_borderline <= worst < 1.0)
    unheard: frozenset[int] = frozenset()
    metrics["asr_seconds"] = 0.0
    if run_asr and fr.first >= 0:
        t_asr = time.perf_counter()
        heard = recognize_words(pcm, SAMPLE_RATE)
        metrics["asr_seconds"] = time.perf_counter() - t_asr
        asr = speech.check_asr(words, heard, duration, al, cfg)
        findings += asr.findings
        unheard = asr.unheard
    metrics["asr_ran"] = float(run_asr and fr.first >= 0)

    for f in findings:
        metrics[f.name] = f.value
        metrics.update({f"{f.name}_{k}": v for k, v in f.extra.items()})
    failed = sorted((f for f in findings if f.failed), key=lambda f: -f.badness)
    worst = max((f.badness for f in findings), default=0.0)
    metrics["check_seconds"] = time.perf_counter() - t_start
    metrics["rtf"] = metrics["check_seconds"] / max(duration, 1e-9)

    if ctc_words is not None:
        word_results = [dataclasses.replace(w, issues=(*w.issues, "unheard")) if w.index in unheard else w
                        for w in ctc_words]
    else:
        word_results = _word_results(words, al, low, squeezed, unheard)
    spans = [s for f in failed for s in f.spans]
    return Verdict(
        passed=not failed,
        score=score_from_badness(worst),
        reasons=[f.reason for f in failed],
        words=word_results,
        metrics=metrics,
        bad_spans=merge_spans(spans, duration),
        failed=[f.name for f in failed],
    )


def _ctc_checks(audio: np.ndarray, sample_rate: int, text: str, cfg: CheckerConfig, runtime: str = "numpy",
                lexicon: Lexicon | None = None) -> tuple[list[Finding], list[WordResult], dict[str, float]]:
    """The phone recogniser's findings, per-word spans and scores (audiopd.checker.ctc)."""
    from audiopd.checker.ctc import PhoneCheckConfig, check_phones
    from audiopd.checker.phones import labels_of_ids
    from audiopd.text import phonemize

    if runtime == "torch":
        from audiopd.checker.phones_torch import load_recognizer
    else:
        from audiopd.lite.recognizer import load_recognizer  # NumPy: a check never imports torch
    model = load_recognizer(cfg.recognizer_artifact)
    ph = phonemize(text, lexicon=lexicon)
    pairs = labels_of_ids(ph.ids)
    logp = model.posteriors(audio, sample_rate)
    rep = check_phones(logp, [lbl for lbl, _ in pairs], model.frame_s,
                       PhoneCheckConfig(window_s=cfg.ctc_window_s, max_window_gap=cfg.max_ctc_gap,
                                        max_deletions=cfg.max_phone_deletions,
                                        max_insertions=cfg.max_phone_insertions, max_per=cfg.max_per,
                                        edit_window=cfg.phone_edit_window, per_full_phones=cfg.per_full_phones,
                                        short_per_slack=cfg.short_per_slack))
    bad = [s for f in rep.findings if f.failed for s in f.spans]
    token_to_phone = {tok: k for k, (_, tok) in enumerate(pairs)}
    out = []
    for i, w in enumerate(ph.words):
        idx = [token_to_phone[t] for t in range(w.start, w.end) if t in token_to_phone]
        spans = [rep.phone_spans[k] for k in idx if math.isfinite(rep.phone_spans[k][0])]
        scores = [rep.phone_scores[k] for k in idx if math.isfinite(rep.phone_scores[k])]
        start, end = (spans[0][0], spans[-1][1]) if spans else (None, None)
        hit = start is not None and any(a < end and start < b for a, b in bad)
        out.append(WordResult(w.word, i, start, end, round(float(np.mean(scores)), 2) if scores else None,
                              ("low_score",) if hit else ()))
    return list(rep.findings), out, rep.metrics


def _token_findings(tokens: np.ndarray | None, confidences: np.ndarray | None, token_rate: float | None,
                    duration: float, exp: np.ndarray | None, cfg: CheckerConfig) -> list[Finding]:
    out: list[Finding] = []
    codes = tok.as_codes(tokens) if tokens is not None else None
    n_frames = codes.shape[1] if codes is not None else int(np.asarray(confidences).shape[-1])
    rate = float(token_rate) if token_rate is not None else n_frames / duration
    if not rate > 0:
        raise AudioInputError(f"token_rate must be > 0, got {token_rate!r}")
    if codes is not None:
        out.append(tok.check_repetition(codes, rate, cfg.repetition_n, cfg.repetition_window_s,
                                        cfg.max_repetition_ratio))
    if confidences is not None:
        conf = np.asarray(confidences.detach().cpu().numpy() if hasattr(confidences, "detach") else confidences)
        out.append(tok.check_confidence(conf, rate, cfg.confidence_floor, cfg.max_low_confidence))
    if exp is not None:
        out.append(tok.check_length(n_frames / rate, float(exp.sum()), cfg.max_length_ratio))
    return out


def _word_results(words: list[str], al: object, low: frozenset[int], squeezed: frozenset[int],
                  unheard: frozenset[int]) -> list[WordResult]:
    spans = {w.index: w for w in al.words} if al is not None else {}  # type: ignore[attr-defined]
    unaligned = set(al.unaligned) if al is not None else set()  # type: ignore[attr-defined]
    out = []
    for i, word in enumerate(words):
        issues = tuple(name for name, hit in (("unaligned", i in unaligned), ("squeezed", i in squeezed),
                                               ("low_score", i in low), ("unheard", i in unheard)) if hit)
        w = spans.get(i)
        out.append(WordResult(word, i, w.start if w else None, w.end if w else None,
                              round(w.frame_score, 2) if w else None, issues))
    return out
