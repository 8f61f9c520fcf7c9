"""Stage 06: quantise every utterance with the fitted codec and write versioned token shards.

Reads stage 04's cached WORLD features and stage 03's per-token durations (seconds), loads the codec fitted by
stage 05 (codecs/<codec>/, checksums verified), and writes DATA/tokens/<codec>/<split>-NNN.safetensors in the
shard format of audiopd.train.shards (codes [Q, T], phoneme ids, frames per token, speaker ids). Token
durations in seconds become frame counts by rounding the cumulative boundaries, so they sum exactly to T and
rounding errors never accumulate along an utterance.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_common as cc  # noqa: E402
from corpus_common import frames_per_token  # noqa: E402  (shared with recipes/natural/04_tokens.py)

STAGE = "06"


def read_ids(path: str | Path) -> set[str]:
    """Sentence ids, one a line; blank lines and '#' comments are ignored."""
    ids = {line.split("#", 1)[0].strip() for line in Path(path).read_text().splitlines()}
    ids.discard("")
    if not ids:
        raise SystemExit(f"{path}: no sentence ids")
    return ids


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--codec", default="world16k")
        p.add_argument("--per-shard", type=int, default=2000, help="utterances per shard")
        p.add_argument("--train-sentences", default=None,
                       help="file of train sentence ids (one a line): encode only these, for every voice, and the "
                            "test split (a fine-tuning subset, e.g. recipes/voice/conf/durfix_sentences.txt)")
        p.add_argument("--out", default=None, help="shard directory (default: DATA/tokens/<codec>)")

    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    stage = f"{STAGE}-{args.codec}"
    subset = read_ids(args.train_sentences) if args.train_sentences else None
    if subset is None and cc.is_done(args.data, stage) and not args.force:
        print(f"stage {stage} already done")
        return 0
    feats_mod = __import__("04_features")
    from audiopd.codec import load_codec
    from audiopd.text.symbols import INVENTORY_VERSION, SYMBOL_TO_ID
    from audiopd.train.shards import ShardMeta, Utterance, write_shard

    codec = load_codec(args.codec)
    timer = cc.Timer()
    durations = {(r["voice"], r["id"]): r for r in cc.read_jsonl(cc.corpus_dir(args.data) / "durations.jsonl")}
    voices = list(cc.VOICES)
    meta = ShardMeta(codec=codec.name, sample_rate=codec.sample_rate, frame_rate=codec.frame_rate,
                     num_codebooks=codec.num_codebooks, cardinality=codec.cardinality,
                     inventory_version=str(INVENTORY_VERSION), voices=tuple(voices))
    out_dir = Path(args.out) if args.out else Path(args.data) / "tokens" / args.codec
    by_split: dict[str, list] = {}
    skipped = 0
    manifest = list(cc.read_jsonl(cc.corpus_dir(args.data) / "manifest.jsonl"))
    if subset is not None:
        unknown = subset - {r["id"] for r in manifest if r["split"] == "train"}
        if unknown:
            raise SystemExit(f"{len(unknown)} id(s) of --train-sentences are not train sentences of the corpus, "
                             f"e.g. {sorted(unknown)[0]}")
    for r in manifest:
        if subset is not None and r["split"] == "train" and r["id"] not in subset:
            continue
        fpath = feats_mod.feature_path(args.data, args.codec, r["voice"], r["id"])
        d = durations.get((r["voice"], r["id"]))
        if d is None or not fpath.is_file():
            if subset is not None and r["split"] == "train":
                raise SystemExit(f"{r['voice']}/{r['id']} of --train-sentences has no features or durations: "
                                 "run stages 03 and 04 for it first")
            skipped += 1
            continue
        codes = codec.encode_features(feats_mod.load_features(fpath))
        frames = frames_per_token(d["durations_s"], codec.frame_rate, codes.shape[1])
        ids = np.array([SYMBOL_TO_ID[t] for t in d["tokens"]], dtype=np.int64)
        by_split.setdefault(r["split"], []).append(
            Utterance(utt_id=f"{r['voice']}/{r['id']}", speaker=voices.index(r["voice"]), phonemes=ids,
                      durations=frames, codes=codes))
    counts = {}
    for split, utts in by_split.items():
        for n, s in enumerate(range(0, len(utts), args.per_shard)):
            write_shard(out_dir / f"{split}-{n:03d}.safetensors", utts[s : s + args.per_shard], meta)
        counts[split] = {"utterances": len(utts), "frames": int(sum(u.num_frames for u in utts))}
    if subset is None:  # a subset is cheap to redo and must not pass for the whole corpus's shards
        cc.mark_done(args.data, stage, {"splits": counts, "skipped": skipped, "seconds": timer.seconds})
    print(f"shards in {out_dir}: {counts}, skipped {skipped}, {timer.seconds} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
