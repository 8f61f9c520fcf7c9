"""The ``audiopd`` command line: a thin layer of small subcommand functions over the library.

Adding a subcommand is one decorated function: ``@subcommand("name", help=..., args=configure)``
registers it (``"codec roundtrip"`` nests under ``codec``). ``main`` is the one place that turns an
``AudiopdError`` (or a usage mistake) into ``audiopd: error: ...`` on stderr and exit code 2; bugs
still raise with a traceback so they get reported rather than hidden. The registry, the parser and
``main`` live in ``audiopd.subcommands``; this module holds the subcommands and re-exports those names.

Subcommands that write files validate every input before writing any output, and write
atomically, so a failed run leaves no partial files behind.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from audiopd.artifacts import VOICE_HELP
from audiopd.codec.registry import DEFAULT_CODEC, add_decoder_argument
from audiopd.errors import AudiopdError, UsageError
from audiopd.fileio import check_writable_dir, stdout_to_stderr, write_fd
from audiopd.lite import RUNTIMES
from audiopd.subcommands import (  # the registry and main, also importable from here
    EXIT_USAGE,  # noqa: F401
    GROUP_HELP,  # noqa: F401
    PROG,
    SUBCOMMANDS,  # noqa: F401
    Configure,  # noqa: F401
    Handler,  # noqa: F401
    Subcommand,  # noqa: F401
    build_parser,  # noqa: F401
    main,
    one_line,
    subcommand,
)
from audiopd.text.lexicon import add_lexicon_argument, load_lexicon


# ---------------------------------------------------------------------------------- codec roundtrip
def _roundtrip_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="IN.wav", help="audio files at the codec's sample rate")
    p.add_argument("-o", "--outdir", required=True, metavar="OUTDIR", help="where to write the decoded files")
    p.add_argument("--codec", default=DEFAULT_CODEC, help="shipped codec name or a ./path (default: %(default)s)")
    p.add_argument(
        "--levels", type=int, default=None, metavar="N", help="decode from the first N levels (default: all)"
    )
    add_decoder_argument(p)


@subcommand(
    "codec roundtrip",
    help="encode audio files and decode them again (optionally from fewer levels)",
    args=_roundtrip_args,
)
def cmd_codec_roundtrip(args: argparse.Namespace) -> int:
    from audiopd.codec.roundtrip import run_roundtrip

    return run_roundtrip(args.inputs, args.outdir, args.codec, args.levels, args.decoder)


# ------------------------------------------------------------------------------------- codec list
@subcommand("codec list", help="list the codec artifacts audiopd can find")
def cmd_codec_list(args: argparse.Namespace) -> int:
    from audiopd.codec import available_codecs

    for name in available_codecs():
        print(f"{name}{'  (default)' if name == DEFAULT_CODEC else ''}")
    return 0


# ----------------------------------------------------------------------------------------- voices
def _voices_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the list as JSON")


@subcommand("voices", help="list the voices and speakers --voice can name, with their teachers (exit 1 if an "
                           "artifact is broken)", args=_voices_args)
def cmd_voices(args: argparse.Namespace) -> int:
    import json

    from audiopd.model.info import describe_voices

    voices = describe_voices()
    if args.json:
        print(json.dumps(voices, indent=2))
    else:
        for v in voices:
            head = f"{v['name']}{' (default)' if v['default'] else ''}"
            if "error" in v:
                print(f"{head}: BROKEN: {v['error']}")
                continue
            k = f", K {v['parallel_steps']}" if v["parallel_steps"] else ""
            t = v["level0_temperature"]
            k += "" if t is None else ", greedy level 0" if t == 0 else f", level-0 temperature {t:g}"
            print(f"{head}: codec {v['codec']}, {v['sample_rate']} Hz{k}")
            for s in v["speakers"]:
                print(f"  {s['name']:<8} {'taught by ' + s['teacher'] if s['teacher'] else ''}".rstrip())
    return 1 if any("error" in v for v in voices) else 0


# -------------------------------------------------------------------------------------- phonemize
def _phonemize_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="+", metavar="TEXT",
                   help="English text (several arguments are joined by spaces); '-' reads stdin")
    add_lexicon_argument(p)
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--words", action="store_true",
                       help="a line per word: the word, its phones and where they come from (lexicon, dictionary "
                            "or guessed by the G2P's rules)")
    shown.add_argument("--guesses", action="store_true",
                       help="only the words neither --lexicon nor the dictionary has, once each with the phones "
                            "the G2P guessed, as a lexicon file to check, fix and pass back with --lexicon "
                            "(each input line phonemized on its own, so a whole book can be piped in)")


@subcommand("phonemize", help="print the normalised text and its phoneme tokens (or each word's phones and "
            "their source, or the words the G2P has to guess)", args=_phonemize_args)
def cmd_phonemize(args: argparse.Namespace) -> int:
    from audiopd.text import phonemize
    from audiopd.text.guesses import as_lexicon, guesses, word_phones

    lexicon = load_lexicon(args.lexicon)
    text = _read_text(args.text)
    if args.guesses:
        sys.stdout.write(as_lexicon(guesses(text.splitlines(), lexicon=lexicon)))
    elif args.words:
        for w in word_phones(text, lexicon=lexicon):
            print(f"{w.word}\t{' '.join(w.phones)}\t{w.source}")
    else:
        result = phonemize(text, lexicon=lexicon)
        print(result.text)
        print(" ".join(result.tokens))
    return 0


# -------------------------------------------------------------------------------------------- say
def _say_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="*", metavar="TEXT",
                   help="text to speak (several arguments are joined); '-' reads stdin")
    p.add_argument("-o", "--output", required=True, metavar="OUT.wav",
                   help="file to write, 16-bit WAV or (name ending in .flac) FLAC; '-' writes the WAV to stdout "
                        "(and nothing else)")
    p.add_argument("--voice", default=None, help=VOICE_HELP)
    p.add_argument("--mode", choices=("auto", "parallel", "serial"), default="auto",
                   help="decoding path; auto checks the output and escalates on failure (default: auto)")
    p.add_argument("--steps", type=int, default=None, metavar="K",
                   help="level-0 step budget of parallel decoding (default: the voice's own, else 3)")
    p.add_argument("--seed", type=int, default=None, metavar="N", help="random seed (default: random, in the report)")
    p.add_argument("--speed", type=float, default=1.0, metavar="S", help="speaking rate factor (default: 1.0)")
    p.add_argument("--report", default=None, metavar="R.json", help="write the synthesis report as JSON")
    p.add_argument("--timestamps", default=None, metavar="OUT.srt|.vtt|.json", help="write word timestamps")
    p.add_argument("--strict", action="store_true", help="exit 1 when the delivered audio fails the check")
    p.add_argument("--runtime", choices=RUNTIMES, default="auto",
                   help="auto: the torch-free NumPy path for a parallel first attempt, torch for the rest (repair, "
                        "serial, the thorough checker), imported only when needed; numpy: refuse what NumPy cannot "
                        "do; torch: always torch (default: auto)")
    add_decoder_argument(p)
    add_lexicon_argument(p)
    _checker_arg(p)


def _checker_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checker", choices=("fast", "thorough"), default="fast",
                   help="fast: a small phone recogniser (default); thorough: PocketSphinx on every clip, ~50x the cost")


def _read_text(words: list[str]) -> str:
    if words == ["-"]:
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError as exc:
            raise UsageError(f"stdin is not valid UTF-8 text ({exc.reason})") from None
        return text
    if not words:
        raise UsageError("no text given: pass TEXT, or '-' to read it from stdin")
    if "-" in words:
        raise UsageError("'-' (read stdin) cannot be combined with TEXT arguments")
    return " ".join(words)


def _load_voice(spec: str | None, **load_kwargs):
    """--voice: a shipped voice's name or a directory path, VOICE:SPEAKER, or a speaker of a shipped voice.

    ``load_kwargs`` go to ``audiopd.load`` (e.g. ``decoder`` from ``--decoder``)."""
    import audiopd
    from audiopd.artifacts import available, find_artifact, looks_like_path
    from audiopd.errors import ArtifactError
    from audiopd.model.info import speaker_owner

    if spec is None:
        return audiopd.load(**load_kwargs), None
    if ":" in spec and not (looks_like_path(spec) and Path(spec).expanduser().is_dir()):
        voice, _, speaker = spec.rpartition(":")
        return audiopd.load(voice or None, **load_kwargs), speaker or None
    if looks_like_path(spec):  # a directory: find_artifact's error names what is missing there
        return audiopd.load(spec, **load_kwargs), None
    try:
        find_artifact("voices", spec)
    except ArtifactError:
        owner = speaker_owner(spec)
        if owner is None:
            raise ArtifactError(f"unknown voice {spec!r}: no voice artifact and no speaker of a shipped voice has "
                                f"that name (shipped voices: {', '.join(available('voices')) or 'none'})") from None
        return audiopd.load(owner, **load_kwargs), spec
    return audiopd.load(spec, **load_kwargs), None


@subcommand("say", help="synthesise speech from text into a WAV or FLAC file", args=_say_args)
def cmd_say(args: argparse.Namespace) -> int:
    from audiopd.audio import FORMATS
    from audiopd.fileio import write_text_atomic
    from audiopd.synthesis.timestamps import timestamp_format, write_timestamps

    # Validate everything cheap before loading a voice, and write nothing until synthesis succeeded.
    to_stdout = args.output == "-"
    out = Path(args.output)
    if to_stdout:
        targets = [Path(p) for p in (args.report, args.timestamps) if p]
    elif out.suffix.lower() not in FORMATS:
        raise UsageError(f"-o {out}: the output is written as WAV or FLAC, so its name must end in .wav or .flac")
    else:
        targets = [out] + [Path(p) for p in (args.report, args.timestamps) if p]
    if len({t.resolve() for t in targets}) != len(targets):
        raise UsageError("-o, --report and --timestamps must name different files")
    if args.timestamps:
        timestamp_format(args.timestamps)
    for target in targets:
        if target.is_dir():
            raise UsageError(f"{target} is a directory, not a file name")
        check_writable_dir(target.parent)
    text = _read_text(args.text)
    lexicon = load_lexicon(args.lexicon)

    from audiopd.synthesis.report import report_json

    with stdout_to_stderr(to_stdout) as stdout:
        tts, speaker = _load_voice(args.voice, decoder=args.decoder, runtime=args.runtime, lexicon=lexicon)
        result = tts.synthesize(text, voice=speaker, mode=args.mode, steps=args.steps, seed=args.seed,
                                speed=args.speed, check_level=args.checker)
    written: list[Path] = []
    target = out
    try:
        if stdout is None:
            written.append(result.write(out))
        if args.timestamps:
            target = Path(args.timestamps)
            written.append(write_timestamps(target, result.words, duration_s=result.duration_s))
        if args.report:
            target = Path(args.report)
            written.append(write_text_atomic(target, report_json(result.report)))
        if stdout is not None:  # last: the other files are all or nothing, a pipe cannot be taken back
            from audiopd.serve.request import wav_bytes

            target = Path("<stdout>")
            write_fd(stdout, wav_bytes(result.audio, result.sample_rate))
    except OSError as exc:
        for path in written:  # all or nothing
            path.unlink(missing_ok=True)
        raise AudiopdError(f"cannot write {target}: {exc.strerror or exc}") from None
    for warning in result.report.get("warnings", []):
        print(f"{PROG}: warning: {one_line(warning)}", file=sys.stderr)
    verdict = result.report.get("check")
    if verdict is not None and not verdict["passed"]:
        # Delivered (the best attempt), but never silently: say why it failed.
        reasons = "; ".join(verdict["reasons"]) or "no reason given"
        print(f"{PROG}: warning: the output failed the check: {one_line(reasons)}", file=sys.stderr)
        return 1 if args.strict else 0
    return 0


# ------------------------------------------------------------------------------------------ check
def _check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("audio", metavar="AUDIO.wav", help="audio file to check")
    p.add_argument("--text", required=True, help="the text the audio should say")
    p.add_argument("--json", action="store_true", help="print the full verdict as JSON")
    p.add_argument("--voice", default=None, metavar="NAME_OR_DIR",
                   help="use the checker.yaml of this voice (shipped name or path like ./myvoice; default: none)")
    add_lexicon_argument(p)
    _checker_arg(p)


@subcommand("check", help="check that audio says the given text (exit 0 pass, 1 fail, 2 bad input)",
            args=_check_args)
def cmd_check(args: argparse.Namespace) -> int:
    import audiopd
    from audiopd.audio import read_audio
    from audiopd.synthesis.report import report_json, verdict_to_dict
    from audiopd.text import phonemize

    lexicon = load_lexicon(args.lexicon)
    phonemize(args.text, lexicon=lexicon)  # unspeakable reference text is bad input (exit 2), not a failed check
    audio, rate = read_audio(args.audio)
    from audiopd.checker.config import CheckerConfig, at_level

    config = None
    if args.voice is not None:
        from audiopd.model.info import load_checker_config

        config = load_checker_config(args.voice)
    config = at_level(config or CheckerConfig(), args.checker)
    extra = {} if lexicon is None else {"lexicon": lexicon}
    verdict = verdict_to_dict(audiopd.check(audio, rate, args.text, config=config, **extra))
    if args.json:
        sys.stdout.write(report_json(verdict))
    else:
        status = "PASS" if verdict["passed"] else "FAIL"
        reasons = "; ".join(verdict["reasons"])
        print(f"{status} score {verdict['score']:.3f}" + (f": {one_line(reasons)}" if reasons else ""))
    return 0 if verdict["passed"] else 1


# ------------------------------------------------------------------------------------------ bench
def _bench_args(p: argparse.ArgumentParser) -> None:
    from audiopd.eval.bench_cli import add_arguments  # torch-free: a light --help

    add_arguments(p)
    add_decoder_argument(p)


@subcommand("bench", help="time parallel vs serial decoding of a voice at several lengths and batch sizes "
            "(--stages: where each synthesis spends its time)", args=_bench_args)
def cmd_bench(args: argparse.Namespace) -> int:
    import time

    from audiopd.eval.bench_cli import config_of, run_command

    # Validate the options and the output path before loading and minutes of measuring, not after.
    config_of(args)
    if args.json:
        target = Path(args.json)
        if target.is_dir():
            raise UsageError(f"--json {target} is a directory, not a file name")
        check_writable_dir(target.parent)
    t0 = time.perf_counter()
    tts, speaker = _load_voice(args.voice, decoder=args.decoder, precision=args.precision)
    return run_command(tts, speaker, args, load_s=time.perf_counter() - t0)


# ----------------------------------------------------------------------------------------- render
def _render_args(p: argparse.ArgumentParser) -> None:
    from audiopd.batch.driver import add_arguments  # torch-free, so --help stays light

    add_arguments(p)


@subcommand("render", help="batch-render a .txt/.csv/.tsv/.jsonl file of utterances into OUTDIR with a "
            "resumable manifest (exit 0 all ok, 1 some rows failed, 2 bad arguments)", args=_render_args)
def cmd_render(args: argparse.Namespace) -> int:
    from audiopd.batch.driver import run_command

    return run_command(args, _load_voice)


# ---------------------------------------------------------------------------------------- compare
def _compare_args(p: argparse.ArgumentParser) -> None:
    from audiopd.compare.command import add_arguments  # torch-free, so --help stays light

    add_arguments(p)


@subcommand("compare", help="parallel at each K (and auto) against serial: judged, timed, HTML report and "
            "blind listening page", args=_compare_args)
def cmd_compare(args: argparse.Namespace) -> int:
    from audiopd.compare.command import run_command

    return run_command(args)


# ------------------------------------------------------------------------------------------ serve
def _serve_args(p: argparse.ArgumentParser) -> None:
    from audiopd.serve.options import add_arguments  # torch-free, so --help stays light

    add_arguments(p)


@subcommand("serve", help="serve speech over HTTP: a page, POST /synthesize and OpenAI's /v1/audio/speech",
            args=_serve_args)
def cmd_serve(args: argparse.Namespace) -> int:
    from audiopd.serve.options import run_command

    return run_command(args, _load_voice)


if __name__ == "__main__":
    sys.exit(main())
