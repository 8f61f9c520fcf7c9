"""What the phone recogniser's posteriors say about a clip: small pure functions over log-posteriors [T, C].

Two views of the same posteriors, as PocketSphinx's forced alignment and free recognition gave before
(``audiopd.checker.speech``), at about a fiftieth of their cost (samples/report.md, "The fast checker"):

* forced alignment of the intended phones (CTC Viterbi, blank = 0): where each phone sits, and per frame the
  *gap* between the best class's log-posterior and the aligned one's (a goodness-of-pronunciation score,
  Witt & Young 2000). Audio that says what the text says keeps the gap near 0; a skipped stretch forces phones
  onto audio that says something else, and a repeated one forces heard phones onto blank: both open a gap
  over a few hundred milliseconds;
* greedy decoding, scored against the intended phones: the most unheard phones (skips, truncation) and the
  most extra ones (repeats, stray words) among a few consecutive edits, and the phone error rate (another
  sentence's audio).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from audiopd.checker.signal import Finding
from audiopd.text.wer import edit_ops

BLANK = 0


def greedy(logp: np.ndarray) -> list[tuple[int, int, int]]:
    """Best path, collapsed: (label, first frame, last frame + 1) for every non-blank run."""
    best = np.asarray(logp).argmax(axis=1)
    out: list[tuple[int, int, int]] = []
    prev = BLANK
    for t, c in enumerate(best.tolist()):
        if c != BLANK and c == prev:
            out[-1] = (c, out[-1][1], t + 1)
        elif c != BLANK:
            out.append((c, t, t + 1))
        prev = c
    return out


def force_align(logp: np.ndarray, labels: list[int]) -> np.ndarray | None:
    """CTC Viterbi alignment: the extended-sequence state of every frame, or None if ``labels`` cannot fit.

    States are ``2 * i + 1`` for label ``i`` and even numbers for the blanks around it.
    """
    lp = np.asarray(logp, dtype=np.float64)
    n_frames, n_labels = lp.shape[0], len(labels)
    ext = np.zeros(2 * n_labels + 1, dtype=np.int64)
    ext[1::2] = labels
    n_states = ext.size
    # A label may be entered from two states back unless it repeats the label before it (CTC's rule).
    skip = np.zeros(n_states, dtype=bool)
    skip[3::2] = ext[3::2] != ext[1:-2:2]
    neg = -np.inf
    score = np.full(n_states, neg)
    score[0] = lp[0, ext[0]]
    if n_states > 1:
        score[1] = lp[0, ext[1]]
    back = np.zeros((n_frames, n_states), dtype=np.int8)
    emit = lp[:, ext]  # [T, S]
    # Rows: stay in the state, step from the one before, jump over a blank; filled in place frame by frame.
    cand = np.full((3, n_states), neg)
    jumps = np.flatnonzero(skip)
    for t in range(1, n_frames):
        cand[0] = score
        cand[1, 1:] = score[:-1]
        cand[2, jumps] = score[jumps - 2]
        arg = cand.argmax(axis=0)
        score = cand.max(axis=0) + emit[t]
        back[t] = arg
    ends = [n_states - 1] + ([n_states - 2] if n_states > 1 else [])
    last = max(ends, key=lambda s: score[s])
    if not np.isfinite(score[last]):
        return None
    path = np.empty(n_frames, dtype=np.int64)
    s = last
    for t in range(n_frames - 1, -1, -1):
        path[t] = s
        s -= int(back[t, s])
    return path if path[0] in (0, 1) else None


@dataclass(frozen=True)
class PhoneCheckConfig:
    """Thresholds of the recogniser checks (values and their calibration: ``audiopd.checker.config``)."""

    window_s: float
    max_window_gap: float
    max_deletions: int  # in any ``edit_window`` consecutive edit operations
    max_insertions: int
    max_per: float
    edit_window: int = 12
    per_full_phones: int = 30
    short_per_slack: float = 0.0

    def per_limit(self, n_phones: int) -> float:
        """The phone error rate at which a clip of ``n_phones`` intended phones fails: ``max_per``, raised below
        ``per_full_phones`` by ``short_per_slack * (sqrt(per_full_phones / n) - 1)`` as a rate over few phones
        gets noisier (0 slack: one limit for every clip)."""
        return self.max_per + self.short_per_slack * max(0.0, math.sqrt(self.per_full_phones / max(1, n_phones)) - 1)


@dataclass(frozen=True)
class PhoneReport:
    findings: tuple[Finding, ...]
    phone_spans: tuple[tuple[float, float], ...]  # per intended phone, seconds ((nan, nan) when unaligned)
    phone_scores: tuple[float, ...]  # mean log-posterior of the phone over its frames
    hypothesis: tuple[int, ...]
    metrics: dict[str, float]


def densest(ops: list[tuple[str, int, int]], kind: str, width: int) -> tuple[int, int]:
    """(most ``kind`` ops among any ``width`` consecutive edit ops, where that window starts).

    A count in a window rather than a run: a recogniser with a 15-25% phone error rate breaks a skipped or
    repeated stretch's run of deletions or insertions with stray matches, but not its density.
    """
    hits = np.asarray([op == kind for op, _, _ in ops], dtype=np.int64)
    if hits.size == 0:
        return 0, 0
    w = min(width, hits.size)
    counts = np.convolve(hits, np.ones(w, dtype=np.int64), mode="valid")
    at = int(counts.argmax())
    return int(counts[at]), at


def phone_edits(logp: np.ndarray, labels) -> tuple[list[tuple[int, int, int]], list]:
    """The greedy phones of ``logp`` and their edit ops against the intended ``labels``."""
    hyp = greedy(logp)
    return hyp, edit_ops([str(x) for x in labels], [str(h[0]) for h in hyp])


def phone_errors(logp: np.ndarray, labels) -> int:
    """Edits between the greedy phones and the intended ones: the phone error rate's numerator (the checker's, and
    the recogniser recipe's held-out figure, recipes/checker)."""
    return sum(op != "ok" for op, _, _ in phone_edits(logp, labels)[1])


def check_phones(logp: np.ndarray, labels: list[int], frame_s: float, cfg: PhoneCheckConfig) -> PhoneReport:
    """Alignment gap, densest unheard/extra phones and phone error rate of one clip against its intended phones."""
    lp = np.asarray(logp, dtype=np.float64)
    n_frames = lp.shape[0]
    duration = n_frames * frame_s
    hyp, ops = phone_edits(lp, labels)
    errors = sum(op != "ok" for op, _, _ in ops)
    per = errors / max(1, len(labels))
    per_limit = cfg.per_limit(len(labels))
    path = force_align(lp, labels) if n_frames >= len(labels) else None
    findings: list[Finding] = []
    metrics: dict[str, float] = {"phone_error_rate": per, "phones": float(len(labels))}

    spans: list[tuple[float, float]] = [(float("nan"), float("nan"))] * len(labels)
    scores: list[float] = [float("nan")] * len(labels)
    if path is None:
        findings.append(Finding("phone_alignment", float("inf"), 1.0, ((0.0, duration),),
                                "the intended phones do not fit the audio (too short: cut off or missing)"))
    else:
        ext = np.zeros(2 * len(labels) + 1, dtype=np.int64)
        ext[1::2] = labels
        aligned = lp[np.arange(n_frames), ext[path]]
        gap = lp.max(axis=1) - aligned
        k = max(1, min(n_frames, int(round(cfg.window_s / frame_s))))
        win = np.convolve(gap, np.ones(k) / k, mode="valid")
        worst = float(win.max())
        bad = np.flatnonzero(win > cfg.max_window_gap)
        win_spans = tuple((float(i * frame_s), float((i + k) * frame_s)) for i in bad)
        at = int(win.argmax())
        findings.append(Finding("phone_window", worst, cfg.max_window_gap, win_spans,
                                f"audio and text disagree at {at * frame_s:.2f}-{(at + k) * frame_s:.2f} s "
                                f"(gap {worst:.1f} > {cfg.max_window_gap:.1f})"))
        metrics["phone_gap_mean"] = float(gap.mean())
        for i in range(len(labels)):
            frames = np.flatnonzero(path == 2 * i + 1)
            if frames.size:
                spans[i] = (float(frames[0] * frame_s), float((frames[-1] + 1) * frame_s))
                scores[i] = float(lp[frames, labels[i]].mean())

    def hyp_time(j: int, edge: int) -> float:
        return float(hyp[j][edge] * frame_s)

    n_del, at_del = densest(ops, "del", cfg.edit_window)
    n_ins, at_ins = densest(ops, "ins", cfg.edit_window)

    def window_span(at: int) -> tuple[float, float]:
        """Time span of edit ops [at, at + edit_window): from the heard phone before it to the one after it."""
        before = [hyp_time(j, 2) for _, _, j in ops[:at] if j >= 0]
        after = [hyp_time(j, 1) for _, _, j in ops[at + cfg.edit_window:] if j >= 0]
        return (before[-1] if before else 0.0), (after[0] if after else duration)

    findings += [
        Finding("phone_deletions", float(n_del), float(cfg.max_deletions),
                (window_span(at_del),) if n_del >= cfg.max_deletions else (),
                f"unheard phones: {n_del} in {cfg.edit_window} edits"),
        Finding("phone_insertions", float(n_ins), float(cfg.max_insertions),
                (window_span(at_ins),) if n_ins >= cfg.max_insertions else (),
                f"extra phones heard: {n_ins} in {cfg.edit_window} edits"),
        Finding("phone_error_rate", per, per_limit, ((0.0, duration),) if per >= per_limit else (),
                f"heard phones differ from the text: PER {per:.0%}"),
    ]
    return PhoneReport(tuple(findings), tuple(spans), tuple(scores), tuple(h[0] for h in hyp), metrics)
