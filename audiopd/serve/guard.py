"""What stands between the network and the synthesizer: Host/Origin checks, body limits, timeouts, safe logs.

A server on 127.0.0.1 is still reachable from every web page the user opens: the page can POST to it
(a "simple" cross-site request needs no CORS preflight) and, by DNS rebinding, even read the answers
under a hostname of its own. So (OWASP, "DNS rebinding"; Fetch standard, CORS-safelisted requests):

* the Host header must name this server (127.0.0.1:PORT, localhost:PORT, or a configured name): a
  rebinding page sends its own hostname;
* an Origin header, when present, must be this server's own origin (or a configured one), and a
  ``Sec-Fetch-Site: cross-site`` request is refused: browsers send both, other clients neither;
* JSON POSTs must say ``Content-Type: application/json``, which a page cannot send cross-site without a
  CORS preflight that this server never answers.

uvicorn has no timeout for a request head that trickles in a byte at a time; GuardedH11Protocol closes
a connection whose next request head has not arrived within ``head_timeout_s``, and read_body bounds
the body's size and the time to read it. Every log line goes through ``escape`` (no raw control
characters reach a terminal).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from audiopd.serve.request import RequestError

logger = logging.getLogger("audiopd.serve")
# Request heads: 16 KiB in all (as uvicorn's h11 default for a head in pieces), at most 100 header lines.
MAX_HEADER_BYTES = 16 * 1024
MAX_HEADERS = 100


def escape(text: Any, limit: int = 300) -> str:
    """Printable text for a log line: control and format characters as \\xNN / \\uNNNN, cut to ``limit``."""
    s = str(text)
    out = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s[:limit])
    return out + ("..." if len(s) > limit else "")


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """Host header values this server answers: its address and localhost at its port, plus ``extra``."""
    names = {host, "localhost", "127.0.0.1"} if host in ("127.0.0.1", "0.0.0.0", "localhost") else {host}
    if ":" in host:  # IPv6 literal
        names = {f"[{host}]", "localhost", "[::1]"} if host in ("::1", "::") else {f"[{host}]"}
    hosts = {f"{n}:{port}" for n in names} | ({n for n in names} if port == 80 else set())
    return frozenset(h.lower() for h in (*hosts, *extra))


class Guard:
    """ASGI middleware: Host / Origin / Sec-Fetch-Site checks, then an escaped access log and metrics."""

    def __init__(self, app: Any, *, hosts: frozenset[str] | None, origins: frozenset[str] | None,
                 metrics: Any = None) -> None:
        self.app = app
        self.hosts = hosts  # None: any Host (only with an explicit --allow-host '*')
        self.origins = origins if origins is not None else frozenset(f"http://{h}" for h in hosts or ())
        self.metrics = metrics

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = {"code": 0, "bytes": 0}

        async def send_logged(message: dict) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            elif message["type"] == "http.response.body":
                status["bytes"] += len(message.get("body", b""))
            await send(message)

        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        size = sum(len(k) + len(v) + 4 for k, v in scope["headers"])
        status_code, problem = 403, self._refusal(headers)
        if size > MAX_HEADER_BYTES or len(scope["headers"]) > MAX_HEADERS:
            # h11 bounds only a head that arrives in pieces; one that arrives whole is bounded here.
            status_code, problem = 431, (f"request headers too large ({len(scope['headers'])} headers, {size} "
                                         f"bytes; the limits are {MAX_HEADERS} and {MAX_HEADER_BYTES})")
        try:
            if problem:
                await _send_json(send_logged, status_code, {"error": problem})
            else:
                await self.app(scope, receive, send_logged)
        finally:
            seconds = time.perf_counter() - t0
            client = scope.get("client") or ("-", 0)
            query = scope.get("query_string", b"").decode("latin-1")
            target = scope["path"] + ("?" + query if query else "")
            logger.info("%s \"%s %s\" %s %d B %.3f s%s", escape(client[0]), escape(scope["method"], 20),
                        escape(target), status["code"] or "-", status["bytes"], seconds,
                        f" refused: {escape(problem)}" if problem else "")
            if self.metrics is not None:
                self.metrics.observe_request(scope["path"], status["code"] or 499, seconds)

    def _refusal(self, headers: dict[str, str]) -> str | None:
        host = headers.get("host", "").lower()
        if self.hosts is not None and host not in self.hosts:
            return (f"Host {host[:80]!r} is not this server's (allowed: {', '.join(sorted(self.hosts))}); "
                    "start the server with --allow-host to add one")
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return f"cross-origin requests are refused (Origin {origin[:80]!r}); see --allow-origin"
        if headers.get("sec-fetch-site") == "cross-site" and origin is None:
            return "cross-site requests are refused (Sec-Fetch-Site: cross-site)"
        return None


async def _send_json(send: Any, status: int, obj: Any) -> None:
    """An answer before the request body was read, so ``Connection: close`` (body_unread says why)."""
    import json

    body = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def body_unread(request: Any) -> bool:
    """Whether an answer now would leave a request body unread. Such an answer must say ``Connection: close``
    (RFC 9112, 9.6): h11 cannot reuse the connection and closes it, and a pooling client (httpx) that was not told
    sends its next request down it and gets a transport error (seen once in the load test's CI run)."""
    return request.method in ("POST", "PUT", "PATCH") and not getattr(request.state, "body_read", False)


def require_json(headers: Any) -> None:
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise RequestError(415, f"send the request body as Content-Type: application/json (got {ctype[:60]!r})")


async def read_body(request: Any, *, limit: int, timeout_s: float) -> bytes:
    """The request body, at most ``limit`` bytes (413) read within ``timeout_s`` seconds (408)."""
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isdigit() or len(length) > 18:
            raise RequestError(400, f"bad Content-Length {length[:30]!r}")
        if int(length) > limit:
            raise RequestError(413, f"request body of {length} bytes exceeds the limit of {limit}")

    async def collect() -> bytes:
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise RequestError(413, f"request body exceeds the limit of {limit} bytes")
        return bytes(body)

    try:
        body = await asyncio.wait_for(collect(), timeout_s)
        request.state.body_read = True
        return body
    except TimeoutError:
        raise RequestError(408, f"the request body did not arrive within {timeout_s:g} s") from None


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol plus a deadline for each request head (see the module doc)."""

    head_timeout_s = 10.0

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_head_timer()

    def _arm_head_timer(self) -> None:
        self.loop.call_later(self.head_timeout_s, self._head_timeout, self.cycle)

    def _head_timeout(self, cycle: Any) -> None:
        # No new request head since the timer was armed (a new head makes a new cycle): drop the connection.
        if self.cycle is cycle and not self.transport.is_closing():
            logger.info("%s: closed a connection whose request head did not arrive within %g s",
                        escape(self.client[0] if self.client else "-"), self.head_timeout_s)
            self.transport.close()


def protocol_with(head_timeout_s: float) -> type[GuardedH11Protocol]:
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"head_timeout_s": float(head_timeout_s)})
