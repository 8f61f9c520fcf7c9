"""Stage 06: decode speed of the codec's decoders side by side -> DATA/eval/speed.json and DATA/eval/speed.md.

Issue 22's bar for ``fast`` is a decode RTF <= 0.015 at 2 threads. Stage 04 times decoding too, but between its
judges' runs; here the held-out utterances' tokens (the first ``--limit``, voices interleaved, encoded once) are
decoded by every decoder in interleaved rounds (``audiopd.eval.codec_speed``), and the table gives each
decoder's median RTF and its time relative to the first decoder, both medians over the rounds. Each run replaces
the row of its candidate (``codec_common.candidate_tag``) in ``speed.json``; ``speed.md`` lists them all.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import codec_common as cc  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--codec", default=str(REPO / "codecs" / "mel22k"), help="the mel codec artifact")
        p.add_argument("--decoders", default=None,
                       help="comma-separated, the first is the reference of the ratios (default: every decoder the "
                            "codec has, fast first)")
        p.add_argument("--limit", type=int, default=28, help="held-out utterances to decode")
        p.add_argument("--rounds", type=int, default=5, help="timed rounds (after one untimed round)")
        p.add_argument("--threads", type=int, default=2, help="torch threads (issue 22's RTF is at 2)")
    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    data, artifact = Path(args.data), Path(args.codec)
    import torch

    from audiopd.codec import load_codec
    from audiopd.errors import ArtifactError
    from audiopd.eval.codec_eval import load_manifest_items
    from audiopd.eval.codec_speed import decode_speed, markdown_table

    torch.set_num_threads(args.threads)
    codec = load_codec(artifact)
    decoders = args.decoders.split(",") if args.decoders else sorted(codec.decoders, key=lambda d: d != "fast")
    items = load_manifest_items(data / "manifest.jsonl", args.limit, "heldout")
    if not items:
        print(f"no held-out utterances in {data / 'manifest.jsonl'}: run stage 01 first", file=sys.stderr)
        return 2
    grids = [codec.encode(audio)[0] for audio, _, _ in items]
    try:
        result = decode_speed(codec, grids, decoders, rounds=args.rounds)
    except (ValueError, ArtifactError) as exc:
        print(f"stage 06: {exc}", file=sys.stderr)
        return 2
    result.update(threads=args.threads, items=len(items),
                  tags={d: cc.candidate_tag(codec, artifact, d) for d in decoders})
    out = data / "eval" / "speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = json.loads(out.read_text()) if out.is_file() else {}
    runs[" vs ".join(f"{d} @ {result['tags'][d]}" for d in decoders)] = result
    cc.atomic_write_text(out, json.dumps(runs, indent=1) + "\n")
    table = "\n".join(f"### {key}\n\n{markdown_table(r, r['threads'])}" for key, r in runs.items())
    cc.atomic_write_text(data / "eval" / "speed.md", table)
    print(markdown_table(result, args.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
