"""Running the app: bind the port first, load the voice while /healthz answers "loading", serve with uvicorn.

    sock = bind("127.0.0.1", 8000)                 # a busy port is reported before seconds of loading
    run(sock, loader=lambda: (audiopd.load(), None), config=ServeConfig())

Binding before loading means a second server on the same port fails at once, and a client (or a
health probe) connecting during the load gets 503 "loading" instead of "connection refused".
``start_in_thread`` runs the same server in a background thread (tests, benchmarks, the load test).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

import uvicorn

from audiopd import __version__
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.serve.app import ServeConfig, ServerState, create_app
from audiopd.serve.guard import allowed_hosts, protocol_with
from audiopd.serve.listen import bind

if TYPE_CHECKING:
    from audiopd.pipeline import Synthesizer

logger = logging.getLogger("audiopd.serve")
Loader = Callable[[], "tuple[Any, ...]"]  # (synthesizer, default speaker or None[, voice label])

WARM_UP_TEXT = "Hello there."


def warm_up(synth: Synthesizer, speaker: str | None) -> None:
    """One checked synthesis before the server says it is ready, so that no client pays for what the first call
    sets up (the checker's recogniser, torch's first calls of each shape). On the natural voice, five auto-mode
    requests to a fresh server (``loadtest --probe 5``, 2026-12-07) took at most 265-466 ms to their first streamed
    byte in four runs without it, 149-155 ms in two with it (medians 93-145 ms either way). The engine's cost
    estimates never see it: it runs before the engine exists."""
    synth.synthesize(WARM_UP_TEXT, voice=speaker, mode="auto", seed=0)


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"


def build(sock: socket.socket, config: ServeConfig, *, voice_name: str = DEFAULT_VOICE) -> tuple[ServerState,
                                                                                             uvicorn.Server]:
    """The app state (not yet loaded) and a uvicorn server for the bound ``sock``."""
    host, port = sock.getsockname()[:2]
    hosts = None if "*" in config.allow_hosts else allowed_hosts(host, port, config.allow_hosts)
    state = ServerState(config, voice_name=voice_name)
    app = create_app(state, hosts=hosts)
    uv = uvicorn.Config(app, http=protocol_with(config.head_timeout_s), lifespan="off", access_log=False,
                        log_config=None, log_level="warning", limit_concurrency=config.max_connections,
                        h11_max_incomplete_event_size=16 * 1024, timeout_keep_alive=5, ws="none",
                        timeout_graceful_shutdown=5)
    return state, uvicorn.Server(uv)


def _setup_logging() -> None:
    if not logger.handlers:  # access and error log on stderr, unless the embedding program set one up
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def run(sock: socket.socket, loader: Loader, config: ServeConfig | None = None, *, voice_name: str = DEFAULT_VOICE,
        out: TextIO | None = None) -> int:
    """Serve on ``sock`` until Ctrl-C / SIGTERM while ``loader`` loads the voice (and :func:`warm_up` speaks once);
    returns 0.

    The "serving at" line goes to ``out`` once the voice is loaded and the server accepts requests (callers
    take it as the sign of readiness; uvicorn's signal handlers are in place by then). A failing loader
    stops the server and its error is raised here.
    """
    out = out or sys.stdout
    _setup_logging()
    state, server = build(sock, config or ServeConfig(), voice_name=voice_name)
    failure: list[BaseException] = []

    def load() -> None:
        try:
            synth, speaker, *name = loader()
            if name:
                state.voice_name = name[0]
            warm_up(synth, speaker)
            state.ready(synth, speaker)
        except BaseException as exc:  # noqa: BLE001 (re-raised in the main thread)
            failure.append(exc)
            server.should_exit = True

    async def announce() -> None:
        while not (server.started and state.engine is not None):
            if failure or server.should_exit:
                return
            await asyncio.sleep(0.02)
        synth = state.engine.synth
        print(f"audiopd {__version__}: voice {state.voice_name} (speakers {', '.join(synth.voices)}; default "
              f"{state.engine.speaker}), {synth.sample_rate} Hz, serving at {url_of(sock)}  (Ctrl-C to stop)",
              file=out, flush=True)

    async def main() -> None:
        task = asyncio.create_task(announce())
        await server.serve(sockets=[sock])
        task.cancel()

    # uvicorn handles SIGINT/SIGTERM while it serves, then re-raises the signal it caught once the previous
    # handlers are back: these turn that into KeyboardInterrupt, a clean exit 0. Set explicitly, because a server
    # started from a background job inherits SIGINT ignored.
    in_main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGINT)} if in_main else {}
    threading.Thread(target=load, name="audiopd-load", daemon=True).start()
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
        if state.engine is not None:
            state.engine.close()
    if failure:
        raise failure[0]
    print("audiopd: shutting down", file=out, flush=True)
    return 0


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


class BackgroundServer:
    """The server in a daemon thread on 127.0.0.1:<free port>, already loaded with ``synth``."""

    def __init__(self, synth: Synthesizer, config: ServeConfig | None = None, *, speaker: str | None = None,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.sock = bind(host, port)
        self.state, self.server = build(self.sock, config or ServeConfig())
        self.state.ready(synth, speaker)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            threading.Event().wait(0.01)

    def _serve(self) -> None:
        # uvicorn installs signal handlers only in the main thread, so the embedding program keeps its own.
        asyncio.run(self.server.serve(sockets=[self.sock]))

    @property
    def url(self) -> str:
        return url_of(self.sock)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=10)
        self.sock.close()
        if self.state.engine is not None:
            self.state.engine.close()

