"""The official ``openai`` client against the server: speech as WAV, streamed PCM, SSE, errors it can show."""

from __future__ import annotations

import io
import json
import time

import numpy as np
import pytest
import soundfile as sf
from serve_fixtures import SR, request

openai = pytest.importorskip("openai", reason="the openai client is in the dev extra")

TWO = "Hello there. How are you today?"


@pytest.fixture
def client(server):
    return openai.OpenAI(base_url=server.url + "v1", api_key="dummy", max_retries=0, timeout=60)


def test_create_speech_as_wav(client, server) -> None:
    speech = client.audio.speech.create(model="tts-1", voice="alloy", input=TWO, response_format="wav")
    audio, rate = sf.read(io.BytesIO(speech.content), dtype="float32")
    assert rate == SR and audio.size > SR // 2 and np.abs(audio).max() > 0
    assert speech.response.headers["x-audiopd-verdict"] in ("passed", "failed", "unchecked")
    assert speech.response.headers["x-audiopd-path"] in ("parallel", "serial", "mixed")
    assert speech.response.headers["x-audiopd-voice"] == "alice"  # OpenAI's names speak with the default


def test_streamed_pcm_matches_the_whole_wav_and_arrives_in_pieces(client, server) -> None:
    fields = dict(model="audiopd", voice="bob", input=TWO, extra_body={"seed": 4, "mode": "parallel"})
    t0 = time.perf_counter()
    chunks, first_byte = [], None
    with client.audio.speech.with_streaming_response.create(response_format="pcm", **fields) as resp:
        assert resp.headers["x-audiopd-sample-rate"] == "24000"
        for chunk in resp.iter_bytes():
            first_byte = first_byte or time.perf_counter() - t0
            chunks.append(chunk)
    pcm = np.frombuffer(b"".join(chunks), "<i2")
    wav = client.audio.speech.create(response_format="wav", **fields)
    whole, rate = sf.read(io.BytesIO(wav.content), dtype="int16")
    assert first_byte is not None and pcm.size == pytest.approx(whole.size * 24000 / rate, abs=2)
    # Same seed, same sentences: the 24 kHz stream is the 16 kHz WAV resampled.
    from scipy.signal import resample_poly

    expected = resample_poly(whole.astype(np.float32) / 32767, 3, 2)
    assert np.abs(pcm / 32767 - expected[: pcm.size]).max() < 0.01


def test_sse_events_carry_audio_words_and_verdicts(server) -> None:
    reply = request(server, "/v1/audio/speech", payload={"input": TWO, "stream_format": "sse",
                                                         "response_format": "pcm", "seed": 1})
    assert reply.status == 200 and reply.headers.get_content_type() == "text/event-stream"
    events = [json.loads(line[6:]) for line in reply.body.decode().splitlines() if line.startswith("data: ")]
    deltas = [e for e in events if e["type"] == "speech.audio.delta"]
    assert len(deltas) == 2 and events[-1]["type"] == "speech.audio.done" and events[-1]["sentences"] == 2
    assert [d["verdict"] for d in deltas] == ["passed", "passed"] and deltas[1]["words"][0]["word"] == "how"
    assert deltas[1]["words"][0]["start_s"] > deltas[0]["words"][-1]["end_s"]  # times count from the start


def test_models_voices_and_errors_in_openai_shape(client, server) -> None:
    assert "audiopd" in [m.id for m in client.models.list()]
    assert request(server, "/v1/voices").json()["voices"] == [{"id": "alice", "name": "alice"},
                                                             {"id": "bob", "name": "bob"}]
    with pytest.raises(openai.BadRequestError, match="unknown voice 'carol'"):
        client.audio.speech.create(model="tts-1", voice="carol", input="Hi.")
    with pytest.raises(openai.BadRequestError, match="unknown model"):
        client.audio.speech.create(model="whisper-1", voice="alloy", input="Hi.")
    with pytest.raises(openai.BadRequestError, match="instructions are not supported"):
        client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.", instructions="Whisper.")
    with pytest.raises(openai.BadRequestError, match="lexicon: entry 'hi'"):
        client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.", extra_body={"lexicon": {"hi": "QQ"}})
    spoken = client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.", response_format="wav",
                                        extra_body={"lexicon": {"hi": "HH AY1"}})
    assert json.loads(spoken.response.headers["x-audiopd-report"])["lexicon"]["words"] == 1


@pytest.mark.parametrize("fmt, subtype", [("flac", "PCM_16"), ("mp3", None), ("opus", "OPUS")])
def test_encoded_formats(client, server, fmt: str, subtype) -> None:
    if fmt not in request(server, "/health").json()["formats"]:
        pytest.skip(f"this libsndfile has no {fmt} encoder (optional)")
    speech = client.audio.speech.create(model="tts-1", voice="alloy", input="Hi there.", response_format=fmt)
    info = sf.info(io.BytesIO(speech.content))
    assert info.duration > 0.2 and (subtype is None or info.subtype == subtype)
