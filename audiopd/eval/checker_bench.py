"""Checker benchmark: detection rate per injected fault and false alarms on clean audio.

    python -m audiopd.eval.checker_bench --n 40 --out report.json              # flite teachers
    python -m audiopd.eval.checker_bench --voice joe --n 40 --out v.json   # the voice's own output
    python -m audiopd.eval.checker_bench --voice joe --teacher --n 40          # its teacher, its thresholds
    python -m audiopd.eval.checker_bench --voice natural --words 2-6 --min-seconds 0.6   # short sentences

Clean clips (``audiopd.eval.bench_clips``) are either flite renderings (voices slt, rms, awb, kal16,
round-robin) or, with ``--voice``, that voice's own parallel output (its speakers round-robin) of the same
fortune-file sentences, or, with ``--voice V --teacher``, V's natural teachers (``audiopd.eval.peers``: Piper
joe for ``voices/joe``) checked with V's thresholds. Sentences are split by a hash into a *calibration* part
(one in four; used to set the thresholds in ``audiopd.checker.config``) and a *benchmark* part (the rest; used
here by default), so the reported rates are measured on sentences the thresholds never saw. Every clean clip is
scored as is (false alarms) and with each fault of ``audiopd.eval.faults`` (detections). Runs in one process,
one thread.

Thresholds: ``CheckerConfig()`` for flite; for a voice, the voice's own ``checker.yaml`` if it
has one (what auto mode runs), else ``CheckerConfig()``. The checker sees audio and text only;
auto mode also hands it the predicted durations and the codes, which add the length,
repetition and confidence checks and widen the pause limit to the longest predicted unit.

A young voice is not as intelligible as its teachers, so a "false alarm" on its output may be a true one. Each
clean voice clip therefore also gets an *outside* judgement (``audiopd.eval.judging``): free recognition by
``--asr whisper`` (default) or ``pocketsphinx`` scored against the text, with DistillMOS and DNSMOS beside it.
Clips with outside WER <= 0.5 count as intelligible; the report gives false alarms on those and on all clean
clips, and "broken passed": clips with outside WER > 0.5 that the checker passed (``outside_summary``).
PocketSphinx is the recogniser the checker's own ASR check uses, so with ``--asr pocketsphinx --checker-asr
always`` the two are not independent; Whisper is. The JSON report holds the rates, a markdown table (condition x
check that fired), the misses, the checker's cost as a real-time factor (``rtf``, and ``rtf_asr`` /
``rtf_align`` for its two PocketSphinx passes), every clip (text, speaker, seconds, outside WER) and one record
per scored clip (metrics, failed checks), for re-deriving thresholds offline (``python -m
audiopd.eval.checker_calib``). Latest flite figures: the docstring of ``audiopd.checker.config``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from audiopd.eval.bench_clips import (
    FLITE_VOICES,
    FORTUNE_DIR,
    Clip,
    flite_clips,
    load_sentences,
    peer_clips,
    render,
    voice_clips,
)
from audiopd.eval import judging
from audiopd.text.wer import BROKEN_WER

__all__ = ["FORTUNE_DIR", "VOICES", "Clip", "clips", "load_sentences", "main", "outside_summary", "render",
           "run_bench"]

VOICES = FLITE_VOICES  # the flite teacher voices (older name, kept for callers)
clips = flite_clips  # older name, kept for callers
Recognizer = Callable[[Any, int], str]


def _table(rows: dict[str, dict], checks: list[str]) -> str:
    """Markdown confusion table: per condition, the share flagged and which checks fired."""
    head = "| condition | n | flagged | " + " | ".join(checks) + " |"
    sep = "|---|---|---|" + "---|" * len(checks)
    lines = [head, sep]
    for cond, r in rows.items():
        n = r["n"]
        cells = [f"{r['fired'].get(c, 0) / n:.0%}" if r["fired"].get(c) else "" for c in checks]
        lines.append(f"| {cond} | {n} | {r['flagged'] / n:.1%} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def outside_judgement(text: str, audio: Any, sample_rate: int,
                      judge: judging.EvalJudge | Recognizer) -> dict[str, Any]:
    """A clean clip judged against its text: hypothesis, edits, reference words, WER and the MOS keys."""
    if not isinstance(judge, judging.EvalJudge):
        judge = judging.EvalJudge(judge)
    sc = judge.score(text, audio, sample_rate)
    n_ref = sc["ref_words"]
    return {"hyp": " ".join(sc["hyp"]), "edits": sc["edits"], "ref_words": n_ref,
            "wer": round(sc["edits"] / max(1, n_ref), 4), **{k: sc[k] for k in judging.MOS_KEYS}}


def outside_summary(items: Sequence[dict[str, Any]], broken_wer: float = BROKEN_WER) -> dict[str, Any] | None:
    """Checker verdicts on clean clips against the outside judgement (None when no clean item has one).

    A clean clip is *intelligible* when its outside WER is <= ``broken_wer`` and *broken* otherwise;
    false alarms are flagged clean clips (on the intelligible ones, and on all), and "broken
    passed" counts broken clips the checker passed. ``outside_wer`` is corpus-level (edits / words); the MOS
    keys are means over the clean clips.
    """
    clean = [it for it in items if it["kind"] == "clean" and it.get("outside") is not None]
    if not clean:
        return None

    def flagged(it: dict[str, Any]) -> bool:
        return not it["passed"]

    good = [it for it in clean if it["outside"]["wer"] <= broken_wer]
    broken = [it for it in clean if it["outside"]["wer"] > broken_wer]
    fa_good = sum(map(flagged, good))
    fa_all = sum(map(flagged, clean))
    passed_broken = sum(not flagged(it) for it in broken)
    words = sum(it["outside"]["ref_words"] for it in clean)
    return {
        "broken_wer": broken_wer,
        "n_clean": len(clean),
        "n_intelligible": len(good),
        "n_broken": len(broken),
        "outside_wer": round(sum(it["outside"]["edits"] for it in clean) / max(1, words), 4),
        "false_alarms_intelligible": fa_good,
        "false_alarm_rate_intelligible": fa_good / len(good) if good else None,
        "false_alarms_all": fa_all,
        "false_alarm_rate_all": fa_all / len(clean),
        "broken_passed": passed_broken,
        "broken_passed_rate": passed_broken / len(broken) if broken else None,
        **judging.mos_means(it["outside"] for it in clean),
    }


def run_bench(n: int, split: str = "bench", asr: str | None = None, progress: bool = True,
              kinds: tuple[str, ...] | None = None, offset: int = 0, *, tts: Any = None,
              voice_name: str | None = None, seed: int = 0, batch: int = 4, outside: bool | None = None,
              recognizer: Recognizer | None = None, sentences: Sequence[str] | None = None,
              min_seconds: float = 2.0, judge: judging.EvalJudge | None = None,
              listener: str | None = None, teachers: Sequence[Any] | None = None) -> dict:
    """Score ``n`` clean clips and every fault of each; returns the report as plain data.

    Clean clips are flite renderings, or the parallel output of ``tts`` (a loaded ``Synthesizer``)
    when given; then the checker uses ``tts.checker_config`` (the voice's checker.yaml) if set.
    ``kinds`` limits the conditions ("clean" and/or fault kinds); ``offset`` skips sentences;
    ``outside`` (default: on for a voice) adds the outside judgement of each clean clip by ``judge``
    (default: Whisper with DistillMOS/DNSMOS), or by a bare ``recognizer(audio, rate) -> text`` (no MOS);
    ``sentences`` replaces the fortune sentences of ``split`` for a voice (tests). ``asr`` is the checker's
    own recognition policy (always, borderline, never), not the outside recogniser; ``listener`` overrides the
    checker's aligning recogniser ("ctc", the default, or "sphinx", the thorough one). ``teachers`` (natural
    teachers, ``audiopd.eval.peers``) speak the clean clips instead, checked with ``tts``'s thresholds: the
    voice's checker on the audio it was taught to imitate.
    """
    from audiopd.checker import CheckerConfig, score
    from audiopd.config import to_dict
    from audiopd.eval.faults import FAULT_KINDS, inject

    voice_cfg = getattr(tts, "checker_config", None) if tts is not None else None
    cfg = voice_cfg or CheckerConfig()
    if asr is not None:
        cfg = dataclasses.replace(cfg, asr=asr)
    if listener is not None:
        cfg = dataclasses.replace(cfg, recognizer=listener)
    outside = (tts is not None) if outside is None else outside
    if outside and judge is None:
        judge = judging.EvalJudge(recognizer) if recognizer else judging.make_judge(judging.JudgeConfig())
    conditions = tuple(kinds) if kinds else ("clean", *FAULT_KINDS)
    unknown = set(conditions) - {"clean", *FAULT_KINDS}
    if unknown:
        raise ValueError(f"unknown condition(s): {', '.join(sorted(unknown))}")
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else None
    rows: dict[str, dict] = {k: {"n": 0, "flagged": 0, "fired": {}, "misses": []} for k in conditions}
    items: list[dict] = []
    audio_s = check_s = asr_s = align_s = 0.0  # align_s, asr_s: the checker's two PocketSphinx passes
    if teachers:
        clean = peer_clips(teachers, split, n, min_seconds=min_seconds, offset=offset, sentences=sentences, log=log)
    elif tts is None:
        with tempfile.TemporaryDirectory(prefix="checker_bench_") as tmp:
            clean = flite_clips(split, n, Path(tmp), offset=offset, min_seconds=min_seconds)
    else:
        clean = voice_clips(tts, split, n, min_seconds=min_seconds, offset=offset, seed=seed, batch=batch,
                            sentences=sentences, log=log)
    clip_info: list[dict[str, Any]] = []
    for i, clip in enumerate(clean):
        judged = outside_judgement(clip.text, clip.audio, clip.sample_rate, judge) if outside else None
        clip_info.append({"clip": i, "voice": clip.voice, "text": clip.text, "seconds": round(clip.seconds, 3),
                          "outside": judged})
        cases = [("clean", clip.audio, "")] if "clean" in conditions else []
        for kind in (k for k in FAULT_KINDS if k in conditions):
            other = clean[(i + 1) % len(clean)].audio
            y, fault = inject(kind, clip.audio, clip.sample_rate, seed=i, other=other)
            cases.append((kind, y, fault.detail))
        for kind, y, detail in cases:
            t0 = time.perf_counter()
            v = score(y, clip.sample_rate, clip.text, config=cfg)
            check_s += time.perf_counter() - t0
            asr_s += v.metrics.get("asr_seconds", 0.0)
            align_s += v.metrics.get("align_seconds", 0.0)
            audio_s += len(y) / clip.sample_rate
            r = rows[kind]
            r["n"] += 1
            flagged = not v.passed
            r["flagged"] += int(flagged)
            for name in v.failed:
                r["fired"][name] = r["fired"].get(name, 0) + 1
            item = {"kind": kind, "clip": i, "voice": clip.voice, "passed": bool(v.passed), "failed": list(v.failed),
                    "metrics": {k: round(float(x), 4) for k, x in v.metrics.items()}}
            if kind == "clean" and judged is not None:
                item["outside"] = judged
            items.append(item)
            wrong = flagged if kind == "clean" else not flagged
            if wrong:
                r["misses"].append({"voice": clip.voice, "text": clip.text, "fault": detail,
                                    "score": round(v.score, 3), "reasons": v.reasons,
                                    "metrics": {k: round(float(x), 3) for k, x in v.metrics.items()}})
        if log is not None:
            done = {k: f"{r['flagged']}/{r['n']}" for k, r in rows.items()}
            log(f"[{i + 1}/{len(clean)}] flagged {done}"
                + (f"; outside WER {judged['wer']:.2f}" if judged is not None else ""))
    checks = sorted({c for r in rows.values() for c in r["fired"]})
    report = {
        "source": "teacher" if teachers else "flite" if tts is None else "voice",
        "voice": voice_name if tts is not None else None,
        "n_clips": len(clean),
        "split": split,
        "asr": cfg.asr,
        "checker_config": "voice" if voice_cfg is not None else "default",
        "checker": to_dict(cfg),
        "seed": seed if tts is not None and not teachers else None,
        "voices": sorted({c.voice for c in clean}),
        "false_alarm_rate": rows["clean"]["flagged"] / max(1, rows["clean"]["n"]) if "clean" in rows else None,
        "detection_rate": {k: r["flagged"] / max(1, r["n"]) for k, r in rows.items() if k != "clean"},
        "outside": outside_summary(items),
        "outside_judge": judge.describe() if outside else None,
        "rtf": check_s / max(audio_s, 1e-9),
        "rtf_asr": asr_s / max(audio_s, 1e-9),  # the rest of ``rtf`` is signal and token checks
        "rtf_align": align_s / max(audio_s, 1e-9),
        "audio_seconds": audio_s,
        "check_seconds": check_s,
        "table_md": _table(rows, checks),
        "rows": rows,
        "clips": clip_info,
        "items": items,
    }
    return report


def _summary_lines(report: dict) -> list[str]:
    fa = report["false_alarm_rate"]
    lines = [f"false alarms {'-' if fa is None else f'{fa:.1%}'}; detection "
             + (", ".join(f"{k} {v:.0%}" for k, v in report["detection_rate"].items()) or "-")
             + f"; checker RTF {report['rtf']:.3f} (recognition {report['rtf_asr']:.3f}, alignment "
               f"{report['rtf_align']:.3f}); thresholds: {report['checker_config']}"]
    o = report.get("outside")
    if o:
        def rate(k: int, n: int) -> str:
            return f"{k}/{n}" + (f" ({k / n:.1%})" if n else "")

        asr = (report.get("outside_judge") or {}).get("asr", "pocketsphinx")
        lines.append(f"outside ASR ({asr}) on {o['n_clean']} clean clips: WER {o['outside_wer']:.1%}, "
                     f"{o['n_intelligible']} intelligible (WER <= {o['broken_wer']}), {o['n_broken']} broken; "
                     f"false alarms intelligible {rate(o['false_alarms_intelligible'], o['n_intelligible'])}, "
                     f"all {rate(o['false_alarms_all'], o['n_clean'])}; "
                     f"broken passed {rate(o['broken_passed'], o['n_broken'])}")
        if o.get("distillmos") is not None:
            lines.append(f"naturalness of the clean clips: DistillMOS {o['distillmos']:.2f}, "
                         f"DNSMOS OVRL {o['dnsmos_ovrl']:.2f}, P.808 {o['dnsmos_p808']:.2f}")
    return lines


def _load_teachers(tts: Any, voice: str, threads: int) -> list[Any]:
    """The natural teachers of a voice's speakers, loaded (one each); a voice taught by flite has none."""
    from audiopd.errors import AudiopdError
    from audiopd.eval.peers import load_peer, parse_peer

    names = list(dict.fromkeys(tts.model.info.teacher(sp) for sp in tts.voices))
    try:
        specs = [parse_peer(name) for name in names]
    except AudiopdError:
        raise AudiopdError(f"voice {voice}'s teachers ({', '.join(names)}) are not natural teachers "
                           "(system:voice); without --voice the benchmark speaks with flite") from None
    return [load_peer(s.name, threads=threads) for s in specs]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audiopd.eval.checker_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=40, help="clean clips (each also gets every fault)")
    ap.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    ap.add_argument("--split", choices=("bench", "calib"), default="bench")
    ap.add_argument("--voice", default=None, metavar="NAME_OR_DIR",
                    help="benchmark this voice's own parallel output (default: flite teacher audio)")
    ap.add_argument("--checker-asr", choices=("always", "borderline", "never"), default=None,
                    help="when the checker runs its own recognition (default: the checker config's)")
    ap.add_argument("--recognizer", choices=("ctc", "sphinx"), default=None,
                    help="the checker's aligning recogniser (default: the checker config's; ctc unless set)")
    judging.add_arguments(ap)
    ap.add_argument("--kinds", default="", help="comma-separated conditions (clean, skip, ...); default all")
    ap.add_argument("--offset", type=int, default=0, help="skip this many sentences of the split")
    ap.add_argument("--seed", type=int, default=0, help="decoding seed of the voice's clips")
    ap.add_argument("--batch", type=int, default=4, help="sentences per speaker decoded together (--voice)")
    ap.add_argument("--teacher", action="store_true",
                    help="with --voice: its natural teachers (e.g. piper:joe) speak the clips, checked with the "
                         "voice's thresholds")
    ap.add_argument("--outside", action="store_true", help="also judge flite clips by outside ASR (on for --voice)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads for decoding (default: 1)")
    ap.add_argument("--words", default=None, metavar="MIN-MAX",
                    help="sentences of MIN to MAX words (default 7-22); e.g. 2-6 calibrates short clips")
    ap.add_argument("--min-seconds", type=float, default=2.0, help="shortest clean clip kept (default 2.0)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.n < 2:
        ap.error("--n must be >= 2 (the 'swap' fault needs a second sentence)")
    if args.threads < 1 or args.batch < 1 or args.seed < 0:
        ap.error("--threads and --batch must be >= 1 and --seed >= 0")
    if args.teacher and args.voice is None:
        ap.error("--teacher needs --voice (whose teachers speak, checked with its thresholds)")
    kinds = tuple(k for k in args.kinds.split(",") if k) or None
    if args.min_seconds < 0:
        ap.error("--min-seconds must be >= 0")
    sentences = None
    if args.words is not None:
        lo, _, hi = args.words.partition("-")
        if not (lo.isdigit() and hi.isdigit() and 1 <= int(lo) <= int(hi)):
            ap.error(f"--words must be MIN-MAX with 1 <= MIN <= MAX, not {args.words!r}")
        if args.voice is None:
            ap.error("--words needs --voice (flite clips always use the 7-22 word sentences)")
        sentences = load_sentences(args.split, min_words=int(lo), max_words=int(hi))
    from audiopd.errors import AudiopdError

    try:
        tts = None
        if args.voice is not None:
            import torch

            import audiopd

            torch.set_num_threads(args.threads)
            tts = audiopd.load(args.voice)
        teachers = _load_teachers(tts, args.voice, args.threads) if args.teacher else None
        outside = args.outside or args.voice is not None
        judge = judging.from_args(args, threads=args.threads) if outside else None
        report = run_bench(args.n, args.split, args.checker_asr, progress=not args.quiet, kinds=kinds,
                           offset=args.offset, tts=tts, voice_name=args.voice, seed=args.seed, batch=args.batch,
                           outside=outside, judge=judge, listener=args.recognizer, teachers=teachers,
                           sentences=sentences, min_seconds=args.min_seconds)
    except AudiopdError as exc:  # a missing or broken voice, a bad checker.yaml
        print(f"{ap.prog}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except ValueError as exc:
        ap.error(str(exc))
    print(report["table_md"])
    print("\n" + "\n".join(_summary_lines(report)))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
