"""Stage 04: WORLD analysis of every utterance, cached as continuous features.

Output: DATA/features/<codec>/<voice>/<id>.npz with f0 [T] (Hz, 0 unvoiced), mcep [T, D] and ap_db [T, B]
(float32), exactly what the codec quantises. Stage 05 fits the codebooks on the train split, stage 06 quantises
every utterance into token shards; both reuse this cache, so analysis (the slow part) runs once.
The analysis settings come from the codec config (recipes/corpus/conf/<codec>.yaml).
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_common as cc  # noqa: E402

STAGE = "04"
HERE = Path(__file__).resolve().parent


def codec_config(name: str):
    from audiopd.codec.world import WorldCodecConfig
    from audiopd.config import load_config

    return load_config(WorldCodecConfig, HERE / "conf" / f"{name}.yaml")


def feature_path(data: str | Path, codec: str, voice: str, utt_id: str) -> Path:
    return Path(data) / "features" / codec / voice / f"{utt_id}.npz"


def analyze_one(args: tuple[str, str, str, str]) -> str:
    data, codec, wav_rel, out = args
    from audiopd.audio import read_audio
    from audiopd.codec.world import analyze

    cfg = codec_config(codec)
    audio, _ = read_audio(Path(data) / wav_rel, expect_rate=cfg.sample_rate)
    f = analyze(audio, cfg)
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.stem}.tmp.npz")
    np.savez(tmp, f0=f.f0.astype(np.float32), mcep=f.mcep.astype(np.float32), ap_db=f.ap_db.astype(np.float32))
    tmp.replace(out_path)
    return out


def load_features(path: Path):
    from audiopd.codec.world import WorldFeatures

    with np.load(path) as z:
        return WorldFeatures(f0=z["f0"].astype(np.float64), mcep=z["mcep"].astype(np.float64),
                             ap_db=z["ap_db"].astype(np.float64))


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--codec", default="world16k", help="codec config name under conf/")
        p.add_argument("--jobs", type=int, default=2)
        p.add_argument("--splits", default="train,test",
                       help="comma-separated splits to analyse (test features only ever reach the test shards)")
        p.add_argument("--max-train-sentences", type=int, default=0,
                       help="analyse only this many train sentences (lowest ids, every voice); 0 = all")

    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    stage = f"{STAGE}-{args.codec}"
    if cc.is_done(args.data, stage) and not args.force:
        print(f"stage {stage} already done")
        return 0
    timer = cc.Timer()
    rows = [r for r in cc.read_jsonl(cc.corpus_dir(args.data) / "manifest.jsonl") if r["split"] in args.splits.split(",")]
    if args.max_train_sentences:
        # Harvest analysis runs ~6x real time per core (the whole train split: ~75 min on 2 cores here).
        # A smaller sample is for quick trials; ids are hashes, so the lowest ids are an unbiased sample.
        keep = sorted({r["id"] for r in rows if r["split"] == "train"})[: args.max_train_sentences]
        keep_set = set(keep)
        rows = [r for r in rows if r["split"] != "train" or r["id"] in keep_set]
    # Sentence-major (the manifest is voice-major): a run stopped part-way leaves every voice analysed for the
    # same sentences, a balanced training set, rather than some voices complete and others not begun.
    first = {}
    for r in rows:
        first.setdefault(r["id"], len(first))
    rows.sort(key=lambda r: first[r["id"]])
    todo = []
    for r in rows:
        out = feature_path(args.data, args.codec, r["voice"], r["id"])
        # --force redoes the stage, not finished items (README): delete DATA/features/<codec>/ to re-analyse.
        if not out.is_file():
            todo.append((str(args.data), args.codec, r["wav"], str(out)))
    print(f"{len(rows)} utterances, {len(todo)} to analyse with {args.jobs} jobs")
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for i, _ in enumerate(pool.map(analyze_one, todo, chunksize=8)):
            if i % 500 == 0:
                print(f"  {i}/{len(todo)} ({timer.seconds} s)", flush=True)
    cc.mark_done(args.data, stage, {"utterances": len(rows), "seconds": timer.seconds})
    print(f"done in {timer.seconds} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
