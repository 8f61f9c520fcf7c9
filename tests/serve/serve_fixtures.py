"""HTTP server test helpers: a tiny Synthesizer, the server on port 0 in a thread, and a urllib client.

The voice is the randomly initialised tiny VoiceModel of tests/voice_fixtures.py (duration predictor
pinned to 5 frames per token) on the fixture codec, with a checker stub so auto mode runs its check
without loading PocketSphinx.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

import pytest
from voice_fixtures import tiny_voice

from audiopd.codec.fixture import make_fixture_codec
from audiopd.pipeline import Synthesizer
from audiopd.serve.app import ServeConfig
from audiopd.serve.engine import EngineConfig
from audiopd.serve.server import BackgroundServer

SR = 16000
TEXT = "Hello there, how are you?"
VOICES = ("alice", "bob")


def passing_checker(audio, sample_rate, text, **kw) -> dict[str, Any]:
    return {"passed": True, "score": 0.9, "reasons": [], "bad_spans": []}


@pytest.fixture
def synth() -> Synthesizer:
    tts = Synthesizer(tiny_voice(VOICES), make_fixture_codec())
    tts.checker = passing_checker
    return tts


@pytest.fixture
def start_server(synth) -> Iterator[Callable[..., BackgroundServer]]:
    """Factory: ``start_server(speaker=..., synth=..., **ServeConfig fields, engine=EngineConfig(...))``."""
    started: list[BackgroundServer] = []

    def start(*, speaker: str | None = None, **kwargs: Any) -> BackgroundServer:
        tts = kwargs.pop("synth", synth)
        server = BackgroundServer(tts, ServeConfig(**kwargs), speaker=speaker)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def server(start_server) -> BackgroundServer:
    return start_server()


def engine(**kwargs: Any) -> EngineConfig:
    return EngineConfig(**kwargs)


@dataclass
class Reply:
    status: int
    headers: Message
    body: bytes = field(repr=False)

    def json(self) -> Any:
        assert self.headers.get_content_type() == "application/json", self.headers
        return json.loads(self.body)


def request(server: BackgroundServer, path: str, *, method: str | None = None, body: bytes | None = None,
            payload: Any = None, headers: dict[str, str] | None = None) -> Reply:
    """One HTTP request with urllib; HTTP errors are returned as replies, not raised."""
    if payload is not None:
        body = json.dumps(payload).encode("utf-8")
    req = urllib.request.Request(server.url.rstrip("/") + path, data=body, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return Reply(resp.status, resp.headers, resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return Reply(err.code, err.headers, err.read())
