"""``audiopd serve``: a small HTTP server over the facade (standard library only).

    server = make_server(audiopd.load(), "127.0.0.1", 8000)
    run_server(server)                       # or: threading.Thread(target=server.serve_forever).start()

Endpoints::

    GET  /health       {"status": "ok", "voice", "speaker", "sample_rate", "version"}
    GET  /voices       ["slt", "rms", ...]                       (Synthesizer.voices)
    POST /synthesize   {"text", "voice"?, "mode"?, "steps"?, "seed"?, "speed"?, "format"?: "wav"|"json"}
    GET  /synthesize?text=...&voice=...                          (the same fields as a query string)

``format=wav`` answers ``audio/wav`` (16-bit PCM) with the report summary in ``X-Audiopd-Report``;
``format=json`` answers {"report", "sample_rate", "audio_wav_base64"}. Errors are JSON
{"error": "<one line>"}: 400 bad input (AudiopdError included), 404, 405, 411, 413 (text over
max_chars or body over max_body_bytes), 500 for bugs (logged with their traceback; the server lives on).

Requests are handled in threads, but synthesis runs under one lock: the model and the checker's
PocketSphinx decoders are not thread-safe, so concurrent requests queue rather than corrupt each other.
"""

from __future__ import annotations

import base64
import json
import logging
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

from audiopd import __version__
from audiopd.errors import AudiopdError
from audiopd.serve.request import (
    DEFAULT_HOST,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CHARS,
    DEFAULT_PORT,
    REPORT_HEADER,
    RequestError,
    SynthesisRequest,
    build_request,
    parse_json_body,
    parse_query,
    plain,
    report_header,
    wav_bytes,
)

if TYPE_CHECKING:
    from audiopd.pipeline import Synthesizer

logger = logging.getLogger("audiopd.serve")

# path -> methods it answers; anything else on a known path is 405 with an Allow header.
ROUTES: dict[str, tuple[str, ...]] = {"/health": ("GET",), "/voices": ("GET",), "/synthesize": ("GET", "POST")}
QUEUE_HEADER = "X-Audiopd-Queue-Seconds"
# A refused body up to this size is read and dropped so the error reaches the client (see _drain_body).
DRAIN_LIMIT_BYTES = 64 << 20


class AudiopdServer(ThreadingHTTPServer):
    """A threading HTTP server holding one Synthesizer and the lock that serialises its use."""

    # Request threads must not keep the process alive after Ctrl-C (an in-flight synthesis is abandoned).
    daemon_threads = True

    def __init__(self, address: tuple[str, int], synth: Synthesizer, *, max_chars: int = DEFAULT_MAX_CHARS,
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, voice_name: str = "default",
                 speaker: str | None = None) -> None:
        if ":" in address[0]:  # an IPv6 literal such as "::1" or "::"
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.synth = synth
        self.lock = threading.Lock()
        self.max_chars = max_chars
        self.max_body_bytes = max_body_bytes
        self.voice_name = voice_name
        self.speaker = speaker

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        host = str(self.server_address[0])
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}/"


def make_server(synth: Synthesizer, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                max_chars: int = DEFAULT_MAX_CHARS, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                voice_name: str = "default", speaker: str | None = None) -> AudiopdServer:
    """Bind a server for ``synth`` on ``host:port`` (port 0: any free port, see ``server.port``).

    ``speaker`` is the speaker used when a request names none (None: the voice's first). The server
    is bound but not yet serving: call ``serve_forever`` (in a thread for tests) or ``run_server``.
    """
    if max_chars < 1 or max_body_bytes < 1:
        raise ValueError("max_chars and max_body_bytes must be positive")
    if speaker is not None and speaker not in synth.voices:
        raise AudiopdError(f"unknown speaker {speaker!r} (available: {', '.join(synth.voices) or 'none'})")
    try:
        return AudiopdServer((host, port), synth, max_chars=max_chars, max_body_bytes=max_body_bytes,
                             voice_name=voice_name, speaker=speaker)
    except OSError as exc:  # port in use, no such address, permission denied
        raise AudiopdError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def voice_label(spec: str | None, speaker: str | None) -> str:
    """The voice artifact a CLI ``--voice`` spec loaded (see audiopd.cli._load_voice), for /health."""
    if spec is None or spec == speaker:  # nothing, or a speaker of the default voice
        return "default"
    if speaker is not None:  # VOICE:SPEAKER
        spec = spec[: -len(speaker) - 1] or "default"
    return Path(spec).name or spec


def run_server(server: AudiopdServer, *, out: TextIO | None = None) -> int:
    """Serve until Ctrl-C or SIGTERM, then close the socket; returns exit code 0."""
    out = out or sys.stdout
    if not logger.handlers:  # access and error log on stderr, unless the embedding program set one up
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    synth = server.synth
    speaker = server.speaker or (synth.voices[0] if synth.voices else "-")
    # `kill PID` and service managers send SIGTERM: shut down as cleanly as on Ctrl-C. SIGINT gets the same handler
    # explicitly: Python only installs its own when the parent left SIGINT at the default, and a server started
    # from a background job inherits it ignored. Installed before the "serving at" line, which callers take as
    # the sign of readiness: a signal sent right after it must find the handlers in place.
    in_main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGINT)} if in_main else {}
    try:
        print(f"audiopd {__version__}: voice {server.voice_name} (speakers {', '.join(synth.voices)}; default "
              f"{speaker}), {synth.sample_rate} Hz, serving at {server.url}  (Ctrl-C to stop)", file=out, flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        print("audiopd: shutting down", file=out, flush=True)
    finally:
        server.server_close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _one_line(message: str) -> str:
    return " ".join(message.split()) or "unknown error"


class Handler(BaseHTTPRequestHandler):
    server: AudiopdServer
    server_version = f"audiopd/{__version__}"
    # Socket timeout for reading a request: a stalled client cannot hold a thread forever.
    timeout = 60

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_OPTIONS(self) -> None:
        self._dispatch("OPTIONS")

    # ------------------------------------------------------------------------------------ dispatch
    def _dispatch(self, method: str) -> None:
        self._started = False
        self._body_read = False
        try:
            url = urlsplit(self.path)
            path = url.path.rstrip("/") or "/"
            allowed = ROUTES.get(path)
            if allowed is None:
                raise RequestError(404, f"no such path {url.path!r}: try /health, /voices or /synthesize")
            if method not in allowed:
                self._error(405, f"{method} is not allowed on {path}; use {' or '.join(allowed)}",
                            {"Allow": ", ".join(allowed)})
                return
            if path == "/health":
                self._health()
            elif path == "/voices":
                self._send_json(200, list(self.server.synth.voices))
            else:
                fields = parse_query(url.query) if method == "GET" else parse_json_body(self._read_body())
                req = build_request(fields, voices=self.server.synth.voices, max_chars=self.server.max_chars)
                self._synthesize(req)
        except RequestError as exc:
            self._error(exc.status, exc.message)
        except AudiopdError as exc:  # caused by the input: nothing speakable, an option out of range
            self._error(400, _one_line(str(exc)))
        except TimeoutError:
            self.close_connection = True
            self._error(408, "timed out reading the request")
        except (BrokenPipeError, ConnectionResetError):
            logger.info("%s: client disconnected before the response was sent", self.address_string())
        except Exception as exc:  # a bug: log it with its traceback, answer 500, keep serving
            logger.exception("internal error handling %s %s", method, self.path)
            self._error(500, f"internal server error ({type(exc).__name__}); see the server log")

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raise RequestError(411, "chunked request bodies are not supported: send Content-Length")
        length = self.headers.get("Content-Length")
        if length is None:
            raise RequestError(411, "a POST needs a Content-Length header")
        try:
            n = int(length)
        except ValueError:
            n = -1
        if n < 0:
            raise RequestError(400, f"bad Content-Length {length!r}")
        if n > self.server.max_body_bytes:
            raise RequestError(413, f"request body of {n} bytes exceeds the limit of {self.server.max_body_bytes}")
        self._body_read = True
        body = self.rfile.read(n)
        if len(body) != n:
            self.close_connection = True
            raise RequestError(400, f"request body ended after {len(body)} of {n} bytes")
        return body

    # ------------------------------------------------------------------------------------ endpoints
    def _health(self) -> None:
        synth = self.server.synth
        self._send_json(200, {"status": "ok", "voice": self.server.voice_name,
                              "speaker": self.server.speaker or (synth.voices[0] if synth.voices else None),
                              "sample_rate": synth.sample_rate, "version": __version__})

    def _synthesize(self, req: SynthesisRequest) -> None:
        srv = self.server
        t_arrive = time.perf_counter()
        with srv.lock:
            queued = time.perf_counter() - t_arrive
            result = srv.synth.synthesize(req.text, voice=req.voice or srv.speaker, mode=req.mode,
                                          steps=req.steps, seed=req.seed, speed=req.speed)
        report = result.report
        check = report.get("check") or {}
        logger.info("synthesized %d chars: %s, %.2f s audio in %.2f s (queued %.2f s), check %s",
                    len(req.text), report.get("mode"), report.get("audio_seconds", 0.0),
                    report.get("wall_seconds", 0.0), queued, check.get("passed", "off"))
        wav = wav_bytes(result.audio, result.sample_rate)
        extra = {QUEUE_HEADER: f"{queued:.3f}"}
        if req.format == "json":
            self._send_json(200, {"report": plain(report), "sample_rate": int(result.sample_rate),
                                  "audio_wav_base64": base64.b64encode(wav).decode("ascii")}, extra)
        else:
            self._send(200, wav, "audio/wav", {REPORT_HEADER: report_header(report), **extra})

    # ------------------------------------------------------------------------------------ responses
    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self._started = True
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        body = (json.dumps(obj, separators=(",", ":")) + "\n").encode("utf-8")
        self._send(status, body, "application/json", headers)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        if self._started:  # headers already went out: nothing sensible left to send
            self.close_connection = True
            return
        try:
            self._drain_body()
            self._send_json(status, {"error": message}, headers)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True

    def _drain_body(self) -> None:
        """Read and drop a body the request was refused before reading (404, 405, 413).

        Closing a socket with unread input makes the kernel answer with a TCP reset, which can destroy
        the error response before the client reads it; so a body of sane size is consumed first.
        """
        if self._body_read:
            return
        self._body_read = True
        try:
            left = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return
        if left > DRAIN_LIMIT_BYTES:
            return
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 16))
            if not chunk:
                break
            left -= len(chunk)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (BaseHTTPRequestHandler's name)
        logger.info("%s %s", self.address_string(), format % args)
