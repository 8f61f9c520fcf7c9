"""HTTP server test helpers: a tiny Synthesizer, a server on port 0 in a thread, and a urllib client.

The voice is the randomly initialised tiny VoiceModel of tests/voice_fixtures.py (duration predictor
pinned to 5 frames per token) on the fixture codec, with a checker stub so auto mode runs its check
without loading PocketSphinx.
"""

from __future__ import annotations

import json
import threading
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
from audiopd.serve.app import AudiopdServer, make_server

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
def start_server(synth) -> Iterator[Callable[..., AudiopdServer]]:
    """Factory: ``start_server(**make_server_kwargs)`` -> a serving AudiopdServer on 127.0.0.1:<free port>."""
    started: list[tuple[AudiopdServer, threading.Thread]] = []

    def start(**kwargs: Any) -> AudiopdServer:
        server = make_server(kwargs.pop("synth", synth), "127.0.0.1", 0, **kwargs)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        started.append((server, thread))
        return server

    yield start
    for server, thread in started:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def server(start_server) -> AudiopdServer:
    return start_server()


@dataclass
class Reply:
    status: int
    headers: Message
    body: bytes = field(repr=False)

    def json(self) -> Any:
        assert self.headers.get_content_type() == "application/json", self.headers
        return json.loads(self.body)


def request(server: AudiopdServer, path: str, *, method: str | None = None, body: bytes | None = None,
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
