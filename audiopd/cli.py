"""The ``audiopd`` command line: a thin layer of small subcommand functions over the library.

Adding a subcommand is one decorated function: ``@subcommand("name", help=..., args=configure)``
registers it (``"codec roundtrip"`` nests under ``codec``). ``main`` is the one place that turns an
``AudiopdError`` (or a usage mistake) into ``audiopd: error: ...`` on stderr and exit code 2; bugs
still raise with a traceback so they get reported rather than hidden.

Subcommands that write files validate every input before writing any output, and write
atomically, so a failed run leaves no partial files behind.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from audiopd import __version__
from audiopd.codec.registry import DEFAULT_CODEC
from audiopd.errors import AudiopdError

PROG = "audiopd"
EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]
Configure = Callable[[argparse.ArgumentParser], None]


class UsageError(AudiopdError):
    """Bad command-line usage (unknown option, missing argument, value out of range)."""


@dataclasses.dataclass(frozen=True)
class Subcommand:
    name: str  # space-separated path, e.g. "codec roundtrip"
    help: str
    configure: Configure
    run: Handler


# Insertion order is the order in --help.
SUBCOMMANDS: dict[str, Subcommand] = {}
# Help lines for command groups (the first word of nested subcommands).
GROUP_HELP: dict[str, str] = {"codec": "inspect and exercise codecs"}


def subcommand(name: str, *, help: str, args: Configure | None = None) -> Callable[[Handler], Handler]:
    """Register ``fn(namespace) -> exit code`` as subcommand ``name`` with arguments from ``args``."""

    def deco(fn: Handler) -> Handler:
        if name in SUBCOMMANDS:
            raise ValueError(f"subcommand {name!r} registered twice")
        SUBCOMMANDS[name] = Subcommand(name, help, args or (lambda p: None), fn)
        return fn

    return deco


class _Parser(argparse.ArgumentParser):
    """argparse prints usage and exits on errors; we want the single-line error and exit 2 from main."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Offline text-to-speech on codec tokens with parallel decoding.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    top = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    groups: dict[str, argparse._SubParsersAction] = {}
    for sub in SUBCOMMANDS.values():
        words = sub.name.split()
        container = top
        for depth in range(len(words) - 1):
            key = " ".join(words[: depth + 1])
            if key not in groups:
                group = container.add_parser(words[depth], help=GROUP_HELP.get(key, ""))
                group.set_defaults(_group=group)
                groups[key] = group.add_subparsers(dest=f"_sub{depth}", metavar="SUBCOMMAND", parser_class=_Parser)
            container = groups[key]
        p = container.add_parser(words[-1], help=sub.help, description=sub.help)
        sub.configure(p)
        p.set_defaults(_handler=sub.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 success, 2 user error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        handler: Handler | None = getattr(args, "_handler", None)
        if handler is None:  # a bare group such as `audiopd codec`, or nothing at all
            (getattr(args, "_group", None) or parser).print_help(sys.stderr)
            return EXIT_USAGE
        return handler(args)
    except AudiopdError as exc:
        print(f"{PROG}: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help / --version exit through argparse
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def _one_line(message: str) -> str:
    return " ".join(message.split()) or "unknown error"


# ---------------------------------------------------------------------------------- codec roundtrip
def _roundtrip_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="IN.wav", help="audio files at the codec's sample rate")
    p.add_argument("-o", "--outdir", required=True, metavar="OUTDIR", help="where to write the decoded files")
    p.add_argument("--codec", default=DEFAULT_CODEC, help="codec artifact name or directory (default: %(default)s)")
    p.add_argument(
        "--levels", type=int, default=None, metavar="N", help="decode from the first N levels (default: all)"
    )


@subcommand(
    "codec roundtrip",
    help="encode audio files and decode them again (optionally from fewer levels)",
    args=_roundtrip_args,
)
def cmd_codec_roundtrip(args: argparse.Namespace) -> int:
    from audiopd.audio import read_audio, write_audio
    from audiopd.codec import load_codec

    codec = load_codec(args.codec)
    q = codec.num_codebooks
    levels = q if args.levels is None else args.levels
    if not 1 <= levels <= q:
        raise UsageError(f"--levels {levels} is out of range: codec {codec.name!r} has levels 1..{q}")

    # Validate everything (cheapest first) before writing anything.
    outdir = Path(args.outdir)
    targets = [outdir / _output_name(Path(p)) for p in args.inputs]
    _check_targets([Path(p) for p in args.inputs], targets)
    _check_writable_dir(outdir)
    signals = [read_audio(p, expect_rate=codec.sample_rate)[0] for p in args.inputs]

    decoded = []
    for audio in signals:
        codes = codec.encode(audio)
        # The codec pads to whole frames; trim back so output and input last equally long.
        decoded.append(codec.decode(codes[:, :levels])[0, : audio.size])

    written: list[Path] = []
    target = outdir
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        for target, audio in zip(targets, decoded):
            written.append(write_audio(target, audio, codec.sample_rate))
    except OSError as exc:
        for path in written:  # all or nothing
            path.unlink(missing_ok=True)
        raise AudiopdError(f"cannot write {target}: {exc.strerror or exc}") from None
    for target in written:
        print(target)
    return 0


def _output_name(path: Path) -> str:
    # write_audio always writes WAV, so a .flac/.ogg input gets a .wav name rather than a lying suffix.
    return path.name if path.suffix.lower() == ".wav" else path.stem + ".wav"


def _check_targets(inputs: list[Path], targets: list[Path]) -> None:
    seen: dict[Path, Path] = {}
    for src, dst in zip(inputs, targets):
        key = dst.resolve()
        if key in seen:
            raise UsageError(f"{src} and {seen[key]} would both be written to {dst}")
        seen[key] = src
    resolved_inputs = {p.resolve() for p in inputs}
    for dst in targets:
        if dst.resolve() in resolved_inputs:
            raise UsageError(f"refusing to overwrite the input {dst}: choose another -o OUTDIR")


def _check_writable_dir(outdir: Path) -> None:
    """Prove ``outdir`` (or, if it does not exist yet, its nearest existing ancestor) takes files.

    Nothing is created here: a run that fails validation later must not leave an empty directory.
    A probe file is more honest than permission bits, which root and read-only mounts make lie.
    """
    existing = outdir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise AudiopdError(f"output directory {outdir} cannot be created: {existing} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".audiopd-probe-", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise AudiopdError(f"output directory {outdir} is not writable: {exc.strerror or exc}") from None


# ------------------------------------------------------------------------------------- codec list
@subcommand("codec list", help="list the codec artifacts audiopd can find")
def cmd_codec_list(args: argparse.Namespace) -> int:
    from audiopd.codec import available_codecs

    for name in available_codecs():
        print(f"{name}{'  (default)' if name == DEFAULT_CODEC else ''}")
    return 0


# -------------------------------------------------------------------------------------- phonemize
def _phonemize_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="+", metavar="TEXT", help="English text (several arguments are joined by spaces)")


@subcommand("phonemize", help="print the normalised text and its phoneme tokens", args=_phonemize_args)
def cmd_phonemize(args: argparse.Namespace) -> int:
    from audiopd.text import phonemize

    result = phonemize(" ".join(args.text))
    print(result.text)
    print(" ".join(result.tokens))
    return 0


if __name__ == "__main__":
    sys.exit(main())
