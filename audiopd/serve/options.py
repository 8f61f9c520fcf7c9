"""``audiopd serve`` options and command (torch-free until the voice loads, so ``--help`` stays light)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from audiopd.artifacts import VOICE_HELP
from audiopd.codec.registry import add_decoder_argument
from audiopd.serve.listen import bind
from audiopd.serve.request import DEFAULT_HOST, DEFAULT_MAX_CHARS, DEFAULT_PORT
from audiopd.text.lexicon import add_lexicon_argument, load_lexicon


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=DEFAULT_HOST,
                   help="address to listen on (default: %(default)s; 0.0.0.0 for every interface, then add the "
                        "names clients use with --allow-host)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="TCP port, 0 for any free one (default: %(default)s)")
    p.add_argument("--voice", default=None, help=VOICE_HELP + "; requests may name another speaker of that voice")
    add_decoder_argument(p)
    add_lexicon_argument(p)
    p.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS, metavar="N",
                   help="longest text accepted; longer requests get 413 (default: %(default)s)")
    p.add_argument("--threads", type=int, default=None, metavar="N", help="torch threads (default: torch's choice)")
    p.add_argument("--queue", type=int, default=16, metavar="N",
                   help="requests admitted at once (decoding, waiting, streaming out); one more gets 429 "
                        "(default: %(default)s)")
    p.add_argument("--time-budget", type=float, default=10.0, metavar="S",
                   help="per-request time budget from arrival to the last sentence: S seconds plus "
                        "--time-budget-per-char per character. A request that could not finish within it behind "
                        "the work queued ahead (estimated from measured RTF) gets 429 with Retry-After at once; "
                        "one that runs out anyway gets 503, a stream ends after the sentences sent "
                        "(default: %(default)s)")
    p.add_argument("--time-budget-per-char", type=float, default=0.05, metavar="S",
                   help="seconds of budget per character of text (default: %(default)s)")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST[:PORT]",
                   help="another Host header value to answer (e.g. myserver.lan:8000); '*' answers any Host "
                        "(unsafe: DNS rebinding); repeatable")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="another Origin whose pages may call the server (e.g. http://localhost:3000); repeatable")


def run_command(args: argparse.Namespace, load_voice: Callable[..., Any]) -> int:
    """Validate, bind the port, then load the voice while serving (``load_voice``: the CLI's --voice loader)."""
    from audiopd.errors import UsageError

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is out of range 0..65535")
    for flag, value, low in (("--max-chars", args.max_chars, 1), ("--queue", args.queue, 1),
                             ("--threads", args.threads, 1)):
        if value is not None and value < low:
            raise UsageError(f"{flag} must be >= {low}, got {value}")
    if not args.time_budget > 0 or not args.time_budget_per_char >= 0:
        raise UsageError("--time-budget must be > 0 and --time-budget-per-char >= 0")
    lexicon = load_lexicon(args.lexicon)
    sock = bind(args.host, args.port)  # before the heavy imports and the voice: a busy port fails at once
    from audiopd.serve.app import ServeConfig
    from audiopd.serve.engine import EngineConfig
    from audiopd.serve.server import run

    config = ServeConfig(max_chars=args.max_chars, allow_hosts=tuple(h.lower() for h in args.allow_host),
                         allow_origins=tuple(args.allow_origin),
                         engine=EngineConfig(max_queue=args.queue, budget_base_s=args.time_budget,
                                             budget_per_char_s=args.time_budget_per_char))
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)

    def loader() -> tuple[Any, str | None, str]:
        tts, speaker = load_voice(args.voice, decoder=args.decoder, lexicon=lexicon)
        return tts, speaker, tts.voice_name

    return run(sock, loader, config)
