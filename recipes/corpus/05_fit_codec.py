"""Stage 05: fit the default codec's residual-VQ codebooks on the train split and write codecs/<codec>/.

Reads the cached WORLD features of stage 04 (train split only: the test split stays held out for the codec's
round-trip evaluation), samples up to --max-frames frames, fits Q-1 k-means levels on successive residuals
(audiopd.codec.world_fit) and writes config.yaml + codebooks.safetensors + README.md + SHA256SUMS into the
repository's codecs/<codec>/ (or --out). Deterministic for a seed. The README's head is generated; the
measurements written below its marker line are kept (audiopd.codec.world_fit.merge_readme).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_common as cc  # noqa: E402

STAGE = "05"
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

README = """# {name}: audiopd's default offline codec

WORLD vocoder features (16 kHz, {fp:g} ms frames, {f0} F0) tokenised as {q} levels of {c} codes:

* level 0: voicing + log-F0 ({bins} bins, {cents:.0f} cents apart, token 0 unvoiced) x frame energy ({eb} bins)
* levels 1..{last}: residual VQ of the {d}-dim mel-cepstrum (c0 relative to level 0) + {ab} band aperiodicities

Fitted by `recipes/corpus/05_fit_codec.py` on {frames} frames of the corpus's train split
({utts} utterances, voices {voices}), seed {seed}. Files: `config.yaml` (format_version {ver}),
`codebooks.safetensors` (float32 [{levels}, {c}, {d2}]), `SHA256SUMS`.
"""


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--codec", default="world16k")
        p.add_argument("--max-frames", type=int, default=200_000)
        p.add_argument("--fit-sentences", type=int, default=800,
                       help="fit on the first N train sentences (lowest ids, every analysed voice); 0 = all")
        p.add_argument("--iters", type=int, default=10)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out", default=None, help="artifact directory (default: <repo>/codecs/<codec>)")

    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    stage = f"{STAGE}-{args.codec}"
    if cc.is_done(args.data, stage) and not args.force:
        print(f"stage {stage} already done")
        return 0
    feats_mod = __import__("04_features")
    from audiopd.codec.world_fit import fit_rvq, prosody_relative_vectors, write_codec_artifact

    cfg = feats_mod.codec_config(args.codec)
    timer = cc.Timer()
    rows = [r for r in cc.read_jsonl(cc.corpus_dir(args.data) / "manifest.jsonl") if r["split"] == "train"]
    if args.fit_sentences:
        # The shipped codec was fitted on the first 800 sentences (what stage 04 analysed then; README): fitting
        # on more would change the codebooks, and with them every token the shipped voice has learnt.
        keep = set(sorted({r["id"] for r in rows})[: args.fit_sentences])
        rows = [r for r in rows if r["id"] in keep]
    random.Random(args.seed).shuffle(rows)
    feats, used = [], []
    for r in rows:
        path = feats_mod.feature_path(args.data, args.codec, r["voice"], r["id"])
        if path.is_file():
            feats.append(feats_mod.load_features(path))
            used.append(r)
    total = sum(len(f.f0) for f in feats)
    if total < cfg.cardinality * 20:
        raise SystemExit(f"only {total} frames of train features: run stage 04 first")
    vectors = prosody_relative_vectors(feats, cfg)
    # A random subset of frames from every analysed utterance (not a subset of utterances): all voices
    # and sentences shape the codebooks, while k-means stays minutes long.
    rng = np.random.default_rng(args.seed)
    vectors = vectors[rng.permutation(len(vectors))[: args.max_frames]]
    frames = len(vectors)
    print(f"fitting on {frames} of {total} frames from {len(feats)} utterances")
    books = fit_rvq(vectors, cfg.num_codebooks - 1, cfg.cardinality, iters=args.iters, seed=args.seed)
    out = Path(args.out) if args.out else REPO / "codecs" / args.codec
    cents = 1200 * np.log2(cfg.f0_ceil / cfg.f0_floor) / (cfg.f0_bins - 1)
    readme = README.format(
        name=cfg.name, fp=cfg.frame_period_ms, f0=cfg.f0_method, q=cfg.num_codebooks, c=cfg.cardinality,
        bins=cfg.f0_bins, cents=cents, eb=cfg.energy_bins, last=cfg.num_codebooks - 1, d=cfg.mcep_dims,
        ab=len(cfg.ap_band_edges_hz) - 1, frames=frames, utts=len(feats),
        voices=", ".join(sorted({r["voice"] for r in used})), seed=args.seed, ver=cfg.format_version,
        levels=cfg.num_codebooks - 1, d2=cfg.vq_dims,
    )
    write_codec_artifact(out, cfg, books, readme)
    cc.mark_done(args.data, stage, {"frames": frames, "utterances": len(feats), "seconds": timer.seconds})
    print(f"wrote {out} in {timer.seconds} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
