"""``python -m audiopd.train --config CONFIG.yaml --shards DIR --out RUN_DIR [--val-shards TEST] [--resume]
[--init-from SRC [--map-speakers]] [--max-minutes M] [--device cpu|cuda]``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from audiopd.config import load_config
from audiopd.errors import AudiopdError
from audiopd.train.loop import TrainConfig, train


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audiopd.train", description="Train an audiopd voice.")
    ap.add_argument("--config", help="training config (YAML/TOML); defaults when omitted")
    ap.add_argument("--shards", required=True, nargs="+", help="shard directory/files")
    ap.add_argument("--out", required=True, help="run directory (logs, checkpoints)")
    ap.add_argument("--val-shards", nargs="+", default=None, metavar="SHARDS",
                    help="held-out shard directory/files (the corpus's test-*.safetensors): losses logged as "
                         "'val' records every val_every steps and at the stop")
    ap.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    ap.add_argument("--init-from", default=None, metavar="CKPT_RUN_OR_VOICE",
                    help="start a new run from these weights (fine-tuning): a checkpoint, a run directory or a voice")
    ap.add_argument("--map-speakers", action="store_true",
                    help="with --init-from: re-index its speaker tables to the shards' (new speakers start from "
                         "the mean of the trained ones)")
    ap.add_argument("--max-minutes", type=float, default=None, help="wall-clock budget; checkpoints on stop")
    ap.add_argument("--max-steps", type=int, default=None, help="override config max_steps as a stop (LR unchanged)")
    ap.add_argument("--device", default=None, metavar="DEVICE",
                    help="cpu, cuda or cuda:N: overrides the config's device (the same config trains anywhere)")
    args = ap.parse_args(argv)
    try:
        cfg = load_config(TrainConfig, args.config) if args.config else TrainConfig()
        if args.device is not None:
            cfg = dataclasses.replace(cfg, device=args.device)
        summary = train(cfg, args.shards, args.out, resume=args.resume, max_minutes=args.max_minutes,
                        max_steps=args.max_steps, init_from=args.init_from,
                        map_speakers=args.map_speakers, val_shards=args.val_shards)
    except AudiopdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if os.environ.get("RANK", "0") == "0":
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
