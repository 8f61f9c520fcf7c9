"""How ``audiopd`` subcommands are declared and run: the registry, the parser built from it, and ``main``.

``@subcommand("name", help=..., args=configure)`` registers a handler (``"codec roundtrip"`` nests under
``codec``); ``build_parser`` turns the registry into an argparse tree, and ``main`` dispatches to the
chosen handler and owns the exit-code policy. This is the mechanism only: the subcommands themselves are
defined in ``audiopd.cli``, which must be imported for them to be registered (the ``audiopd`` entry point
and ``python -m audiopd.cli`` both do).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Sequence

from audiopd import __version__
from audiopd.errors import AudiopdError, UsageError

PROG = "audiopd"
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer killed by a closed pipe

Handler = Callable[[argparse.Namespace], int]
Configure = Callable[[argparse.ArgumentParser], None]


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


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argparse tree of every registered subcommand; with ``command`` (a first word, "say" or "codec"), only
    that command's subcommands get their arguments, the others their names and help. Several commands import
    their modules to declare their options (render ~60 ms, bench ~60 ms, on a one-off ``audiopd say``'s cold
    start on this project's 2-core machine), and one run parses one command's."""
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
        if command is None or words[0] == command:
            sub.configure(p)
        p.set_defaults(_handler=sub.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 success, 2 user error, 141 when stdout's reader went away)."""
    words = list(sys.argv[1:] if argv is None else argv)
    # The command is the first word unless that is an option (--help, --version): then every command is built.
    parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
    try:
        args = parser.parse_args(argv)
        handler: Handler | None = getattr(args, "_handler", None)
        if handler is None:  # a bare group such as `audiopd codec`, or nothing at all
            (getattr(args, "_group", None) or parser).print_help(sys.stderr)
            return EXIT_USAGE
        return handler(args)
    except AudiopdError as exc:
        print(f"{PROG}: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help / --version exit through argparse
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`audiopd voices | head`): stop quietly, as POSIX tools do
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # else the flush at exit raises again
        return EXIT_BROKEN_PIPE


def one_line(message: str) -> str:
    """``message`` on one line: whitespace runs (newlines included) collapse to single spaces."""
    return " ".join(message.split()) or "unknown error"
