"""Derive checker thresholds from a checker-bench report that carries outside ASR judgements.

    python -m audiopd.eval.checker_bench --voice joe --n 40 --out bench.json
    python -m audiopd.eval.checker_calib bench.json [--broken-wer 0.5] [--asr whisper|pocketsphinx] [--json]

For each recogniser/alignment/ASR threshold (the phone recogniser's ``max_ctc_gap``, ``max_phone_deletions``,
``max_phone_insertions``, ``max_per``; PocketSphinx's ``min_window_score``, ``min_mean_score``,
``max_unexplained_speech_s``, ``max_wer``) it sweeps the values that sit exactly on a *broken*
clean clip's metric (outside WER > ``--broken-wer``) and reports, at each value, how many broken
clips the threshold catches and the false-alarm rate on the *intelligible* clean clips (outside
WER <= ``--broken-wer``): by that threshold alone, and together with the other checks that failed
in the bench run. A check fails at ``value / threshold >= 1`` (``audiopd.checker.signal.Finding``),
so a value listed here fails the clip it came from. Headline per threshold: the loosest value
that fails every broken clip (alone, and with the other checks' help; the current value when the
other checks already fail them all), or None when no value can (a broken clip has no such metric,
e.g. its alignment failed or ASR did not run, or sits at 0).

The other checks' verdicts are those of the bench run's thresholds, and with ``asr="borderline"``
whether ASR ran depends on them too, so ``asr_wer`` is known only for the clips where it ran
(see ``n_with_metric``; ``--checker-asr always`` on the bench gives every clip one). Pure: reads the
JSON, computes, prints. ``--asr`` (default whisper) names the outside recogniser the bench report must
have been judged by, so a threshold is never derived from the wrong judge; the mean DistillMOS and DNSMOS of
the intelligible and the broken clips are printed beside the counts.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from audiopd.eval import judging
from audiopd.text.wer import BROKEN_WER

# CheckerConfig field -> the metric (and check name) it bounds.
THRESHOLDS: dict[str, str] = {
    "max_ctc_gap": "phone_window",
    "max_phone_deletions": "phone_deletions",
    "max_phone_insertions": "phone_insertions",
    "max_per": "phone_error_rate",
    "min_window_score": "alignment_window",
    "min_mean_score": "alignment_mean",
    "max_unexplained_speech_s": "unexplained_speech",
    "max_wer": "asr_wer",
}


def fails(value: float | None, threshold: float) -> bool:
    """The checker's rule: badness = value / threshold >= 1 (None = metric absent = cannot fail here)."""
    return value is not None and threshold != 0 and value / threshold >= 1.0


def _loosest(values: list[float | None], lower_is_worse: bool) -> float | None:
    """The loosest threshold failing every value; None if some value has no metric or cannot fail."""
    known = [v for v in values if v is not None]
    if not values or len(known) < len(values):
        return None
    t = max(known) if lower_is_worse else min(known)
    return t if t != 0 and all(fails(v, t) for v in known) else None


def derive(report: dict[str, Any], broken_wer: float = BROKEN_WER, asr: str | None = None) -> dict[str, Any]:
    """Per threshold: the sweep and headline values (see the module doc). Raises ValueError without outside WERs,
    or when ``asr`` is given and the report's outside judgement came from another recogniser."""
    judged_by = judging.report_asr(report, "outside_judge")
    if asr is not None and judged_by != asr:
        raise ValueError(f"the report's outside judgement is by {judged_by}, not {asr} (rerun checker_bench with "
                         f"--asr {asr}, or pass --asr {judged_by})")
    clean = [it for it in report.get("items", []) if it.get("kind") == "clean" and it.get("outside") is not None]
    if not clean:
        raise ValueError("the report has no clean items with an outside judgement (run checker_bench --voice, "
                         "or --outside for flite)")
    good = [it for it in clean if it["outside"]["wer"] <= broken_wer]
    broken = [it for it in clean if it["outside"]["wer"] > broken_wer]
    current = report.get("checker") or {}
    out: dict[str, Any] = {"broken_wer": broken_wer, "asr": judged_by, "n_clean": len(clean),
                           "n_intelligible": len(good), "n_broken": len(broken),
                           "mos_intelligible": judging.mos_means(it["outside"] for it in good),
                           "mos_broken": judging.mos_means(it["outside"] for it in broken), "thresholds": {}}
    for param, metric in THRESHOLDS.items():

        def value(it: dict[str, Any], metric: str = metric) -> float | None:
            v = it["metrics"].get(metric)
            return None if v is None else float(v)

        def other(it: dict[str, Any], metric: str = metric) -> bool:
            return any(name != metric for name in it["failed"])

        lower_is_worse = param.startswith("min_")
        cur = current.get(param)
        candidates = {v for v in map(value, broken) if v is not None and v != 0}
        if cur is not None:
            candidates.add(float(cur))
        # Loose to strict: a stricter threshold catches more and false-alarms more.
        sweep = []
        for t in sorted(candidates, reverse=not lower_is_worse):
            if not lower_is_worse and t <= 0:
                continue
            alone_b = sum(fails(value(it), t) for it in broken)
            total_b = sum(fails(value(it), t) or other(it) for it in broken)
            alone_g = sum(fails(value(it), t) for it in good)
            total_g = sum(fails(value(it), t) or other(it) for it in good)
            sweep.append({"value": t, "current": cur is not None and t == float(cur),
                          "broken_caught_alone": alone_b, "broken_caught_total": total_b,
                          "fa_intelligible_alone": alone_g / len(good) if good else None,
                          "fa_intelligible_total": total_g / len(good) if good else None})
        uncaught = [it for it in broken if not other(it)]
        out["thresholds"][param] = {
            "metric": metric,
            "current": cur,
            "n_with_metric": sum(value(it) is not None for it in clean),
            "fail_all_broken_alone": _loosest([value(it) for it in broken], lower_is_worse),
            "fail_all_broken_with_others": (_loosest([value(it) for it in uncaught], lower_is_worse)
                                            if uncaught else (cur if broken else None)),
            "sweep": sweep,
        }
    return out


def format_text(result: dict[str, Any]) -> str:
    """Human-readable tables of ``derive``'s result."""

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    lines = [f"{result['n_clean']} clean clips: {result['n_intelligible']} intelligible, {result['n_broken']} "
             f"broken (outside {result.get('asr', 'pocketsphinx')} WER > {result['broken_wer']})"]
    for group in ("intelligible", "broken"):
        mos = result.get(f"mos_{group}") or {}
        if mos.get("distillmos") is not None:
            lines.append(f"{group}: DistillMOS {mos['distillmos']:.2f}, DNSMOS OVRL {mos['dnsmos_ovrl']:.2f}, "
                         f"P.808 {mos['dnsmos_p808']:.2f}")
    for param, r in result["thresholds"].items():
        lines += ["", f"{param} (metric {r['metric']}, on {r['n_with_metric']} clean clips; current {r['current']}): "
                  f"fails every broken clip at {r['fail_all_broken_alone']} alone, "
                  f"{r['fail_all_broken_with_others']} with the other checks",
                  "| value | broken caught alone | with others | FA intelligible alone | with others |",
                  "|---|---|---|---|---|"]
        for row in r["sweep"]:
            mark = " (current)" if row["current"] else ""
            lines.append(f"| {row['value']:g}{mark} | {row['broken_caught_alone']}/{result['n_broken']} | "
                         f"{row['broken_caught_total']}/{result['n_broken']} | {pct(row['fa_intelligible_alone'])} | "
                         f"{pct(row['fa_intelligible_total'])} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audiopd.eval.checker_calib", description=__doc__.split("\n")[0])
    ap.add_argument("report", type=Path, metavar="BENCH.json", help="a checker_bench --out report")
    ap.add_argument("--broken-wer", type=float, default=BROKEN_WER, help="outside WER above which a clip is broken")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    judging.add_asr_argument(ap)
    args = ap.parse_args(argv)
    try:
        report = json.loads(args.report.read_text())
        result = derive(report, args.broken_wer, args.judge_asr)
    except (OSError, json.JSONDecodeError, ValueError, KeyError, TypeError) as exc:
        print(f"{ap.prog}: error: {args.report}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1) if args.json else format_text(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
