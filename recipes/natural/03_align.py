"""Stage 03: per-token durations for audiopd's phoneme inventory by pocketsphinx forced alignment.

-> ``DATA/align/<voice>/<id>.json`` (one per utterance, temp file + rename, so a rerun resumes) and, at the end
of every run, ``DATA/durations.jsonl`` (``id``, ``voice``, ``split``, ``tokens``, ``durations_s``,
``match_rate``, ...) plus ``DATA/align_summary.json``.

pocketsphinx's aligner (``audiopd.checker.sphinx.align``, two passes, ``bestpath=False``) places the frontend's
spoken words in the teacher's audio; its phones (and silences, gaps as ``pau``) are mapped onto audiopd's tokens
by the flite corpus's edit-distance DP (``recipes/corpus/03_durations.py``), so durations sum to the audio.
On Piper joe the same DP also maps Piper's own phone durations (stage 02's ``teacher_phones``), and the two
token boundary sets are compared: ``cross_check`` (median and p90 absolute boundary difference, share within
20 ms, signed median: > 0 when Piper's boundaries come later). Stage 02 need not be finished: this stage aligns
what is rendered so far and is marked done only once stage 02 is.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import natural_align as na  # noqa: E402
import natural_common as nc  # noqa: E402

STAGE = "03"


def out_path(data: Path, voice: str, uid: str) -> Path:
    return data / "align" / nc.voice_dir_name(voice) / f"{uid}.json"


def align_row(data: Path, row: dict) -> dict:
    """One manifest row -> its durations row (``failed`` set when the aligner finds no path)."""
    import soundfile as sf

    from audiopd.checker import sphinx
    from audiopd.text.frontend import phonemize

    audio, rate = sf.read(str(data / row["wav"]), dtype="float32")
    seconds = audio.size / rate
    ph = phonemize(row["text"])
    out = {"id": row["id"], "voice": row["voice"], "split": row["split"], "seconds": round(seconds, 4)}
    alignment = sphinx.align(audio, rate, [w.word for w in ph.words])
    if alignment is None or alignment.unaligned:
        return {**out, "failed": "no alignment" if alignment is None else f"unaligned words {alignment.unaligned}"}
    result = na.token_durations(ph.tokens, na.sphinx_segments(alignment, seconds), seconds)
    out.update(tokens=list(result.tokens), durations_s=list(result.durations_s), match_rate=result.match_rate,
               substitutions=result.substitutions, deletions=result.deletions, insertions=result.insertions)
    if row.get("teacher_phones"):
        teacher = na.token_durations(ph.tokens, na.piper_segments(row["teacher_phones"]), seconds)
        diff = np.cumsum(teacher.durations_s)[:-1] - np.cumsum(result.durations_s)[:-1]
        out["teacher_durations_s"] = list(teacher.durations_s)
        out["teacher_match_rate"] = teacher.match_rate
        out["boundary_diff_ms"] = [round(float(d) * 1000, 1) for d in diff]
    return out


def summarise(rows: list[dict]) -> dict:
    """Per voice: utterances, failures, phone match rate; on Piper the boundary agreement with its own times."""
    out: dict[str, dict] = {}
    for voice in sorted({r["voice"] for r in rows}):
        vr = [r for r in rows if r["voice"] == voice]
        ok = [r for r in vr if "failed" not in r]
        n_ph = [sum(t not in na.SILENCE_TOKENS for t in r["tokens"]) for r in ok]
        entry = {"utterances": len(vr), "failed": len(vr) - len(ok),
                 "phone_match_rate": round(sum(r["match_rate"] * n for r, n in zip(ok, n_ph)) / max(1, sum(n_ph)), 4)}
        diffs = np.array([d for r in ok for d in r.get("boundary_diff_ms", [])], dtype=np.float64)
        if diffs.size:
            entry["cross_check"] = {
                "boundaries": int(diffs.size), "median_abs_ms": round(float(np.median(np.abs(diffs))), 1),
                "p90_abs_ms": round(float(np.percentile(np.abs(diffs), 90)), 1),
                "within_20ms": round(float((np.abs(diffs) <= 20).mean()), 4),
                "signed_median_ms": round(float(np.median(diffs)), 1),
                "teacher_phone_match_rate": round(float(np.mean([r["teacher_match_rate"] for r in ok
                                                                  if "teacher_match_rate" in r])), 4)}
        out[voice] = entry
    return out


def run(data: Path, voices: set[str] | None, log=print) -> dict:
    manifest = data / "manifest.jsonl"
    if not manifest.is_file():
        raise SystemExit(f"{manifest} is missing: run recipes/natural/02_render.py --data {data} first")
    rows = [r for r in nc.read_jsonl(manifest) if voices is None or r["voice"] in voices]
    made, start, audio_s = 0, time.monotonic(), 0.0
    results = []
    for row in rows:
        path = out_path(data, row["voice"], row["id"])
        if path.is_file():
            results.append(json.loads(path.read_text(encoding="utf-8")))
            continue
        result = align_row(data, row)
        nc.atomic_write_text(path, json.dumps(result, sort_keys=True) + "\n")
        results.append(result)
        made += 1
        audio_s += result["seconds"]
        if made % 200 == 0:
            log(f"[{time.strftime('%H:%M:%S')}] aligned {made} utterances ({audio_s / 3600:.2f} h) this run")
    nc.write_jsonl(data / "durations.jsonl", [r for r in results if "failed" not in r])
    elapsed = time.monotonic() - start
    info = {"utterances": len(results), "aligned_this_run": made, "seconds": round(elapsed, 1),
            "x_real_time": round(audio_s / elapsed, 1) if made else None, "voices": summarise(results)}
    nc.atomic_write_text(data / "align_summary.json", json.dumps(info, indent=1, sort_keys=True) + "\n")
    return info


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--voices", default="", help="only these voices (comma-separated; default all)")
    args = nc.stage_args(__doc__.splitlines()[0], argv, extra)
    data = Path(args.data)
    if nc.is_done(data, STAGE) and not args.force:
        print(f"stage {STAGE} already done ({nc.done_marker(data, STAGE)}); use --force to redo")
        return 0
    voices = set(args.voices.split(",")) if args.voices else None
    info = run(data, voices, log=lambda s: print(s, flush=True))
    print(json.dumps(info, indent=1, sort_keys=True))
    rendered = {r["voice"] for r in nc.read_jsonl(data / "manifest.jsonl")}
    if voices is None and nc.is_done(data, "02") and rendered <= nc.done_voices(data, "02"):
        nc.mark_done(data, STAGE, info)
    elif voices is not None:
        print("aligned only --voices: rerun this stage without it to align every voice and mark it done")
    else:
        print("stage 02 is still rendering: rerun this stage later to align the rest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
