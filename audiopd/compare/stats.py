"""Aggregates of a comparison, with paired bootstrap intervals against serial decoding, and the listening tally.

Pairing: a system and serial are paired on (voice, text); several seeds are averaged per pair first, so an
interval says what another set of sentences might give, not another draw of the sampler. WER is corpus-level
(edits over reference words, ``audiopd.eval.compare.paired_bootstrap``, reused here); DistillMOS and DNSMOS are
means of per-pair means, resampled the same way (Efron & Tibshirani 1993; Koehn, EMNLP 2004 for the paired form).

"Matches serial": neither headline judge says it is worse beyond the noise, i.e. the 95% interval of
(system - serial) DistillMOS reaches 0 or above and that of WER reaches 0 or below.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from audiopd.errors import AudiopdError
from audiopd.eval.compare import paired_bootstrap, paired_mean
from audiopd.text.wer import judge_words

RESAMPLES = 2000
SERIAL = "serial"
_K = re.compile(r"^parallel-k(\d+)$")


def _mean(values: Sequence[float]) -> float | None:
    vals = [v for v in values if v is not None]
    return round(float(np.mean(vals)), 4) if vals else None


def system_k(system: str) -> int | None:
    m = _K.match(system)
    return int(m.group(1)) if m else None


def _per_pair(utts: Sequence[dict], system: str, key: str) -> dict[tuple[str, str], float]:
    acc: dict[tuple[str, str], list[float]] = defaultdict(list)
    for u in utts:
        if u["system"] == system and u.get(key) is not None:
            acc[(u["voice"], u["text"])].append(float(u[key]))
    return {k: float(np.mean(v)) for k, v in acc.items()}


def _edits(utts: Sequence[dict], system: str) -> dict[tuple[str, str], tuple[float, int]]:
    """(voice, text) -> (edits averaged over seeds, reference words), WER fractions turned back into edits."""
    out = {}
    for key, wer in _per_pair(utts, system, "wer").items():
        ref = max(len(judge_words(key[1])), 1)  # the judges' normaliser (audiopd.eval.judges.wer)
        out[key] = (wer * ref, ref)
    return out


def paired_wer(utts: Sequence[dict], system: str, *, resamples: int = RESAMPLES) -> dict[str, float] | None:
    a, b = _edits(utts, system), _edits(utts, SERIAL)
    if not set(a) & set(b):
        return None
    c = paired_bootstrap(a, b, resamples=resamples)
    return {"n": c.n, "diff": round(c.diff / 100, 4), "low": round(c.low / 100, 4), "high": round(c.high / 100, 4)}


def summarize(utts: Sequence[dict], systems: Sequence[str], *, resamples: int = RESAMPLES) -> dict[str, Any]:
    """Per-system means, paired intervals against serial, and the smallest K that matches serial."""
    per: dict[str, Any] = {}
    for s in systems:
        rows = [u for u in utts if u["system"] == s]
        if not rows:
            continue
        edits = _edits(utts, s)
        words = sum(r for _, r in edits.values())
        per[s] = {
            "n": len(rows), "k": system_k(s),
            "distillmos": _mean([u["distillmos"] for u in rows]), "dnsmos": _mean([u["dnsmos"] for u in rows]),
            "wer": round(sum(e for e, _ in edits.values()) / words, 4) if words else None,
            "passed": round(float(np.mean([u["passed"] for u in rows])), 4),
            "forward_passes": _mean([u["forward_passes"] for u in rows]),
            "wall_s": _mean([u["wall_s"] for u in rows]), "rtf": _mean([u["rtf"] for u in rows]),
        }
    vs: dict[str, Any] = {}
    for s in per:
        if s == SERIAL:
            continue
        mos = paired_mean(_per_pair(utts, s, "distillmos"), _per_pair(utts, SERIAL, "distillmos"), resamples=resamples)
        dns = paired_mean(_per_pair(utts, s, "dnsmos"), _per_pair(utts, SERIAL, "dnsmos"), resamples=resamples)
        wer = paired_wer(utts, s, resamples=resamples)
        matches = bool(mos and wer and mos["high"] >= 0 and wer["low"] <= 0)
        speed = (per[SERIAL]["wall_s"] / per[s]["wall_s"]) if SERIAL in per and per[s]["wall_s"] else None
        vs[s] = {"distillmos": mos, "dnsmos": dns, "wer": wer, "matches": matches,
                 "speedup": round(speed, 3) if speed else None}
    ks = sorted((per[s]["k"], s) for s in vs if per[s]["k"] is not None and vs[s]["matches"])
    return {"systems": per, "vs_serial": vs, "smallest_matching_k": ks[0][0] if ks else None,
            "resamples": resamples,
            "matching_rule": "95% interval of (system - serial) DistillMOS reaches >= 0 and of WER reaches <= 0"}


# ------------------------------------------------------------------------------------ listening tally
ANSWERS_FORMAT = "audiopd-listen/1"
CHOICES = ("left", "right", "same")


def tally(answer_sets: Sequence[dict], utts: Sequence[dict], *, resamples: int = RESAMPLES,
          seed: int = 0) -> dict[str, Any]:
    """Preferences of exported listening answers: per (system vs other) the share preferring the system.

    Ties ("same") count half to each side; the interval resamples the answers (percentile 95%).
    """
    system_of = {u["audio"]: u["system"] for u in utts}
    wins: dict[tuple[str, str], list[float]] = defaultdict(list)
    for k, data in enumerate(answer_sets):
        if not isinstance(data, dict) or data.get("format") != ANSWERS_FORMAT or not isinstance(data.get("answers"),
                                                                                                  list):
            raise AudiopdError(f"answers file {k + 1} is not an export of listen.html (format {ANSWERS_FORMAT})")
        for a in data["answers"]:
            left, right, choice = a.get("left"), a.get("right"), a.get("choice")
            if left not in system_of or right not in system_of:
                raise AudiopdError(f"answers file {k + 1} names clip {left if left not in system_of else right!r}, "
                                   "which this report does not hold: tally against the report it was made from")
            if choice not in CHOICES:
                raise AudiopdError(f"answers file {k + 1} has choice {choice!r}; expected one of {', '.join(CHOICES)}")
            a_sys, b_sys = system_of[left], system_of[right]
            score = {"left": 1.0, "right": 0.0, "same": 0.5}[choice]
            # Orient every pair one way: the other system first, serial second (else by name).
            flip = a_sys == SERIAL if SERIAL in (a_sys, b_sys) else a_sys > b_sys
            if flip:
                wins[(b_sys, a_sys)].append(1.0 - score)
            else:
                wins[(a_sys, b_sys)].append(score)
    if not wins:
        raise AudiopdError("the answers files hold no answers")
    rng = np.random.default_rng(seed)
    rows = []
    for (a_sys, b_sys), vals in sorted(wins.items(), key=lambda kv: (system_k(kv[0][0]) or 10**6, kv[0])):
        v = np.asarray(vals)
        means = v[rng.integers(0, len(v), size=(resamples, len(v)))].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        rows.append({"system": a_sys, "against": b_sys, "n": len(v), "prefer": round(float(v.mean()), 4),
                     "low": round(float(low), 4), "high": round(float(high), 4)})
    return {"pairs": rows, "answers": sum(r["n"] for r in rows)}


def tally_table(result: dict[str, Any]) -> str:
    lines = ["| system | against | answers | prefer system (95%) |", "|---|---|---:|---:|"]
    for r in result["pairs"]:
        lines.append(f"| {r['system']} | {r['against']} | {r['n']} | {100 * r['prefer']:.1f}% "
                     f"({100 * r['low']:.1f}..{100 * r['high']:.1f}) |")
    return "\n".join(lines)
