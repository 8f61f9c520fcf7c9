"""Paired bootstrap of two systems' WER from ``tts_eval`` reports: is a difference beyond the noise?

    python -m audiopd.eval.compare --a serial S0.json S1.json ... --b teacher S0.json \
        [--speakers kal16] [--above 5] [--resamples 2000] [--seed 0]

Each side names a system of the reports (``teacher``, ``parallel``, ``serial`` or ``auto``) and one or
more ``tts_eval --out`` reports. Reports of one synthesis seed are joined (halves of the speakers run as two
processes); with several seeds a side's edits per utterance are their mean, so the figure is the expected WER
over seeds, and every seed's run must hold the same utterances. The two sides are paired on the (speaker, id)
pairs they share, and the sentences are resampled with replacement (Efron & Tibshirani, *An Introduction to the
Bootstrap*, 1993; the paired form is the one Koehn, EMNLP 2004, uses for MT metrics): a WER is corpus-level
(edits over reference words), so each resample recomputes both sums rather than averaging per-sentence rates.

It prints A's WER, B's WER, A - B with its 95% interval and, with ``--above X``, the share of resamples in
which A - B exceeds X (e.g. a voice's gap to its teacher against issue 3's 5 points). ``--asr`` (default whisper)
names the recogniser every report must have been judged by (Whisper and pocketsphinx WERs do not compare); the
reports' DistillMOS and DNSMOS, where they hold them, are compared the same paired way, one line each.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audiopd.errors import AudiopdError
from audiopd.eval import judging
from audiopd.eval.tts_eval import EvalInputError

Key = tuple[str, str]  # (speaker, sentence id)


@dataclass(frozen=True)
class Comparison:
    n: int  # paired utterances
    wer_a: float  # percent
    wer_b: float
    diff: float  # wer_a - wer_b, points
    low: float  # 95% interval of diff
    high: float
    share_above: float | None  # share of resamples with diff > the threshold asked for


def utterance_edits(reports: Sequence[dict], system: str,
                    speakers: Sequence[str] | None = None) -> dict[Key, tuple[float, int]]:
    """(speaker, id) -> (edits averaged over synthesis seeds, reference words) for one system.

    Reports of one seed (their ``seed`` field) are parts of one run, e.g. two processes over halves of the
    speakers, and are joined; runs of different seeds are averaged and must hold the same utterances.
    """
    if not reports:
        raise EvalInputError("no reports given")
    runs: dict[object, dict[Key, tuple[int, int]]] = {}
    for k, rep in enumerate(reports):
        utts = rep.get("utterances") if isinstance(rep, dict) else None
        if not isinstance(utts, list):
            raise EvalInputError(f"report {k + 1} has no 'utterances' list (write one with tts_eval --out)")
        table = {(u["speaker"], u["id"]): (int(u["edits"]), int(u["ref_words"])) for u in utts
                 if u.get("system") == system and (speakers is None or u["speaker"] in speakers)}
        if not table:
            have = sorted({str(u.get("system")) for u in utts})
            raise EvalInputError(f"report {k + 1} has no '{system}' utterances"
                                 f"{' for ' + ','.join(speakers) if speakers else ''} (it has {', '.join(have)})")
        run = runs.setdefault(rep.get("seed"), {})
        twice = set(run) & set(table)
        if twice:
            raise EvalInputError(f"report {k + 1} repeats '{system}' utterance {sorted(twice)[0]} of another report "
                                 f"of seed {rep.get('seed')}: give each run once")
        run.update(table)
    tables = list(runs.values())
    for seed, table in list(runs.items())[1:]:
        if set(table) != set(tables[0]):
            raise EvalInputError(f"the seed {seed} run holds other '{system}' utterances than the first "
                                 f"({len(table)} against {len(tables[0])}); average only runs of the same sentences")
    return {key: (sum(t[key][0] for t in tables) / len(tables), tables[0][key][1]) for key in tables[0]}


def paired_bootstrap(a: dict[Key, tuple[float, int]], b: dict[Key, tuple[float, int]], *, resamples: int = 2000,
                     seed: int = 0, above: float | None = None) -> Comparison:
    """A - B in WER points over the utterances both hold, with a percentile 95% interval."""
    if resamples < 100:
        raise EvalInputError(f"resamples must be >= 100 for a 95% interval, got {resamples}")
    keys = sorted(set(a) & set(b))
    if not keys:
        raise EvalInputError("the two sides share no (speaker, id) utterance")
    mismatched = [k for k in keys if a[k][1] != b[k][1]]
    if mismatched:
        raise EvalInputError(f"utterance {mismatched[0]} has {a[mismatched[0]][1]} reference words on one side and "
                             f"{b[mismatched[0]][1]} on the other: not the same text")
    ea = np.array([a[k][0] for k in keys], dtype=np.float64)
    eb = np.array([b[k][0] for k in keys], dtype=np.float64)
    ref = np.array([a[k][1] for k in keys], dtype=np.float64)
    if ref.sum() <= 0:
        raise EvalInputError("the paired utterances have no reference words")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(keys), size=(resamples, len(keys)))
    words = ref[idx].sum(axis=1)
    diffs = 100.0 * (ea[idx].sum(axis=1) - eb[idx].sum(axis=1)) / np.maximum(words, 1.0)
    wer_a = 100.0 * ea.sum() / ref.sum()
    wer_b = 100.0 * eb.sum() / ref.sum()
    low, high = np.percentile(diffs, [2.5, 97.5])
    return Comparison(n=len(keys), wer_a=round(wer_a, 2), wer_b=round(wer_b, 2), diff=round(wer_a - wer_b, 2),
                      low=round(float(low), 2), high=round(float(high), 2),
                      share_above=None if above is None else round(float(np.mean(diffs > above)), 3))


def utterance_mos(reports: Sequence[dict], system: str, key: str,
                  speakers: Sequence[str] | None = None) -> dict[Key, float]:
    """(speaker, id) -> one MOS key (``judging.MOS_KEYS``) of ``system``, averaged over the reports that hold it."""
    values: dict[Key, list[float]] = {}
    for rep in reports:
        for u in rep.get("utterances") or []:
            if u.get("system") == system and u.get(key) is not None and (speakers is None or u["speaker"] in speakers):
                values.setdefault((u["speaker"], u["id"]), []).append(float(u[key]))
    return {k: float(np.mean(v)) for k, v in values.items()}


def paired_differences(a: dict, b: dict, *, resamples: int = 2000,
                       seed: int = 0) -> tuple[list, np.ndarray, float, float] | None:
    """(shared keys, a - b per key, low, high): the percentile 95% interval of mean(a - b) over resampled keys;
    None when ``a`` and ``b`` share no key."""
    keys = sorted(set(a) & set(b))
    if not keys:
        return None
    d = np.array([a[k] - b[k] for k in keys])
    idx = np.random.default_rng(seed).integers(0, len(keys), size=(resamples, len(keys)))
    low, high = np.percentile(d[idx].mean(axis=1), [2.5, 97.5])
    return keys, d, float(low), float(high)


def paired_mean(a: dict, b: dict, *, resamples: int = 2000, seed: int = 0) -> dict[str, float] | None:
    """mean(a - b) over shared keys with a percentile 95% interval; None without shared keys."""
    found = paired_differences(a, b, resamples=resamples, seed=seed)
    if found is None:
        return None
    keys, d, low, high = found
    return {"n": len(keys), "diff": round(float(d.mean()), 4), "low": round(float(low), 4),
            "high": round(float(high), 4)}


def paired_mos(a: dict[Key, float], b: dict[Key, float], *, resamples: int = 2000,
               seed: int = 0) -> tuple[int, float, float, float, float] | None:
    """(n, mean A, mean B, low, high): A's and B's mean over shared utterances, 95% interval of A - B by the same
    resampling of sentences as ``paired_bootstrap``; None when they share none."""
    found = paired_differences(a, b, resamples=resamples, seed=seed)
    if found is None:
        return None
    keys, _, low, high = found
    return (len(keys), round(float(np.mean([a[k] for k in keys])), 3), round(float(np.mean([b[k] for k in keys])), 3),
            round(float(low), 3), round(float(high), 3))


def check_asr(reports: Sequence[dict], paths: Sequence[str], asr: str) -> None:
    """Every report's WER must come from ``asr``: a Whisper and a pocketsphinx WER are not comparable."""
    for rep, path in zip(reports, paths):
        judged_by = judging.report_asr(rep)
        if judged_by != asr:
            raise EvalInputError(f"{path} was judged by {judged_by}, not {asr} (pass --asr {judged_by}, or rerun "
                                 f"tts_eval --asr {asr})")


def _load(path: str) -> dict:
    p = Path(path)
    if not p.is_file():
        raise EvalInputError(f"no report at {path}")
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EvalInputError(f"{path}: not a JSON report ({exc})") from None


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m audiopd.eval.compare", description=__doc__.splitlines()[0])
    p.add_argument("--a", nargs="+", required=True, metavar=("SYSTEM", "REPORT"),
                   help="system of side A, then its tts_eval --out report(s)")
    p.add_argument("--b", nargs="+", required=True, metavar=("SYSTEM", "REPORT"),
                   help="system of side B, then its report(s)")
    p.add_argument("--speakers", default=None, help="comma-separated speakers to keep (default: all)")
    p.add_argument("--above", type=float, default=None, metavar="X", help="also print the share of A - B > X")
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    judging.add_asr_argument(p)
    args = p.parse_args(argv)
    try:
        for side in (args.a, args.b):
            if len(side) < 2:
                raise EvalInputError(f"{side[0]!r}: give a system and at least one report")
        speakers = [s.strip() for s in args.speakers.split(",") if s.strip()] if args.speakers else None
        reps_a, reps_b = [_load(f) for f in args.a[1:]], [_load(f) for f in args.b[1:]]
        check_asr(reps_a + reps_b, args.a[1:] + args.b[1:], args.judge_asr)
        a = utterance_edits(reps_a, args.a[0], speakers)
        b = utterance_edits(reps_b, args.b[0], speakers)
        c = paired_bootstrap(a, b, resamples=args.resamples, seed=args.seed, above=args.above)
        mos = {k: paired_mos(utterance_mos(reps_a, args.a[0], k, speakers),
                             utterance_mos(reps_b, args.b[0], k, speakers), resamples=args.resamples, seed=args.seed)
               for k in judging.MOS_KEYS}
    except AudiopdError as exc:
        print(f"compare: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    line = (f"{c.n} paired utterances: A {args.a[0]} ({len(args.a) - 1} report(s)) {c.wer_a:.2f}, "
            f"B {args.b[0]} ({len(args.b) - 1}) {c.wer_b:.2f}, A - B {c.diff:+.2f} (95% {c.low:+.2f}..{c.high:+.2f})")
    if c.share_above is not None:
        line += f", share of resamples with A - B > {args.above:g}: {c.share_above:.3f}"
    print(line.replace(" paired utterances:", f" paired utterances, {args.judge_asr} WER:", 1))
    for k, m in mos.items():
        if m is not None:
            print(f"{k}: {m[0]} paired utterances: A {m[1]:.3f}, B {m[2]:.3f}, A - B {m[1] - m[2]:+.3f} "
                  f"(95% {m[3]:+.3f}..{m[4]:+.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
