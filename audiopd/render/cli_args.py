"""The ``audiopd render`` command's arguments and handler (cli.py only registers them).

Torch-free at import, so ``audiopd render --help`` stays fast; the voice is loaded by the engine's workers.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path

from audiopd.render.batch import DEFAULT_DECODER, RenderOptions, render
from audiopd.render.engines import ENGINES
from audiopd.render.inputs import FORMATS, MODES, parse_shard, read_rows, select_shard
from audiopd.render.manifest import MANIFEST
from audiopd.render.worker import AUDIO_FORMATS, ROWS_PER_CALL

EXIT_OK, EXIT_ROW_ERRORS = 0, 1


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", metavar="INPUT", help="a .txt (a line per utterance, ids from line numbers), .csv/.tsv "
                   "(header id,text[,voice,mode,steps,seed,speed]) or .jsonl file, or '-' for stdin")
    p.add_argument("-o", "--outdir", required=True, metavar="OUTDIR",
                   help=f"where <id>.<ext> files and {MANIFEST} go (created; a rerun resumes)")
    p.add_argument("--input-format", choices=FORMATS, default=None,
                   help="input format (default: from the suffix; stdin: JSON lines if it starts with '{', else text)")
    p.add_argument("--voice", default=None, help="voice artifact name or directory (default: default), a speaker "
                   "of the default voice, or VOICE:SPEAKER; a row's 'voice' names a speaker of this voice")
    p.add_argument("--mode", choices=MODES, default="auto", help="decoding path for rows that name none "
                   "(default: auto, which checks every output)")
    p.add_argument("--steps", type=int, default=None, metavar="K", help="level-0 step budget of parallel decoding")
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="random seed for rows that name none (default: %(default)s, so a rerun reproduces a row)")
    p.add_argument("--speed", type=float, default=1.0, metavar="S", help="speaking rate factor (default: 1.0)")
    p.add_argument("--format", choices=tuple(AUDIO_FORMATS), default="wav", help="audio file format (16-bit)")
    p.add_argument("--decoder", default=None, metavar="D",
                   help=f"decoder set of the voice (default: {DEFAULT_DECODER}; recorded in the manifest)")
    p.add_argument("--engine", choices=ENGINES, default="local",
                   help="local: this machine; ray: a Ray actor pool (RAY_ADDRESS or a local instance)")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="local: worker processes, each loading "
                   "the voice once (default 1: this process); ray: actors (default: one per cluster CPU)")
    p.add_argument("--threads", type=int, default=None, metavar="N", help="torch threads per worker")
    p.add_argument("--batch-rows", type=int, default=ROWS_PER_CALL, metavar="N",
                   help="rows per synthesis call; the facade packs their chunks into padded decoder batches of "
                   "similar length (default: %(default)s)")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="render only rows with index %% N == I (0-based), e.g. a Slurm array task; its manifest "
                   "is manifest.shard-I-of-N.jsonl so shards can share OUTDIR")


def run_command(args: argparse.Namespace, load_voice: Callable) -> int:
    """Validate everything cheap, then render; exit 0 when every row is ok, 1 when some erred."""
    shard = parse_shard(args.shard) if args.shard is not None else None
    kwargs = {} if args.decoder in (None, DEFAULT_DECODER) else {"decoder": args.decoder}
    options = RenderOptions(
        voice=args.voice, mode=args.mode, steps=args.steps, seed=args.seed, speed=args.speed, format=args.format,
        decoder=args.decoder, engine=args.engine, workers=args.workers, threads=args.threads,
        rows_per_call=args.batch_rows,
        manifest=MANIFEST if shard is None else f"manifest.shard-{shard[0]}-of-{shard[1]}.jsonl")
    options.validate()
    rows = select_shard(read_rows(args.input, args.input_format), shard)
    outdir = Path(args.outdir)
    loader = functools.partial(load_voice, args.voice, **kwargs)
    summary = render(rows, outdir, loader, options)
    print(f"audiopd render: {summary.text()}", file=sys.stderr)
    print(f"manifest: {outdir / options.manifest}")
    if summary.errors:
        shown = ", ".join(repr(i) for i in summary.error_ids[:5]) + (" ..." if summary.errors > 5 else "")
        print(f"audiopd render: {summary.errors} row(s) failed (status \"error\" in the manifest): {shown}",
              file=sys.stderr)
        return EXIT_ROW_ERRORS
    return EXIT_OK
