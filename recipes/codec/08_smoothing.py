"""Stage 08 (choice): the decode-time blur over time on the token mel (``MelCodecConfig.smooth_frames``), chosen on
a voice's own output -> a table on stdout and ``--out`` JSON.

    python recipes/codec/08_smoothing.py --data DATA --voice natural --split dev --n 12 --sigmas 0,0.7,1.0,1.4

``DATA`` is a natural corpus (recipes/natural stages 01-04: its ``tokens/mel22k/dev-*`` shard and the manifest). For
the first ``--n`` utterances of each speaker, two token grids are decoded at every sigma: ``codec`` (the teacher's
own tokens: what the blur costs the round trip) and ``parallel`` (everything predicted by the voice, as users hear
it; ``audiopd.eval.oracle``). Each is judged by Whisper and DistillMOS (and DNSMOS unless ``--no-dnsmos``), and each
sigma's DistillMOS change from the first sigma is given with its paired 95% bootstrap interval over utterances.

Why it exists: true tokens sum to a mel that moves smoothly from frame to frame; a model's fine levels, right on
average, jump. A Gaussian of under one frame lifted both judges on the voice's output while costing the round trip
little (``codecs/mel22k/README.md``, "Smoothing"), and 03_train_vocoder.py ``--export --smooth-frames`` ships it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

SYSTEMS = ("codec", "parallel")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="natural corpus directory (its token shards and manifest)")
    ap.add_argument("--voice", default="natural", help="voice whose parallel output is judged")
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--n", type=int, default=12, help="utterances per speaker")
    ap.add_argument("--sigmas", default="0,0.7,1.0,1.4", help="comma-separated sigmas in frames; the first is the base")
    ap.add_argument("--speakers", default=None, help="comma-separated (default: all of the voice's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="write the JSON report here")
    from audiopd.eval import judging

    judging.add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        sigmas = [float(x) for x in args.sigmas.split(",")]
    except ValueError:
        raise SystemExit(f"--sigmas: comma-separated numbers, got {args.sigmas!r}") from None
    if not sigmas or any(not 0 <= s <= 4 for s in sigmas):
        raise SystemExit(f"--sigmas: each in [0, 4] frames, got {args.sigmas!r}")
    if args.n < 1:
        raise SystemExit(f"--n must be >= 1, got {args.n}")

    import torch

    import audiopd
    from audiopd.codec.mel import smooth_time
    from audiopd.eval.compare import paired_mean
    from audiopd.errors import AudiopdError
    from audiopd.eval.oracle import decode_system, pick_utterances
    from audiopd.text.wer import wer

    torch.set_num_threads(args.threads)
    tts = audiopd.load(args.voice)
    codec = tts.codec
    if not hasattr(codec, "decode_mel"):
        raise SystemExit(f"codec {codec.name!r} is not a mel codec: nothing to smooth")
    judge = judging.from_args(args)
    speakers = args.speakers.split(",") if args.speakers else None
    try:
        picked, texts, corpus_name = pick_utterances(tts, args.data, split=args.split, n=args.n, speakers=speakers)
    except AudiopdError as exc:
        raise SystemExit(f"error: {exc}") from None
    voices = list(tts.voices)
    scores: dict[tuple[str, str, float], dict[str, dict]] = {}
    for sp, utts in picked.items():
        for u in utts:
            text = texts[(corpus_name[sp], u.utt_id.split("/", 1)[1])][0]
            for system in SYSTEMS:
                mel = codec.decode_mel(decode_system(system, tts, u, voices.index(sp), args.seed))
                for s in sigmas:
                    audio = codec.vocode(smooth_time(mel, s))[0]
                    scores.setdefault((sp, system, s), {})[u.utt_id] = judge.score(text, audio, tts.sample_rate)
            print(f"{sp} {u.utt_id}", file=sys.stderr, flush=True)
    rows = []
    for (sp, system, s), by_id in scores.items():
        base = scores[(sp, system, sigmas[0])]
        ms = judging.mos_means(list(by_id.values()))
        change = paired_mean({k: v["distillmos"] for k, v in by_id.items()},
                             {k: v["distillmos"] for k, v in base.items()}) if s != sigmas[0] else None
        rows.append({"speaker": sp, "system": system, "sigma": s, "n": len(by_id),
                     "wer": round(100 * wer([v["ref"] for v in by_id.values()], [v["hyp"] for v in by_id.values()]), 2),
                     **ms, "distillmos_change": change})
    print("| speaker | system | sigma | n | WER % | DistillMOS | change [95%] | DNSMOS P.808 |")
    print("|---|---|---:|---:|---:|---:|---|---:|")
    for r in rows:
        c = r["distillmos_change"]
        ch = f"{c['diff']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]" if c else ""
        p808 = r.get("dnsmos_p808")
        print(f"| {r['speaker']} | {r['system']} | {r['sigma']:g} | {r['n']} | {r['wer']:.2f} | "
              f"{r['distillmos']:.2f} | {ch} | {'-' if p808 is None else f'{p808:.2f}'} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"voice": args.voice, "split": args.split, "sigmas": sigmas,
                                              "rows": rows, "judge": judge.describe()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
