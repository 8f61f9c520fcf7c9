"""Speech-content checks: forced-alignment quality and ASR agreement with the intended words.

Forced alignment (PocketSphinx) must place every intended phone somewhere. When words are missing
it crams them into audio that says something else (or fails to find any path, e.g. after
truncation); when extra speech is present it has to call it silence or stretch phones over it.
Both show up as stretches of very poor per-frame acoustic score, or as loud "silence".

Free recognition catches what alignment can miss: runs of reference words nobody heard (skips,
truncation) and runs of extra words (repeats). Isolated substitutions are ignored, since
PocketSphinx makes many on clean synthetic speech (~13-23% WER, samples/measured.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audiopd.checker.config import CheckerConfig
from audiopd.checker.signal import FRAME_S, Finding, Frames
from audiopd.checker.sphinx import WordAlignment
from audiopd.text.wer import edit_ops, text_to_words


@dataclass(frozen=True)
class AlignmentReport:
    """Findings from one forced alignment, plus per-word flags for the verdict."""

    findings: tuple[Finding, ...]
    low_words: frozenset[int]  # word indices inside a failing window
    squeezed: frozenset[int]


def alignment_failed(duration: float) -> Finding:
    return Finding("alignment", float("inf"), 1.0, ((0.0, duration),),
                   "forced alignment failed: the audio does not fit the text (missing, cut off or other words)")


def check_alignment(al: WordAlignment, fr: Frames, cfg: CheckerConfig) -> AlignmentReport:
    """Window score, mean score and unexplained speech for a successful alignment."""
    times: list[float] = []
    scores: list[float] = []
    owner: list[int] = []
    squeezed: set[int] = set()
    for w in al.words:
        if w.phones and all(p.end - p.start <= cfg.squeeze_phone_s for p in w.phones):
            squeezed.add(w.index)
        for p in w.phones:
            n = max(1, int(round((p.end - p.start) / FRAME_S)))
            times.extend(p.start + k * FRAME_S for k in range(n))
            scores.extend([p.score / n] * n)
            owner.extend([w.index] * n)
    frame = np.asarray(scores, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    findings: list[Finding] = []
    low_words: set[int] = set()
    if frame.size == 0:
        return AlignmentReport((), frozenset(), frozenset(squeezed))

    # (1) worst window: mean score over ``align_window_s`` of consecutive aligned phone frames.
    k = max(1, min(frame.size, int(round(cfg.align_window_s / FRAME_S))))
    win = np.convolve(frame, np.ones(k) / k, mode="valid")
    worst = float(win.min())
    spans: list[tuple[float, float]] = []
    bad = np.flatnonzero(win < cfg.min_window_score)
    for i in bad:
        spans.append((float(t[i]), float(t[i + k - 1] + FRAME_S)))
        low_words.update(owner[i : i + k])
    ibad = int(np.argmin(win))
    where = f"{t[ibad]:.2f}-{t[ibad + k - 1] + FRAME_S:.2f} s"
    words = " ".join(dict.fromkeys(al.requested[j] for j in owner[ibad : ibad + k]))
    # Scores are negative log-likelihoods: badness is how far below the threshold, as a ratio.
    findings.append(Finding("alignment_window", worst, cfg.min_window_score, tuple(spans),
                            f"poor alignment at {where} ({words}): score {worst:.0f} < {cfg.min_window_score:.0f}"))
    mean = float(frame.mean())
    # A low mean caused by one bad stretch should repair that stretch, not the whole clip.
    mean_spans = tuple(spans) if spans else ((0.0, al.duration),)
    findings.append(Finding("alignment_mean", mean, cfg.min_mean_score, mean_spans if mean <= cfg.min_mean_score else (),
                            f"audio does not match the text: mean alignment score {mean:.0f} < {cfg.min_mean_score:.0f}"))

    # (2) loud audio the aligner labelled silence: speech the text does not account for.
    loud = fr.db > fr.speech_db - cfg.unexplained_level_db
    total = 0
    loud_spans: list[tuple[float, float]] = []
    for a, b in al.silences:
        i0, i1 = int(round(a / FRAME_S)), int(round(b / FRAME_S))
        n = int(np.count_nonzero(loud[i0:i1]))
        total += n
        if n * FRAME_S >= cfg.max_unexplained_speech_s / 2:
            loud_spans.append((a, b))
    unexplained = total * FRAME_S
    findings.append(Finding("unexplained_speech", unexplained, cfg.max_unexplained_speech_s,
                            tuple(loud_spans) if unexplained >= cfg.max_unexplained_speech_s else (),
                            f"speech not in the text: {unexplained:.2f} s aligned as silence"))
    return AlignmentReport(tuple(findings), frozenset(low_words), frozenset(squeezed))


@dataclass(frozen=True)
class AsrReport:
    findings: tuple[Finding, ...]
    hypothesis: str
    wer: float
    unheard: frozenset[int]  # reference word indices the recogniser deleted


def _runs(ops: list[tuple[str, int, int]], kind: str) -> list[list[int]]:
    """Runs of strictly consecutive ``kind`` ops, as positions into ``ops``."""
    runs: list[list[int]] = []
    cur: list[int] = []
    for pos, (op, _, _) in enumerate(ops):
        if op == kind:
            cur.append(pos)
        else:
            if cur:
                runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    return runs


def spoken_hypothesis(heard: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """Recognised words normalised as the evaluation normalises a hypothesis (``text_to_words``).

    The recogniser's dictionary holds entries such as "c.'s" or "a.", which ``text_to_words`` turns into
    other words ("c s") or several; a checker that counted the raw entries could pass a clip the evaluation
    finds broken (WER 0.50 here against 0.54 there, on the same audio; fixed in 0485994). A word that becomes
    several shares its time span evenly among them; one that becomes none is dropped.
    """
    out: list[tuple[str, float, float]] = []
    for word, start, end in heard:
        parts = text_to_words(word)
        step = (end - start) / max(1, len(parts))
        out += [(p, start + k * step, start + (k + 1) * step) for k, p in enumerate(parts)]
    return out


def check_asr(ref: list[str], hyp: list[tuple[str, float, float]], duration: float,
              al: WordAlignment | None, cfg: CheckerConfig) -> AsrReport:
    """WER, longest deletion run and longest insertion run, with their time spans.

    ``hyp`` is the recogniser's output as it came; it is normalised here (``spoken_hypothesis``).
    """
    hyp = spoken_hypothesis(hyp)
    hyp_words = [w for w, _, _ in hyp]
    ops = edit_ops(ref, hyp_words)
    errors = sum(op != "ok" for op, _, _ in ops)
    wer = errors / max(1, len(ref))
    aligned = {w.index: (w.start, w.end) for w in al.words} if al is not None else {}

    def hyp_bounds(pos_first: int, pos_last: int) -> tuple[float, float]:
        """Time gap around ops[pos_first..pos_last]: end of the previous heard word to the next."""
        prev = [hyp[j][2] for _, _, j in ops[:pos_first] if j >= 0]
        nxt = [hyp[j][1] for _, _, j in ops[pos_last + 1 :] if j >= 0]
        return (prev[-1] if prev else 0.0), (nxt[0] if nxt else duration)

    del_runs = _runs(ops, "del")
    ins_runs = _runs(ops, "ins")
    longest_del = max((len(r) for r in del_runs), default=0)
    longest_ins = max((len(r) for r in ins_runs), default=0)
    unheard = frozenset(ops[p][1] for r in del_runs for p in r)

    del_spans: list[tuple[float, float]] = []
    skipped: list[int] = []
    for r in del_runs:
        if len(r) < cfg.max_deletion_run:
            continue
        idx = [ops[p][1] for p in r]
        skipped.extend(idx)
        if all(i in aligned for i in idx):
            del_spans.append((aligned[idx[0]][0], aligned[idx[-1]][1]))
        else:
            del_spans.append(hyp_bounds(r[0], r[-1]))
    ins_spans = [(hyp[ops[r[0]][2]][1], hyp[ops[r[-1]][2]][2]) for r in ins_runs if len(r) >= cfg.max_insertion_run]

    shown = " ".join(ref[i] for i in skipped[:6]) + (" ..." if len(skipped) > 6 else "")
    extra = [hyp_words[ops[p][2]] for r in ins_runs if len(r) >= cfg.max_insertion_run for p in r]
    findings = (
        Finding("asr_deletions", float(longest_del), float(cfg.max_deletion_run), tuple(del_spans),
                f"skipped words: {len(skipped)} of {len(ref)} ({shown})"),
        Finding("asr_insertions", float(longest_ins), float(cfg.max_insertion_run), tuple(ins_spans),
                f"extra words heard: {longest_ins} in a row ({' '.join(extra[:6])})"),
        Finding("asr_wer", wer, cfg.max_wer, ((0.0, duration),) if wer >= cfg.max_wer else (),
                f"recognised text differs: WER {wer:.0%}"),
    )
    return AsrReport(findings, " ".join(hyp_words), wer, unheard)
