"""Checker benchmark: detection rate per injected fault and false alarms on clean teacher audio.

    python -m audiopd.eval.checker_bench --n 40 --out report.json

Clean audio is rendered with Debian ``flite`` (voices slt, rms, awb, kal16, round-robin) from
sentences of Debian's fortune files. Sentences are split by a hash into a *calibration* part (one
in four; used to set the thresholds in ``audiopd.checker.config``) and a *benchmark* part (the
rest; used here by default), so the reported rates are measured on sentences the thresholds never
saw. Every clean clip is scored as is (false alarms) and with each fault of
``audiopd.eval.faults`` (detections). Runs in one process, one thread. The JSON report holds the
rates, a markdown table (condition x check that fired), the misses with their metrics, and one
record per scored clip (for re-deriving thresholds offline). Latest figures: the docstring of
``audiopd.checker.config``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FORTUNE_DIR = Path("/usr/share/games/fortunes")  # Debian's fixed install location for fortune data
FORTUNE_FILES = ("fortunes", "literature", "riddles", "wisdom", "people", "platitudes", "science")
VOICES: tuple[str, ...] = ("slt", "rms", "awb", "kal16")
_ALLOWED = re.compile(r"^[A-Z][A-Za-z ,;:'-]+[a-z][.?!]$")
_SPLIT = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")


@dataclass(frozen=True)
class Clip:
    """A clean teacher rendering: text, voice, samples and rate."""

    text: str
    voice: str
    audio: np.ndarray
    sample_rate: int


def _split_of(sentence: str) -> str:
    """Deterministic calibration/benchmark split by content hash (1 in 4 goes to calibration)."""
    return "calib" if hashlib.sha1(sentence.encode()).digest()[0] % 4 == 0 else "bench"


def load_sentences(split: str, *, min_words: int = 7, max_words: int = 22,
                   root: Path = FORTUNE_DIR) -> list[str]:
    """Plain sentences (letters and light punctuation only) of ``split`` ("calib" or "bench")."""
    if split not in ("calib", "bench"):
        raise ValueError(f"split must be 'calib' or 'bench', not {split!r}")
    seen: set[str] = set()
    out: list[str] = []
    for name in FORTUNE_FILES:
        path = root / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="latin-1")
        for entry in re.split(r"^%\s*$", text, flags=re.MULTILINE):
            lines = [ln.strip() for ln in entry.splitlines() if ln.strip() and not ln.strip().startswith("--")]
            for sent in _SPLIT.split(" ".join(lines)):
                sent = re.sub(r"\s+", " ", sent).strip()
                if not _ALLOWED.match(sent) or sent in seen:
                    continue
                if not min_words <= len(sent.split()) <= max_words:
                    continue
                seen.add(sent)
                if _split_of(sent) == split:
                    out.append(sent)
    if not out:
        raise FileNotFoundError(f"no sentences found under {root} (is the 'fortunes' package installed?)")
    # A fixed shuffle so that the first n sentences mix sources and lengths.
    return sorted(out, key=lambda s: hashlib.sha1(("order:" + s).encode()).hexdigest())


def render(text: str, voice: str, workdir: Path) -> Clip:
    """Render ``text`` with flite ``voice`` to a temporary WAV and read it back."""
    import soundfile as sf

    out = workdir / f"render_{voice}.wav"
    subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(out)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    audio, rate = sf.read(str(out), dtype="float32")
    return Clip(text, voice, audio, int(rate))


def clips(split: str, n: int, workdir: Path, *, min_seconds: float = 2.0, offset: int = 0) -> list[Clip]:
    """``n`` clean clips of ``split`` (from sentence ``offset`` on), voices round-robin, skipping
    ones too short for the faults."""
    out: list[Clip] = []
    for sent in load_sentences(split)[offset:]:
        clip = render(sent, VOICES[len(out) % len(VOICES)], workdir)
        if len(clip.audio) / clip.sample_rate >= min_seconds:
            out.append(clip)
        if len(out) >= n:
            break
    return out


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


def run_bench(n: int, split: str = "bench", asr: str | None = None, progress: bool = True,
              kinds: tuple[str, ...] | None = None, offset: int = 0) -> dict:
    """Score ``n`` clean clips and every fault of each; returns the report as plain data.

    ``kinds`` limits the conditions ("clean" and/or fault kinds); ``offset`` skips sentences.
    """
    from audiopd.checker import CheckerConfig, score
    from audiopd.eval.faults import FAULT_KINDS, inject

    cfg = CheckerConfig() if asr is None else CheckerConfig(asr=asr)
    conditions = tuple(kinds) if kinds else ("clean", *FAULT_KINDS)
    unknown = set(conditions) - {"clean", *FAULT_KINDS}
    if unknown:
        raise ValueError(f"unknown condition(s): {', '.join(sorted(unknown))}")
    rows: dict[str, dict] = {k: {"n": 0, "flagged": 0, "fired": {}, "misses": []} for k in conditions}
    items: list[dict] = []
    audio_s = check_s = 0.0
    with tempfile.TemporaryDirectory(prefix="checker_bench_") as tmp:
        clean = clips(split, n, Path(tmp), offset=offset)
    for i, clip in enumerate(clean):
        cases = [("clean", clip.audio, "")] if "clean" in conditions else []
        for kind in (k for k in FAULT_KINDS if k in conditions):
            other = clean[(i + 1) % len(clean)].audio
            y, fault = inject(kind, clip.audio, clip.sample_rate, seed=i, other=other)
            cases.append((kind, y, fault.detail))
        for kind, y, detail in cases:
            t0 = time.perf_counter()
            v = score(y, clip.sample_rate, clip.text, config=cfg)
            check_s += time.perf_counter() - t0
            audio_s += len(y) / clip.sample_rate
            r = rows[kind]
            r["n"] += 1
            flagged = not v.passed
            r["flagged"] += int(flagged)
            for name in v.failed:
                r["fired"][name] = r["fired"].get(name, 0) + 1
            items.append({"kind": kind, "clip": i, "voice": clip.voice, "failed": list(v.failed),
                          "metrics": {k: round(float(x), 4) for k, x in v.metrics.items()}})
            wrong = flagged if kind == "clean" else not flagged
            if wrong:
                r["misses"].append({"voice": clip.voice, "text": clip.text, "fault": detail,
                                    "score": round(v.score, 3), "reasons": v.reasons,
                                    "metrics": {k: round(float(x), 3) for k, x in v.metrics.items()}})
        if progress:
            done = {k: f"{r['flagged']}/{r['n']}" for k, r in rows.items()}
            print(f"[{i + 1}/{len(clean)}] flagged {done}", file=sys.stderr, flush=True)
    checks = sorted({c for r in rows.values() for c in r["fired"]})
    report = {
        "n_clips": len(clean),
        "split": split,
        "asr": cfg.asr,
        "voices": sorted({c.voice for c in clean}),
        "false_alarm_rate": rows["clean"]["flagged"] / max(1, rows["clean"]["n"]) if "clean" in rows else None,
        "detection_rate": {k: r["flagged"] / max(1, r["n"]) for k, r in rows.items() if k != "clean"},
        "rtf": check_s / max(audio_s, 1e-9),
        "audio_seconds": audio_s,
        "check_seconds": check_s,
        "table_md": _table(rows, checks),
        "rows": rows,
        "items": items,
    }
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audiopd.eval.checker_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=40, help="clean clips (each also gets every fault)")
    ap.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    ap.add_argument("--split", choices=("bench", "calib"), default="bench")
    ap.add_argument("--asr", choices=("always", "borderline", "never"), default=None,
                    help="when to run recognition (default: CheckerConfig's, 'borderline')")
    ap.add_argument("--kinds", default="", help="comma-separated conditions (clean, skip, ...); default all")
    ap.add_argument("--offset", type=int, default=0, help="skip this many sentences of the split")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.n < 2:
        ap.error("--n must be >= 2 (the 'swap' fault needs a second sentence)")
    kinds = tuple(k for k in args.kinds.split(",") if k) or None
    try:
        report = run_bench(args.n, args.split, args.asr, progress=not args.quiet, kinds=kinds, offset=args.offset)
    except ValueError as exc:
        ap.error(str(exc))
    fa = report["false_alarm_rate"]
    print(report["table_md"])
    print(f"\nfalse alarms {'-' if fa is None else f'{fa:.1%}'}; detection "
          + ", ".join(f"{k} {v:.0%}" for k, v in report["detection_rate"].items())
          + f"; checker RTF {report['rtf']:.3f}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
