"""The HTTP server end to end over real sockets: endpoints, audio, reports, every error status, locking."""

from __future__ import annotations

import base64
import http.client
import io
import json
import threading
import time

import numpy as np
import pytest
import soundfile as sf
from serve_fixtures import SR, TEXT, request
from voice_fixtures import expected_samples

import audiopd
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.errors import AudiopdError
from audiopd.serve.request import REPORT_HEADER
from audiopd.serve.server import BackgroundServer

SUMMARY_KEYS = {"mode", "steps", "forward_passes", "audio_seconds", "wall_seconds", "check", "decoder"}


def _wav(body: bytes) -> tuple[np.ndarray, int, str]:
    assert body[:4] == b"RIFF" and body[8:12] == b"WAVE"
    info = sf.info(io.BytesIO(body))
    audio, rate = sf.read(io.BytesIO(body), dtype="float32")
    return audio, rate, info.subtype


def _error(reply, status: int, needle: str = "") -> str:
    assert reply.status == status, (reply.status, reply.body)
    message = reply.json()["error"]
    assert isinstance(message, str) and message and "\n" not in message and needle in message, message
    return message


# ------------------------------------------------------------------------------------------ GET
def test_health_reports_voice_rate_and_version(server) -> None:
    reply = request(server, "/health")
    assert reply.status == 200
    health = reply.json()
    assert {k: health[k] for k in ("status", "voice", "speaker", "sample_rate", "version")} == {
        "status": "ok", "voice": DEFAULT_VOICE, "speaker": "alice", "sample_rate": SR, "version": audiopd.__version__}
    assert {"wav", "pcm", "flac"} <= set(health["formats"])


def test_voices_lists_the_speakers(server) -> None:
    reply = request(server, "/voices")
    assert reply.status == 200 and reply.json() == ["alice", "bob"]


# ------------------------------------------------------------------------------------ synthesis
def test_post_wav_returns_16bit_audio_and_a_report_header(server) -> None:
    reply = request(server, "/synthesize", payload={"text": TEXT, "seed": 3})
    assert reply.status == 200 and reply.headers.get_content_type() == "audio/wav"
    audio, rate, subtype = _wav(reply.body)
    assert rate == SR and subtype == "PCM_16"
    assert audio.size == expected_samples(TEXT) and np.abs(audio).max() > 0
    report = json.loads(reply.headers[REPORT_HEADER])
    assert SUMMARY_KEYS <= set(report) and "attempts" not in report
    assert report["requested_mode"] == "auto" and report["seed"] == 3 and report["voice"] == "alice"
    assert report["audio_seconds"] == pytest.approx(audio.size / SR)
    assert report["forward_passes"] > 0 and report["wall_seconds"] > 0
    # Auto mode checked the output (the stub passes it), so the header carries the verdict.
    assert report["check"] == {"passed": True, "score": 0.9, "reasons": []}


def test_json_format_carries_the_same_audio_as_wav_for_a_fixed_seed(server) -> None:
    fields = {"text": TEXT, "mode": "parallel", "steps": 4, "seed": 11}
    wav = request(server, "/synthesize", payload=fields)
    reply = request(server, "/synthesize", payload={**fields, "format": "json"})
    assert wav.status == reply.status == 200
    data = reply.json()
    assert data["sample_rate"] == SR
    assert base64.b64decode(data["audio_wav_base64"]) == wav.body
    report = data["report"]
    assert report["mode"] == "parallel" and report["seed"] == 11 and 1 <= report["steps"] <= 4
    assert len(report["attempts"]) == 1 and report["check"] is None  # fixed modes do not check by default
    other = request(server, "/synthesize", payload={**fields, "seed": 12})
    assert other.status == 200 and other.body != wav.body


def test_a_request_lexicon_is_spoken_and_reported(server) -> None:
    fields = {"text": "Nguyen called.", "mode": "parallel", "seed": 5, "format": "json"}
    plain = request(server, "/synthesize", payload=fields).json()
    ours = request(server, "/synthesize", payload={**fields, "lexicon": {"nguyen": "W IH1 N"}}).json()
    assert plain["report"]["lexicon"] is None
    assert ours["report"]["lexicon"]["words"] == 1 and ours["report"]["lexicon"]["source"] == "<mapping>"
    # three phones instead of the dictionary's five: another token sequence, so other audio
    assert ours["audio_wav_base64"] != plain["audio_wav_base64"]
    bad = request(server, "/synthesize", payload={**fields, "lexicon": {"nguyen": "W IH N"}})
    assert bad.status == 400 and "stress digit" in bad.json()["error"]


def test_post_picks_speaker_mode_and_speed(server) -> None:
    base = request(server, "/synthesize", payload={"text": "Good morning.", "mode": "serial", "seed": 1})
    fast = request(server, "/synthesize", payload={"text": "Good morning.", "voice": "bob", "mode": "serial",
                                                   "seed": 1, "speed": 2})
    assert base.status == fast.status == 200
    report = json.loads(fast.headers[REPORT_HEADER])
    assert report["voice"] == "bob" and report["mode"] == "serial" and report["speed"] == 2.0
    assert fast.headers["X-Audiopd-Path"] == "serial" and fast.headers["X-Audiopd-Verdict"] == "unchecked"
    assert _wav(base.body)[0].size == expected_samples("Good morning.") > _wav(fast.body)[0].size


def test_get_synthesize_is_gone(server) -> None:
    """Finding: GET /synthesize let any web page (an <img> tag) make the server work."""
    reply = request(server, "/synthesize?text=Good+morning.")
    _error(reply, 405, "GET was removed")
    assert reply.headers["Allow"] == "POST"


def test_server_default_speaker_applies_when_a_request_names_none(start_server, synth) -> None:
    server = start_server(speaker="bob")
    health = request(server, "/health").json()
    assert health["speaker"] == "bob"
    reply = request(server, "/synthesize", payload={"text": "Yes.", "mode": "parallel", "seed": 0})
    assert json.loads(reply.headers[REPORT_HEADER])["voice"] == "bob" and reply.headers["X-Audiopd-Voice"] == "bob"
    with pytest.raises(AudiopdError, match="unknown speaker 'carol'"):
        BackgroundServer(synth, speaker="carol")


# ---------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("body, needle", [
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe", "not UTF-8"),
    (b'["a list"]', "must be a JSON object"),
    (b"{}", "missing or empty 'text'"),
    (b'{"text": "   "}', "missing or empty 'text'"),
    (b'{"text": null}', "missing or empty 'text'"),
    (b'{"text": 5}', "text must be a string"),
    (b'{"text": "!!! ???"}', "speakable"),
    (b'{"text": "hi", "voice": "carol"}', "unknown voice 'carol'"),
    (b'{"text": "hi", "mode": "fast"}', "mode must be one of"),
    (b'{"text": "hi", "checker": "quick"}', "checker must be one of"),
    (b'{"text": "hi", "format": "mp3"}', "format must be one of"),
    (b'{"text": "hi", "steps": "8"}', "steps must be an integer"),
    (b'{"text": "hi", "steps": 2.5}', "steps must be an integer"),
    (b'{"text": "hi", "steps": true}', "steps must be an integer"),
    (b'{"text": "hi", "mode": "parallel", "steps": 0}', "steps must be an integer in 1..256"),
    (b'{"text": "hi", "mode": "parallel", "seed": -1}', "seed must be an integer in 0.."),
    (b'{"text": "hi", "seed": ' + b"9" * 5000 + b"}", "unreadable number"),
    (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
    (b'{"text": "hi", "mode": "parallel", "speed": 10}', "speed must be between"),
    (b'{"text": "hi", "speed": NaN}', "finite"),
    (b'{"text": "hi", "txt": "typo"}', "unknown field(s) 'txt'"),
])
def test_bad_post_bodies_get_400(server, body: bytes, needle: str) -> None:
    _error(request(server, "/synthesize", method="POST", body=body), 400, needle)


def test_too_long_text_and_too_large_bodies_get_413(start_server) -> None:
    server = start_server(max_chars=20, max_body_bytes=2000)
    assert request(server, "/synthesize", payload={"text": "hi there " * 2 + "hi", "mode": "parallel"}).status == 200
    _error(request(server, "/synthesize", payload={"text": "word " * 5}), 413, "limit of 20")
    _error(request(server, "/synthesize", payload={"text": "hi", "voice": "v" * 3000}), 413, "exceeds the limit")


def test_unknown_paths_get_404_and_wrong_methods_405(server) -> None:
    _error(request(server, "/nope"), 404, "/nope")
    _error(request(server, "/synthesize/extra", payload={"text": "hi"}), 404)
    reply = request(server, "/health", method="POST", body=b"{}")
    _error(reply, 405, "use GET")
    assert "GET" in reply.headers["Allow"] and "POST" not in reply.headers["Allow"]
    reply = request(server, "/synthesize", method="DELETE")
    _error(reply, 405)
    assert reply.headers["Allow"] == "POST"
    assert request(server, "/health/").status == 200  # a trailing slash is the same path


def test_post_without_a_body_gets_400(server) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest("POST", "/synthesize")
        conn.putheader("Content-Type", "application/json")
        conn.endheaders()
        resp = conn.getresponse()
        assert resp.status == 400 and "not valid JSON" in json.loads(resp.read())["error"]
    finally:
        conn.close()


def test_an_unexpected_exception_is_a_500_and_the_server_keeps_serving(server, synth, monkeypatch,
                                                                        caplog) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(synth, "synthesize", broken)
    _error(request(server, "/synthesize", payload={"text": TEXT}), 500, "RuntimeError")
    assert any("boom" in (r.exc_text or "") for r in caplog.records if r.levelname == "ERROR")
    monkeypatch.undo()
    assert request(server, "/health").status == 200
    assert request(server, "/synthesize", payload={"text": TEXT, "mode": "parallel"}).status == 200


# ------------------------------------------------------------------------------------ concurrency
def test_concurrent_requests_never_synthesize_at_once_and_both_succeed(server, synth, monkeypatch) -> None:
    """One worker thread: the model and the checker are not thread-safe."""
    inner = synth.synthesize
    active, peak, guard, calls = [0], [0], threading.Lock(), [0]

    def tracked(*args, **kwargs):
        with guard:
            active[0] += 1
            calls[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            time.sleep(0.1)  # long enough for the other request to arrive meanwhile
            return inner(*args, **kwargs)
        finally:
            with guard:
                active[0] -= 1

    monkeypatch.setattr(synth, "synthesize", tracked)
    texts = {"a": ("Good morning. Nice day.", 5), "b": (TEXT, 6)}
    replies = {}

    def post(key: str) -> None:
        text, seed = texts[key]
        replies[key] = request(server, "/synthesize", payload={"text": text, "mode": "parallel", "seed": seed})

    threads = [threading.Thread(target=post, args=(k,)) for k in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert calls[0] == 3 and peak[0] == 1  # three sentences, never two syntheses at once
    for key, (text, seed) in texts.items():
        assert replies[key].status == 200 and replies[key].headers["X-Audiopd-Seed"] == str(seed)
    assert _wav(replies["b"].body)[0].size == expected_samples(TEXT)
    # Interleaved requests do not disturb each other: the same audio as the request made on its own.
    monkeypatch.undo()
    alone = request(server, "/synthesize", payload={"text": TEXT, "mode": "parallel", "seed": 6})
    assert alone.body == replies["b"].body


def test_metrics_are_prometheus_text_with_bounded_labels(server) -> None:
    assert request(server, "/synthesize", payload={"text": "Hi. Bye.", "mode": "parallel"}).status == 200
    request(server, "/no/such/path/12345")
    reply = request(server, "/metrics")
    assert reply.status == 200 and reply.headers.get_content_type() == "text/plain"
    text = reply.body.decode()
    assert 'audiopd_http_requests_total{route="/synthesize",status="200"} 1.0' in text
    assert 'audiopd_pieces_total{path="parallel",verdict="unchecked"} 2.0' in text
    assert 'route="other",status="404"' in text and "12345" not in text  # raw paths never become labels
    assert "audiopd_voice_loaded 1.0" in text
