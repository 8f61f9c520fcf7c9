"""The ``audiopd bench`` command: its options, the Markdown table of a report, and the run that prints them.

``audiopd.eval.bench`` measures and returns the JSON-able report; this module is the command-line face
on top of it (parsing, printing, writing the JSON), kept apart so the measuring code reads on its own. With
``--stages`` the same options drive ``audiopd.eval.bench_stages`` (batch 1, one table of stage costs per mode).
``add_arguments`` imports no torch, so ``audiopd --help`` stays light.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from audiopd.artifacts import VOICE_HELP
from audiopd.eval.bench import (
    AUTO,
    PARALLEL,
    SERIAL,
    BenchConfig,
    BenchOptionError,
    run_bench,
)
from audiopd.eval.bench_stages import StagesConfig
from audiopd.synthesis.config import PRECISIONS


def _pair(cell: dict, key: str, fmt: str = "{}") -> str:
    vals = [cell["modes"][m].get(key) for m in (PARALLEL, SERIAL)]
    return " / ".join("-" if v is None else fmt.format(v) for v in vals)


def markdown_table(report: dict[str, Any]) -> str:
    """One row per cell; ``a / b`` columns are parallel / serial."""
    auto = report.get("auto", False)
    head = ["target s", "audio s", "batch", "parallel s", "serial s", "serial/parallel", "RTF par / ser",
            "model-only RTF par / ser", "codec decode % par / ser", "passes par / ser", "steps par / ser"]
    if auto:
        head += ["auto s", "auto attempts"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for c in report["cells"]:
        m = c["modes"]
        row = [f"{c['target_s']:g}", f"{c['audio_s']:.2f}", str(c["batch"]), f"{m[PARALLEL]['median_s']:.3f}",
               f"{m[SERIAL]['median_s']:.3f}", "-" if c["serial_over_parallel"] is None else
               f"{c['serial_over_parallel']:.2f}", _pair(c, "rtf", "{:.3f}"), _pair(c, "rtf_model", "{:.3f}"),
               " / ".join("-" if m[k]["codec_share"] is None else f"{100 * m[k]['codec_share']:.0f}"
                          for k in (PARALLEL, SERIAL)),
               _pair(c, "forward_passes", "{:g}"), _pair(c, "steps", "{:g}")]
        if auto:
            row += [f"{m[AUTO]['median_s']:.3f}", f"{m[AUTO]['attempts']:g}"] if AUTO in m else ["-", "-"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _csv_of(kind: type, what: str) -> Callable[[str], tuple]:
    def parse(text: str) -> tuple:
        try:
            values = tuple(kind(p) for p in text.split(",") if p.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be comma-separated numbers, got {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError(f"{what} must not be empty")
        return values

    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``audiopd bench`` (torch-free, so ``--help`` stays light)."""
    p.add_argument("--voice", default=None, help=VOICE_HELP)
    p.add_argument("--lengths", type=_csv_of(float, "--lengths"), default=BenchConfig.lengths, metavar="S,S,...",
                   help="target seconds per text (default: 1,2,5,10,20)")
    # None = not given, so --stages (batch 1 only) can refuse an explicit --batch
    p.add_argument("--batch", type=_csv_of(int, "--batch"), default=None, metavar="B,B,...",
                   help="batch sizes (default: 1,8)")
    p.add_argument("--repeats", type=int, default=BenchConfig.repeats, help="timed runs per mode and cell (default: 3)")
    p.add_argument("--steps", type=int, default=None, metavar="K", help="level-0 step budget of parallel decoding")
    p.add_argument("--seed", type=int, default=0, help="synthesis seed, the same in every run (default: 0)")
    p.add_argument("--auto", action="store_true", help="also time the checked auto mode at batch 1")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="torch threads (default: torch's choice, as for audiopd say and serve)")
    p.add_argument("--precision", choices=PRECISIONS, default="auto",
                   help="torch's per-call dtype (audiopd.model.precision; default: auto, bfloat16 where the CPU "
                        "computes it natively); the peers audiopd:float32 and audiopd:bfloat16 time the others")
    p.add_argument("--json", default=None, metavar="OUT.json", help="write the full report as JSON")
    p.add_argument("--peers", default=None, metavar="SYSTEM:VOICE,...",
                   help="also time natural peers on the same texts and threads, e.g. kokoro:af_heart,piper:joe "
                   "(needs the 'teachers' extra)")
    p.add_argument("--no-rewarm", action="store_true",
                   help="with --peers, time each system right after the others (default: each system's timed "
                   "call follows an untimed call of its own, as in a process serving one engine)")
    p.add_argument("--stages", action="store_true",
                   help="instead, time each stage of a synthesis at batch 1 (text frontend, conditioning, decoder "
                   "passes, codec parts, checker, joins, WAV writing): one table per mode, rows = stages, "
                   "columns = lengths (audiopd.eval.bench_stages)")


def config_of(args: argparse.Namespace) -> BenchConfig | StagesConfig:
    """The validated config the options ask for (``BenchOptionError`` otherwise): cheap, so the command runs it
    before loading the voice, and bad input fails at once."""
    if args.threads is not None and args.threads < 1:
        raise BenchOptionError(f"--threads must be >= 1, got {args.threads}")
    cfg: BenchConfig | StagesConfig
    if getattr(args, "stages", False):
        given = [flag for flag, on in (("--batch", args.batch is not None), ("--auto", args.auto),
                                       ("--peers", bool(args.peers)),
                                       ("--no-rewarm", args.no_rewarm)) if on]
        if given:
            raise BenchOptionError(f"--stages times batch 1 in parallel, auto and serial mode: drop {', '.join(given)}")
        cfg = StagesConfig(lengths=tuple(args.lengths), repeats=args.repeats, steps=args.steps, seed=args.seed)
    else:
        cfg = BenchConfig(lengths=tuple(args.lengths), batches=tuple(args.batch or BenchConfig.batches),
                          repeats=args.repeats, auto=args.auto, steps=args.steps, seed=args.seed,
                          rewarm=not args.no_rewarm)
    cfg.validate()
    return cfg


def run_command(tts, speaker: str | None, args: argparse.Namespace, *, load_s: float | None = None) -> int:
    """Body of ``audiopd bench`` once the voice is loaded (``load_s``: how long that took, imports included):
    run, print the table(s), write the JSON."""
    import torch

    from audiopd.fileio import write_text_atomic

    cfg = config_of(args)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if isinstance(cfg, StagesConfig):
        from audiopd.eval.bench_stages import print_report, run_stages

        report = run_stages(tts, cfg, speaker=speaker, voice_name=tts.voice_name, log=log)
        report["load_s"] = None if load_s is None else round(load_s, 3)
        print_report(report)
        if args.json:
            write_text_atomic(args.json, json.dumps(report, indent=1) + "\n")
        return 0
    peers, load_s = {}, {}
    if getattr(args, "peers", None):
        from audiopd.eval.bench_peers import load_peers

        peers, load_s = load_peers(args.peers, torch.get_num_threads(), log, voice=tts.model.artifact_dir,
                                   speaker=speaker, steps=cfg.steps, seed=cfg.seed)
    report = run_bench(tts, cfg, speaker=speaker, voice_name=tts.voice_name, log=log, peers=peers)
    if peers:
        report["peers"] = {"load_s": load_s, "threads": torch.get_num_threads()}
    print(f"voice {report['voice']} (speaker {report['speaker']}), codec {report['codec']}, "
          f"{report['torch_threads']} torch thread(s) in {report['precision']}, {cfg.repeats} repeats, medians; "
          f"RTF = wall / audio seconds of the whole batch; {report['total_wall_s']:.0f} s")
    print(markdown_table(report))
    if peers:
        from audiopd.eval.bench_peers import print_table

        print_table(report)
    if args.json:
        write_text_atomic(args.json, json.dumps(report, indent=1) + "\n")
    return 0
