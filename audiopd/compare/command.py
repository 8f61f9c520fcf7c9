"""Body of ``audiopd compare`` (the CLI registers it; argument parsing stays torch-free for ``--help``).

    audiopd compare TEXTS -o DIR [--voice V] [--voices rms,slt] [--modes parallel,serial,auto]
        [--steps 1,2,3,4,8,16] [--seeds 0,1,2] [--codec CODEC] [--decoder NAME] [--asr whisper|pocketsphinx] [--threads N]
    audiopd compare --tally ANSWERS.json [...] -o DIR
    audiopd compare --merge REPORT_DIR REPORT_DIR [...] -o DIR

Every input is validated (texts, lists, voices, output folder, judges installed) before the first clip.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from audiopd.artifacts import DEFAULT_VOICE
from audiopd.codec.registry import add_decoder_argument
from audiopd.errors import AudiopdError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("texts", nargs="?", metavar="TEXTS", help="text file, one sentence per line ('#' comments)")
    p.add_argument("-o", "--outdir", required=True, metavar="DIR",
                   help="report folder (written whole at the end; an earlier report there is replaced)")
    p.add_argument("--voice", default=None, metavar="NAME_OR_DIR", help=f"voice artifact (default: {DEFAULT_VOICE})")
    p.add_argument("--voices", default="", metavar="S,S", help="speakers of the voice (default: all)")
    p.add_argument("--modes", default="parallel,serial", metavar="M,M", help="of parallel,serial,auto; serial "
                   "is always the baseline (default: %(default)s)")
    p.add_argument("--steps", default="1,2,3,4,8,16", metavar="K,K", help="parallel level-0 step budgets "
                   "(default: %(default)s)")
    p.add_argument("--seeds", default="0", metavar="N,N", help="synthesis seeds (default: %(default)s)")
    p.add_argument("--codec", default=None, metavar="CODEC",
                   help="codec artifact that turns tokens into audio (default: the one the voice names)")
    add_decoder_argument(p)
    p.add_argument("--asr", default="whisper", choices=("whisper", "pocketsphinx"), help="recogniser for WER")
    p.add_argument("--threads", type=int, default=None, metavar="N", help="torch and judge threads")
    p.add_argument("--audio-format", default="flac", choices=("flac", "ogg", "opus"),
                   help="clip files; the judges hear the samples before encoding (default: flac)")
    p.add_argument("--spectrograms", type=int, default=4, metavar="N", help="worst cases drawn (default: 4)")
    p.add_argument("--no-bench", action="store_true", help="skip the workload map")
    p.add_argument("--bench-lengths", default="2,10", metavar="S,S", help="workload map lengths, seconds")
    p.add_argument("--bench-batch", default="1,4", metavar="B,B", help="workload map batch sizes")
    p.add_argument("--merge", nargs="+", default=None, metavar="REPORT_DIR",
                   help="join earlier reports (other speakers or seeds) into -o DIR, then exit")
    p.add_argument("--tally", nargs="+", default=None, metavar="ANSWERS.json",
                   help="summarise exported listening answers against the report in -o DIR, then exit")


def _floats(text: str, what: str) -> tuple[float, ...]:
    from audiopd.compare.run import CompareInputError

    try:
        values = tuple(float(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise CompareInputError(f"{what} must be comma-separated numbers, got {text!r}") from None
    if not values or any(not 0 < v <= 120 for v in values):
        raise CompareInputError(f"{what} must list seconds in (0, 120], got {text!r}")
    return values


def config_of(args: argparse.Namespace):
    from audiopd.compare.run import CompareConfig, CompareInputError, parse_int_list

    batches = parse_int_list(args.bench_batch, "--bench-batch")
    if any(not 1 <= b <= 64 for b in batches):
        raise CompareInputError(f"--bench-batch must list sizes in 1..64, got {args.bench_batch!r}")
    cfg = CompareConfig(
        voices=tuple(v.strip() for v in args.voices.split(",") if v.strip()),
        modes=tuple(m.strip() for m in args.modes.split(",") if m.strip()),
        steps=parse_int_list(args.steps, "--steps"), seeds=parse_int_list(args.seeds, "--seeds"),
        audio_format=args.audio_format, spectrograms=args.spectrograms, bench=not args.no_bench,
        bench_lengths=_floats(args.bench_lengths, "--bench-lengths"), bench_batches=batches)
    cfg.validate()
    return cfg


def run_tally(args: argparse.Namespace) -> int:
    from audiopd.compare.stats import tally, tally_table

    if args.texts:
        raise AudiopdError("--tally reads answers against the report in -o DIR; give no TEXTS with it")
    report = Path(args.outdir) / "results.json"
    if not report.is_file():
        raise AudiopdError(f"no report at {report}: -o must name the folder the listening page came from")

    def load(path: str | Path) -> dict:
        try:
            return json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise AudiopdError(f"no answers file at {path}") from None
        except (OSError, ValueError) as exc:
            raise AudiopdError(f"{path}: not a JSON file ({exc})") from None

    result = tally([load(p) for p in args.tally], load(report)["utterances"])
    print(f"{result['answers']} answers; share preferring the first system, ties counted half, 95% bootstrap")
    print(tally_table(result))
    return 0


def run_command(args: argparse.Namespace) -> int:
    if args.tally is not None:
        return run_tally(args)
    if args.merge is not None:
        from audiopd.compare.run import merge_reports

        if args.texts:
            raise AudiopdError("--merge joins earlier reports into -o DIR; give no TEXTS with it")
        res = merge_reports(args.merge, args.outdir, spectrograms=args.spectrograms)
        print(f"{len(res['utterances'])} clips; smallest K matching serial: {res['summary']['smallest_matching_k']}; "
              f"report: {Path(args.outdir) / 'index.html'}")
        return 0
    from audiopd.compare.run import CompareInputError, prepare_outdir, read_texts

    if not args.texts:
        raise CompareInputError("no TEXTS file given (or --tally ANSWERS.json to summarise a listening test)")
    if args.threads is not None and args.threads < 1:
        raise CompareInputError(f"--threads must be >= 1, got {args.threads}")
    cfg = config_of(args)
    texts = read_texts(args.texts)
    outdir = Path(args.outdir)
    prepare_outdir(outdir).rmdir()  # proves the folder is usable before minutes of work; the run makes its own

    import torch

    import audiopd
    from audiopd.compare.judging import RealJudge
    from audiopd.compare.run import resolve_voices, run_compare

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    tts = audiopd.load(args.voice, codec=args.codec, decoder=args.decoder)
    resolve_voices(tts, cfg.voices)
    judge = RealJudge(args.asr, threads=args.threads)
    # A plain `kill` (SIGTERM) then unwinds like Ctrl-C: run_compare removes its half-built folder.
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        results = run_compare(tts, texts, cfg, judge, outdir, voice_name=tts.voice_name,
                              log=lambda m: print(m, file=sys.stderr, flush=True))
    finally:
        signal.signal(signal.SIGTERM, previous)
    s = results["summary"]
    for name, v in s["systems"].items():
        c = s["vs_serial"].get(name, {})
        mos, wer = c.get("distillmos"), c.get("wer")
        extra = "" if name == "serial" else (
            f"  MOS-serial {mos['diff']:+.3f} ({mos['low']:+.3f}..{mos['high']:+.3f})"
            f"  WER-serial {100 * wer['diff']:+.2f} ({100 * wer['low']:+.2f}..{100 * wer['high']:+.2f})"
            if mos and wer else "")
        print(f"{name:>14}: DistillMOS {v['distillmos']:.3f}  WER {100 * v['wer']:.2f}%  RTF {v['rtf']:.4f}{extra}")
    print(f"smallest K matching serial: {s['smallest_matching_k']}; report: {outdir / 'index.html'}")
    return 0
