"""Stage 02: render every sentence with every teacher voice -> DATA/wav/<voice>/<id>.wav + DATA/manifest.jsonl.

Sentence-major (all voices of a sentence, then the next, in text.tsv's id order, which mixes kinds and splits),
so a run stopped anywhere leaves the same sentences for every voice. Each utterance is written as a 16-bit wav
via temp file + rename, then a sidecar ``DATA/meta/<voice>/<id>.json`` (text, seconds, rate, and Piper's own
phone durations); an utterance with both is done and is skipped on resume. ``manifest.jsonl`` is rebuilt from
the sidecars (atomically) every ``--manifest-every`` utterances and at the end. ``--hours-per-voice`` stops a
voice once it holds that much audio (issue 23's target is 2.5 h). Teachers run on ``--threads`` onnxruntime
threads (1 for a background run next to other work: ``nohup nice -n 19``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import natural_common as nc  # noqa: E402

STAGE = "02"


def wav_path(data: Path, voice: str, uid: str) -> Path:
    return data / "wav" / nc.voice_dir_name(voice) / f"{uid}.wav"


def meta_path(data: Path, voice: str, uid: str) -> Path:
    return data / "meta" / nc.voice_dir_name(voice) / f"{uid}.json"


def write_wav(path: Path, audio: np.ndarray, rate: int) -> None:
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = nc.temp_path_for(path, ".wav")
    try:
        sf.write(str(tmp), np.clip(audio, -1.0, 1.0), rate, subtype="PCM_16", format="WAV")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_meta(data: Path) -> list[dict]:
    """Every finished utterance's sidecar (a sidecar is written only after its wav)."""
    rows = []
    for path in sorted((data / "meta").glob("*/*.json")):
        rows.append(json.loads(path.read_text(encoding="utf-8")))
    return rows


def write_manifest(data: Path) -> int:
    rows = sorted(read_meta(data), key=lambda r: (r["id"], r["voice"]))
    nc.write_jsonl(data / "manifest.jsonl", rows)
    return len(rows)


def voice_seconds(data: Path, voices: list[str]) -> dict[str, float]:
    totals = {v: 0.0 for v in voices}
    for row in read_meta(data):
        if row["voice"] in totals:
            totals[row["voice"]] += row["seconds"]
    return totals


def render_one(data: Path, row: nc.TextRow, voice: str, peer) -> dict:
    """Synthesize one utterance and write its wav and sidecar; returns the sidecar."""
    audio, rate, durations = peer.synthesize(row.text)
    wav = wav_path(data, voice, row.id)
    write_wav(wav, audio, rate)
    meta = {"id": row.id, "voice": voice, "split": row.split, "kind": row.kind, "text": row.text,
            "wav": str(wav.relative_to(data)), "seconds": round(audio.size / rate, 4), "sample_rate": rate}
    if durations is not None:
        meta["teacher_phones"] = [[p, round(d, 5)] for p, d in durations]
    nc.atomic_write_text(meta_path(data, voice, row.id), json.dumps(meta, sort_keys=True) + "\n")
    return meta


def render(data: Path, rows: list[nc.TextRow], peers: Mapping[str, object], *, hours_per_voice: float = 0.0,
           manifest_every: int = 50, log: Callable[[str], None] = print) -> dict:
    """Render ``rows`` x ``peers`` sentence-major, skipping finished utterances; returns counts and seconds."""
    voices = list(peers)
    totals = voice_seconds(data, voices)
    cap = hours_per_voice * 3600.0 if hours_per_voice > 0 else float("inf")
    made, skipped, failed, since_manifest = 0, 0, 0, 0
    cpu = {v: 0.0 for v in voices}
    start = time.monotonic()
    for n, row in enumerate(rows):
        if all(totals[v] >= cap for v in voices):
            break
        for voice in voices:
            if meta_path(data, voice, row.id).is_file():
                skipped += 1
                continue
            if totals[voice] >= cap:
                continue
            t0 = time.monotonic()
            try:
                meta = render_one(data, row, voice, peers[voice])
            except Exception as exc:  # one bad sentence must not stop a night's rendering
                failed += 1
                log(f"FAILED {voice} {row.id}: {type(exc).__name__}: {exc}")
                continue
            cpu[voice] += time.monotonic() - t0
            totals[voice] += meta["seconds"]
            made += 1
            since_manifest += 1
        if since_manifest >= manifest_every:
            write_manifest(data)
            since_manifest = 0
            hours = ", ".join(f"{nc.voice_dir_name(v)} {totals[v] / 3600:.3f}" for v in voices)
            log(f"[{time.strftime('%H:%M:%S')}] sentence {n + 1}/{len(rows)}; {made} made this run "
                f"in {time.monotonic() - start:.0f} s; hours per voice: {hours}")
    count = write_manifest(data)
    return {"made": made, "skipped": skipped, "failed": failed, "utterances": count,
            "hours_per_voice": {v: round(totals[v] / 3600, 4) for v in voices},
            "rtf": {v: round(cpu[v] / max(1e-9, totals[v]), 3) for v in voices if cpu[v] > 0},
            "seconds": round(time.monotonic() - start, 1)}


def lacking(rows: list[nc.TextRow], manifest: Path, voices: list[str]) -> list[nc.TextRow]:
    """The rows that ``manifest`` (another corpus's stage-02 output) does not hold for every one of ``voices``."""
    held: dict[str, set[str]] = {}
    for line in manifest.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            held.setdefault(rec["id"], set()).add(rec["voice"])
    return [r for r in rows if not set(voices) <= held.get(r.id, set())]


def parse_part(spec: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N) with 0 <= K < N; anything else is a clear error."""
    try:
        k, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise SystemExit(f"--part must be K/N (e.g. 0/2), got {spec!r}") from None
    if not 0 <= k < n:
        raise SystemExit(f"--part K/N needs 0 <= K < N, got {spec!r}")
    return k, n


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--voices", default=",".join(nc.DEFAULT_VOICES), help="comma-separated peers")
        p.add_argument("--threads", type=int, default=1, help="onnxruntime threads per teacher (default 1)")
        p.add_argument("--hours-per-voice", type=float, default=2.5, help="stop a voice at this much audio (0 = all)")
        p.add_argument("--splits", default="train,dev,test", help="which splits to render")
        p.add_argument("--max-sentences", type=int, default=0, help="only the first N sentences (0 = all)")
        p.add_argument("--manifest-every", type=int, default=50, help="rebuild manifest.jsonl every N utterances")
        p.add_argument("--skip-manifest", default="", help="a manifest.jsonl of a corpus rendered elsewhere: skip "
                       "the sentences it holds for these voices (render only what that corpus lacks)")
        p.add_argument("--part", default="", help="K/N: render only every N-th sentence from the K-th (0-based), "
                       "so N processes side by side share one DATA")
    args = nc.stage_args(__doc__.splitlines()[0], argv, extra)
    data = Path(args.data)
    from audiopd.eval.peers import load_peer, parse_peers

    done = nc.done_voices(data, STAGE)
    if {spec.name for spec in parse_peers(args.voices)} <= done and not args.force:
        print(f"stage {STAGE} already done for these voices ({nc.done_marker(data, STAGE)}); use --force to go on")
        return 0
    splits = set(args.splits.split(","))
    rows = [r for r in nc.read_text_table(data) if r.split in splits]
    voices = [spec.name for spec in parse_peers(args.voices)]
    if args.skip_manifest:
        rows = lacking(rows, Path(args.skip_manifest), voices)
    if args.max_sentences:
        rows = rows[: args.max_sentences]
    if args.part:
        k, n = parse_part(args.part)
        rows = rows[k::n]
    peers = {name: load_peer(name, threads=args.threads) for name in voices}
    info = render(data, rows, peers, hours_per_voice=args.hours_per_voice, manifest_every=args.manifest_every,
                  log=lambda line: print(line, flush=True))
    print(json.dumps(info), flush=True)
    if info["failed"] == 0 and not args.part:  # one part of N is not the stage
        # Done for the voices of this run and of every earlier finished run: `--voices piper:joe` first, the
        # Kokoro voices later, and stage 03 knows which are complete.
        nc.mark_done(data, STAGE, {**info, "voices": sorted(done | set(peers)), "threads": args.threads})
    return 0


if __name__ == "__main__":
    sys.exit(main())
