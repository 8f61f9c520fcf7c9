"""Stage 01: natural speech for the codec -> DATA/wav/<set>/<voice>/<id>.wav (22,050 Hz) + DATA/manifest.jsonl.

Sentences come from the natural recipe's stage 01 (``DATA/text.tsv``; run ``recipes/natural/01_text.py --data DATA``
first): its hashed split keeps test sentences out of fitting. ``heldout``: the first ``--heldout`` test sentences,
the seven held-out voices in turn (``codec_common.HELDOUT_VOICES``). ``fit``: ``--joe-fit`` train sentences by Piper
joe, then ``--kokoro-fit`` further train sentences for each of ten Kokoro voices (each voice its own sentences).
Kokoro's 24 kHz output is resampled to 22,050 Hz (polyphase, 147/160). An utterance whose wav and sidecar exist is
skipped, so a stopped run resumes; the manifest is rebuilt from the sidecars every 50 utterances and at the end.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import codec_common as cc  # noqa: E402

STAGE = "01"


def render(data: Path, jobs: list[cc.Job], threads: int, log=print) -> dict:
    from audiopd.audio import write_audio
    from audiopd.eval.peers import load_peer

    peers: dict[str, object] = {}
    made = skipped = failed = since = 0
    audio_s = cpu_s = 0.0
    start = time.monotonic()
    for n, job in enumerate(jobs):
        meta = cc.meta_path(data, job)
        if meta.is_file() and cc.wav_path(data, job).is_file():
            skipped += 1
            continue
        if job.voice not in peers:
            peers[job.voice] = load_peer(job.voice, threads=threads)
        t0 = time.monotonic()
        try:
            audio, rate, _ = peers[job.voice].synthesize(job.text)
        except Exception as exc:  # one bad sentence must not stop the run
            failed += 1
            log(f"FAILED {job.voice} {job.id}: {type(exc).__name__}: {exc}")
            continue
        y = np.clip(cc.to_rate(audio, rate), -1.0, 1.0)
        cc.wav_path(data, job).parent.mkdir(parents=True, exist_ok=True)
        wav = write_audio(cc.wav_path(data, job), y, cc.SAMPLE_RATE)
        seconds = round(len(y) / cc.SAMPLE_RATE, 4)
        row = {"id": job.id, "set": job.set, "voice": job.voice, "split": job.split, "text": job.text,
               "wav": str(wav.relative_to(data)), "seconds": seconds, "source_rate": rate}
        meta.parent.mkdir(parents=True, exist_ok=True)
        cc.atomic_write_text(meta, json.dumps(row, sort_keys=True) + "\n")
        made += 1
        since += 1
        audio_s += seconds
        cpu_s += time.monotonic() - t0
        if since >= 50:
            since = 0
            cc.write_manifest(data)
            log(f"[{time.strftime('%H:%M:%S')}] {n + 1}/{len(jobs)} ({job.set}, {job.voice}); made {made}, "
                f"{audio_s / 60:.1f} min of audio at RTF {cpu_s / max(audio_s, 1e-9):.3f}")
    count = cc.write_manifest(data)
    return {"made": made, "skipped": skipped, "failed": failed, "utterances": count,
            "audio_minutes_made": round(audio_s / 60, 2), "rtf": round(cpu_s / max(audio_s, 1e-9), 3),
            "seconds": round(time.monotonic() - start, 1)}


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--joe-fit", type=int, default=600, help="train sentences by Piper joe (default 600)")
        p.add_argument("--kokoro-fit", type=int, default=60, help="train sentences per Kokoro voice (default 60)")
        p.add_argument("--heldout", type=int, default=226, help="test sentences, voices in turn (default: all 226)")
        p.add_argument("--only", choices=("heldout", "fit"), default=None, help="render one set only")
        p.add_argument("--threads", type=int, default=1, help="onnxruntime threads per teacher (default 1)")
    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    data = Path(args.data)
    if cc.is_done(data, STAGE) and not args.force:
        print(f"stage {STAGE} already done; use --force to go on")
        return 0
    jobs = cc.plan(cc.nc.read_text_table(data), joe_fit=args.joe_fit, kokoro_fit=args.kokoro_fit,
                   heldout=args.heldout)
    if args.only:
        jobs = [j for j in jobs if j.set == args.only]
    info = render(data, jobs, args.threads, log=lambda line: print(line, flush=True))
    print(json.dumps(info), flush=True)
    if info["failed"] == 0 and args.only is None:
        cc.mark_done(data, STAGE, {**info, "joe_fit": args.joe_fit, "kokoro_fit": args.kokoro_fit,
                                   "heldout": args.heldout})
    return 0


if __name__ == "__main__":
    sys.exit(main())
