"""WAV lengths: a whole WAV's header carries its true length; a streamed one says "unknown" (0xFFFFFFFF).

Finding (issue 44): ``audio.speech.create(response_format="wav")`` through the openai client saved the streamed
WAV, whose header claimed 2^31 frames, so the file reported 27 hours.
"""

from __future__ import annotations

import base64
import io
import json
import struct
import wave

import pytest
import soundfile as sf
from serve_fixtures import SR, request
from voice_fixtures import expected_samples

TWO = ("Hello there.", "How are you today?")
UNKNOWN = 0xFFFFFFFF


def _expected(synth) -> int:
    """Samples of TWO spoken and joined: each sentence's, plus the pause before the second."""
    pause = int(round(synth.config.join.pause_s * SR))
    return expected_samples(TWO[0]) + pause + expected_samples(TWO[1])


def _sizes(body: bytes) -> tuple[int, int, int]:
    """(RIFF size, data chunk size, offset of the data) of a canonical 44-byte-header WAV."""
    assert body[:4] == b"RIFF" and body[8:16] == b"WAVEfmt " and body[36:40] == b"data", body[:44]
    return struct.unpack("<I", body[4:8])[0], struct.unpack("<I", body[40:44])[0], 44


@pytest.mark.parametrize("path, payload", [
    ("/synthesize", {"text": " ".join(TWO), "seed": 2}),
    ("/v1/audio/speech", {"input": " ".join(TWO), "response_format": "wav", "seed": 2}),
    ("/v1/audio/speech", {"input": " ".join(TWO), "seed": 2}),  # wav is the default format here
])
def test_whole_wavs_carry_their_true_length(server, synth, path: str, payload: dict) -> None:
    reply = request(server, path, payload=payload)
    assert reply.status == 200 and reply.headers.get_content_type() == "audio/wav"
    body, n = reply.body, _expected(synth)
    riff, data, offset = _sizes(body)
    assert int(reply.headers["Content-Length"]) == len(body)
    assert riff == len(body) - 8 and data == len(body) - offset == 2 * n
    assert sf.info(io.BytesIO(body)).frames == n
    with wave.open(io.BytesIO(body)) as w:
        assert (w.getnframes(), w.getframerate(), w.getsampwidth()) == (n, SR, 2)
        assert len(w.readframes(w.getnframes())) == 2 * n


def test_a_streamed_wav_says_unknown_length_and_readers_find_the_real_one(server, synth) -> None:
    """SSE is the one route that streams WAV: the first delta starts with a header that cannot know the length."""
    reply = request(server, "/v1/audio/speech", payload={"input": " ".join(TWO), "response_format": "wav",
                                                         "stream_format": "sse", "seed": 2})
    assert reply.status == 200 and reply.headers.get_content_type() == "text/event-stream"
    events = [json.loads(line[6:]) for line in reply.body.decode().splitlines() if line.startswith("data: ")]
    body = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
    n = _expected(synth)
    assert _sizes(body)[:2] == (UNKNOWN, UNKNOWN) and len(body) == 44 + 2 * n
    # libsndfile takes 0xFFFFFFFF as "to the end of the data": the real count.
    audio, rate = sf.read(io.BytesIO(body), dtype="int16")
    assert rate == SR and audio.size == n
    # Python's wave reports the placeholder (the "27 hours"), but reading stops at the end of the data.
    with wave.open(io.BytesIO(body)) as w:
        assert w.getnframes() == UNKNOWN // 2
        assert len(w.readframes(w.getnframes())) == 2 * n


def test_only_pcm_streams_as_raw_bytes(server) -> None:
    reply = request(server, "/v1/audio/speech", payload={"input": " ".join(TWO), "response_format": "pcm"})
    assert reply.status == 200 and reply.headers.get_content_type() == "audio/pcm"
    assert "Content-Length" not in reply.headers and reply.headers["Transfer-Encoding"] == "chunked"
    assert not reply.body.startswith(b"RIFF") and len(reply.body) % 2 == 0


def test_the_openai_client_saves_a_wav_of_the_true_length(server, synth, tmp_path) -> None:
    openai = pytest.importorskip("openai", reason="the openai client is in the dev extra")
    client = openai.OpenAI(base_url=server.url + "v1", api_key="dummy", max_retries=0, timeout=60)
    n = _expected(synth)
    speech = client.audio.speech.create(model="tts-1", voice="alloy", input=" ".join(TWO), response_format="wav",
                                        extra_body={"seed": 2})
    saved = tmp_path / "speech.wav"
    speech.write_to_file(saved)
    with wave.open(str(saved)) as w:
        assert w.getnframes() == n and w.getframerate() == SR
    assert sf.info(str(saved)).frames == n
    # The client's streaming variant asks the same of the server: the same whole file.
    streamed = tmp_path / "streamed.wav"
    with client.audio.speech.with_streaming_response.create(model="tts-1", voice="alloy", input=" ".join(TWO),
                                                            response_format="wav", extra_body={"seed": 2}) as resp:
        resp.stream_to_file(streamed)
    assert streamed.read_bytes() == saved.read_bytes()
