"""``audiopd serve``: the ASGI app (Starlette) over the facade.

    GET  /                  the page: text, voice, mode, K, speed, play, verdict, words highlighted as spoken
    GET  /health /healthz   status (503 {"status": "loading"} until the voice is loaded)
    GET  /voices            ["slt", ...]                        GET /v1/voices  {"voices": [{"id": ...}]}
    GET  /v1/models         OpenAI's model list                 GET /metrics    Prometheus text
    POST /synthesize        {"text", "voice"?, "mode"?, "steps"?, "seed"?, "speed"?, "format"?: "wav"|"json"}
    POST /v1/audio/speech   OpenAI's request (audiopd.serve.openai_api)

GET /synthesize is gone: any page the user visited could make the server work with an <img> tag.
Every synthesis answer names its verdict (``X-Audiopd-Verdict``: passed | failed | unchecked) and the
path that made the delivered audio (``X-Audiopd-Path``: parallel | serial | mixed). A streamed answer
sends its headers once the first sentence is decoded (and checked, in auto mode), so there they hold
that sentence's (``X-Audiopd-Verdict-Scope: first-sentence``); SSE events carry every sentence's.
Errors are JSON ``{"error": "<one line>"}`` (OpenAI's shape under /v1): 400 bad input, 403 foreign
Host/Origin, 404, 405, 408, 413, 415, 429 busy (refused at once: the work queued ahead would not let the
request finish within its time budget; ``Retry-After`` says when to retry), 503 loading or time budget
spent after admission, 500 for bugs. Every synthesis answer names its budget (``X-Audiopd-Time-Budget``).

Whole answers carry a WAV with its true length (/synthesize, and /v1/audio/speech's wav); only SSE streams
WAV, its first delta starting with a header of unknown length (sizes 0xFFFFFFFF); pcm streams headerless.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from audiopd import __version__
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.errors import AudiopdError
from audiopd.serve import openai_api as oai
from audiopd.serve.admission import Busy
from audiopd.serve.engine import BudgetExhausted, Cancelled, Engine, EngineConfig, Job, Piece, merge
from audiopd.serve.engine import verdict_of
from audiopd.serve.guard import Guard, body_unread, escape, read_body, require_json
from audiopd.serve.metrics import Metrics
from audiopd.serve.request import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CHARS,
    REPORT_HEADER,
    RequestError,
    build_request,
    compact_report,
    parse_json_body,
    plain,
    report_header,
    wav_bytes,
)

if TYPE_CHECKING:
    from audiopd.pipeline import Synthesizer

logger = logging.getLogger("audiopd.serve")
STATIC = Path(__file__).with_name("static")


@dataclass(frozen=True)
class ServeConfig:
    max_chars: int = DEFAULT_MAX_CHARS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    body_timeout_s: float = 10.0  # the whole body must arrive within this
    head_timeout_s: float = 10.0  # each request head must arrive within this (guard.GuardedH11Protocol)
    max_connections: int = 64  # uvicorn's limit_concurrency: one more connection is answered 503
    engine: EngineConfig = field(default_factory=EngineConfig)
    allow_hosts: tuple[str, ...] = ()  # extra Host values; ("*",) turns the Host check off
    allow_origins: tuple[str, ...] = ()  # extra Origin values besides the server's own

    def validate(self) -> None:
        if self.max_chars < 1 or self.max_body_bytes < 1 or self.max_connections < 1:
            raise ValueError("max_chars, max_body_bytes and max_connections must be positive")
        if not (self.body_timeout_s > 0 and self.head_timeout_s > 0):
            raise ValueError("body_timeout_s and head_timeout_s must be > 0")
        self.engine.validate()


class ServerState:
    """What the routes share; ``engine`` is None until the voice is loaded (``ready``)."""

    def __init__(self, config: ServeConfig | None = None, *, voice_name: str = DEFAULT_VOICE) -> None:
        self.config = config or ServeConfig()
        self.config.validate()
        self.voice_name = voice_name
        self.metrics = Metrics()
        self.engine: Engine | None = None
        self.formats: tuple[str, ...] = ()

    def ready(self, synth: Synthesizer, speaker: str | None = None) -> None:
        if speaker is not None and speaker not in synth.voices:
            raise AudiopdError(f"unknown speaker {speaker!r} (available: {', '.join(synth.voices) or 'none'})")
        self.formats = oai.available_formats(synth.sample_rate)
        self.engine = Engine(synth, self.config.engine, speaker=speaker or (synth.voices[0] if synth.voices
                                                                            else None), metrics=self.metrics)
        self.metrics.loaded.set(1)


# ---------------------------------------------------------------------------------------- app
def create_app(state: ServerState, *, hosts: frozenset[str] | None, origins: frozenset[str] | None = None) -> Any:
    """The ASGI app: Starlette routes behind the Host/Origin guard. ``hosts`` None: any Host."""
    routes = [
        Route("/", _page), Route("/health", _health), Route("/healthz", _healthz), Route("/voices", _voices),
        Route("/metrics", _metrics), Route("/synthesize", _synthesize, methods=["POST"]),
        Route("/v1/models", _models), Route("/v1/voices", _v1_voices),
        Route("/v1/audio/speech", _speech, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error, Exception: _bug})
    app.state.audiopd = state
    extra_origins = frozenset(o.lower().rstrip("/") for o in state.config.allow_origins)
    if hosts is not None and origins is None:
        origins = frozenset(f"http://{h}" for h in hosts) | extra_origins
    return Guard(app, hosts=hosts, origins=origins, metrics=state.metrics)


def _state(request: Request) -> ServerState:
    return request.app.state.audiopd


def _engine(request: Request) -> Engine:
    engine = _state(request).engine
    if engine is None:
        raise RequestError(503, "the voice is still loading; retry in a few seconds")
    return engine


async def _http_error(request: Request, exc: HTTPException) -> Response:
    headers = dict(exc.headers or {})
    if "Allow" in headers:  # Starlette builds it from a set: sorted, so it reads the same on every run
        headers["Allow"] = ", ".join(sorted(m.strip() for m in headers["Allow"].split(",")))
    allow = headers.get("Allow", "")
    message = {404: f"no such path {escape(request.url.path, 80)!r}",
               405: f"{request.method} is not allowed on {request.url.path}; use {allow}" + (
                   " with a JSON body (GET was removed: any web page could make the server work)"
                   if request.url.path == "/synthesize" else "")}.get(exc.status_code, str(exc.detail))
    return _error(request, exc.status_code, message, headers)


async def _bug(request: Request, exc: Exception) -> Response:
    logger.error("internal error on %s %s: %s", request.method, escape(request.url.path), escape(repr(exc)),
                 exc_info=exc)
    return _error(request, 500, f"internal server error ({type(exc).__name__}); see the server log")


def _error(request: Request, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    message = " ".join(message.split()) or "unknown error"
    headers = dict(headers or {})
    if status in (429, 503):
        headers.setdefault("Retry-After", "1" if status == 429 else "5")
    if body_unread(request):
        headers["Connection"] = "close"
    body = oai.openai_error(status, message) if request.url.path.startswith("/v1/") else {"error": message}
    return JSONResponse(body, status, headers=headers)


def _guarded(handler: Any) -> Any:
    """Map the refusals a synthesis route raises to their status codes."""

    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except RequestError as exc:
            return _error(request, exc.status, exc.message)
        except Busy as exc:
            _state(request).metrics.refused.labels(exc.reason).inc()
            return _error(request, 429, str(exc), {"Retry-After": str(exc.retry_after_s)})
        except BudgetExhausted as exc:
            _state(request).metrics.refused.labels("time_budget").inc()
            return _error(request, 503, str(exc))
        except Cancelled:
            return Response(status_code=499)  # nobody is listening; logged as 499
        except AudiopdError as exc:  # caused by the input: nothing speakable, an option out of range
            return _error(request, 400, str(exc))

    return run


# ---------------------------------------------------------------------------------------- plain routes
async def _page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


async def _healthz(request: Request) -> Response:
    loaded = _state(request).engine is not None
    return JSONResponse({"status": "ok" if loaded else "loading"}, 200 if loaded else 503)


async def _health(request: Request) -> Response:
    state = _state(request)
    if state.engine is None:
        return JSONResponse({"status": "loading", "version": __version__}, 503)
    synth = state.engine.synth
    return JSONResponse({"status": "ok", "voice": state.voice_name, "speaker": state.engine.speaker,
                         "sample_rate": synth.sample_rate, "version": __version__,
                         "formats": list(state.formats), "modes": ["auto", "parallel", "serial"],
                         "admitted": state.engine.admitted, "queued_work_s": round(state.engine.queued_work_s(), 3),
                         "cost_estimates": state.engine.costs.snapshot()})


@_guarded
async def _voices(request: Request) -> Response:
    return JSONResponse(list(_engine(request).synth.voices))


@_guarded
async def _v1_voices(request: Request) -> Response:
    engine = _engine(request)
    return JSONResponse({"voices": [{"id": v, "name": v} for v in engine.synth.voices], "default": engine.speaker,
                         "openai_aliases": {v: engine.speaker for v in oai.OPENAI_VOICES}})


async def _models(request: Request) -> Response:
    data = [{"id": m, "object": "model", "created": 0, "owned_by": "audiopd"}
            for m in (oai.MODEL_ID, *oai.MODEL_ALIASES)]
    return JSONResponse({"object": "list", "data": data})


async def _metrics(request: Request) -> Response:
    return Response(_state(request).metrics.render(), headers={"Content-Type": _state(request).metrics.content_type})


# ---------------------------------------------------------------------------------------- synthesis
async def _json_fields(request: Request) -> dict[str, Any]:
    require_json(request.headers)
    cfg = _state(request).config
    return parse_json_body(await read_body(request, limit=cfg.max_body_bytes, timeout_s=cfg.body_timeout_s))


async def _watch_disconnect(request: Request, job: Job) -> None:
    """Set the job's cancel flag when the client goes away (the body has been read: only a disconnect is left)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            job.cancel.set()
            return


async def _speak_all(request: Request, engine: Engine, job: Job) -> tuple[Any, list, dict[str, Any]]:
    watcher = asyncio.create_task(_watch_disconnect(request, job))
    try:
        pieces = [p async for p in engine.pieces(job)]
    finally:
        watcher.cancel()
    return merge(pieces, job=job, sample_rate=engine.synth.sample_rate, wall_s=time.perf_counter() - job.arrived)


def _headers(report: dict[str, Any], job: Job, sample_rate: int, scope: str) -> dict[str, str]:
    return {"X-Audiopd-Verdict": verdict_of(report), "X-Audiopd-Path": str(report.get("mode")),
            "X-Audiopd-First-Path": str(report.get("first_path")), "X-Audiopd-Verdict-Scope": scope,
            "X-Audiopd-Voice": str(report.get("voice")), "X-Audiopd-Seed": str(job.seed),
            "X-Audiopd-Sample-Rate": str(sample_rate), "X-Audiopd-Time-Budget": f"{job.budget_s:.1f}",
            REPORT_HEADER: report_header(report)}


def _words(words: list) -> list[dict[str, Any]]:
    return [{"word": w.word, "start_s": round(w.start_s, 4), "end_s": round(w.end_s, 4)} for w in words]


@_guarded
async def _synthesize(request: Request) -> Response:
    fields = await _json_fields(request)
    engine = _engine(request)
    req = build_request(fields, voices=engine.synth.voices, max_chars=_state(request).config.max_chars)
    job = engine.admit(req)
    try:
        audio, words, report = await _speak_all(request, engine, job)
    finally:
        engine.release(job)
    _log_done(job, report)
    rate = engine.synth.sample_rate
    headers = _headers(report, job, rate, "text")
    wav = wav_bytes(audio, rate)
    if req.format == "json":
        return JSONResponse({"report": plain(report), "sample_rate": rate, "words": _words(words),
                             "audio_wav_base64": base64.b64encode(wav).decode("ascii")}, headers=headers)
    return Response(wav, media_type="audio/wav", headers=headers)


@_guarded
async def _speech(request: Request) -> Response:
    fields = await _json_fields(request)
    state = _state(request)
    engine = _engine(request)
    speech = oai.build_speech_request(fields, voices=engine.synth.voices, default_voice=engine.speaker,
                                      max_chars=state.config.max_chars, formats=state.formats)
    job = engine.admit(speech.synthesis)
    rate = engine.synth.sample_rate
    if speech.response_format not in oai.STREAMED and speech.stream_format != "sse":
        try:
            audio, _, report = await _speak_all(request, engine, job)
        finally:
            engine.release(job)
        _log_done(job, report)
        body = oai.encode(audio, rate, speech.response_format)
        return Response(body, media_type=oai.CONTENT_TYPES[speech.response_format],
                        headers=_headers(report, job, rate, "text"))
    pieces = engine.pieces(job)
    watcher = asyncio.create_task(_watch_disconnect(request, job))
    try:
        first = await anext(pieces)  # decoded (and checked, in auto mode) before the headers go out
        state.metrics.first_audio.observe(time.perf_counter() - job.arrived)
        out_rate = oai.PCM_RATE if speech.response_format == "pcm" else rate
        headers = _headers(first.report, job, out_rate, "first-sentence" if len(job.pieces) > 1 else "text")
        encode = _sse_events if speech.stream_format == "sse" else _audio_bytes
        media = "text/event-stream" if speech.stream_format == "sse" else oai.CONTENT_TYPES[speech.response_format]
        body = encode(first, pieces, job, speech.response_format, rate)
        return _JobStream(body, media_type=media, headers=headers, on_close=lambda: engine.release(job))
    except BaseException:  # the stream never started: nothing else will release the job
        engine.release(job)
        raise
    finally:
        watcher.cancel()


class _JobStream(StreamingResponse):
    """A streamed answer that releases its job however the stream ends (done, failed, client gone)."""

    def __init__(self, *args: Any, on_close: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_close = on_close

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()


async def _rest(first: Piece, pieces: Any, job: Job) -> Any:
    """The first piece, then the others; a spent budget ends the stream (what was sent stands)."""
    yield first
    done = [first]
    try:
        async for piece in pieces:
            done.append(piece)
            yield piece
    except BudgetExhausted as exc:
        logger.info("stream ended early: %s", exc)
        yield exc
        return
    except Cancelled:
        return
    finally:
        job.cancel.set()
    logger.info("streamed %d sentences, %d chars: verdicts %s", len(done), len(job.req.text),
                ",".join(p.verdict for p in done))


async def _audio_bytes(first: Piece, pieces: Any, job: Job, fmt: str, rate: int) -> Any:
    """Headerless pcm at OpenAI's 24 kHz (the one format streamed as raw bytes)."""
    async for piece in _rest(first, pieces, job):
        if isinstance(piece, Piece):
            yield oai.pcm16(oai.to_pcm_rate(piece.audio, rate))


async def _sse_events(first: Piece, pieces: Any, job: Job, fmt: str, rate: int) -> Any:
    def event(obj: dict[str, Any]) -> bytes:
        return f"data: {json.dumps(plain(obj), separators=(',', ':'))}\n\n".encode()

    header = oai.streaming_wav_header(rate) if fmt == "wav" else b""
    sent, pos = 0, 0.0
    async for piece in _rest(first, pieces, job):
        if isinstance(piece, BudgetExhausted):
            yield event({"type": "error", "error": {"message": str(piece), "code": "time_budget"}})
            return
        audio = oai.to_pcm_rate(piece.audio, rate) if fmt == "pcm" else piece.audio
        yield event({"type": "speech.audio.delta", "audio": base64.b64encode(header + oai.pcm16(audio)).decode(),
                     "sentence": piece.index, "text": piece.text, "verdict": piece.verdict,
                     "path": piece.report.get("mode"),
                     "words": _words([type(w)(w.word, w.start_s + pos, w.end_s + pos) for w in piece.words])})
        header = b""
        sent += 1
        pos += piece.audio.size / rate
    yield event({"type": "speech.audio.done", "sentences": sent,
                 "usage": {"input_tokens": len(job.req.text), "output_tokens": 0, "total_tokens": len(job.req.text)}})


def _log_done(job: Job, report: dict[str, Any]) -> None:
    logger.info("synthesized %d chars in %d sentences: %s, %.2f s audio in %.2f s, verdict %s",
                len(job.req.text), report["chunks"], report["mode"], report["audio_seconds"],
                report["wall_seconds"], verdict_of(report))


__all__ = ["ServeConfig", "ServerState", "compact_report", "create_app"]
