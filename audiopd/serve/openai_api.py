"""OpenAI's speech API on audiopd: the request of ``POST /v1/audio/speech`` and the bytes it answers with.

The request follows https://platform.openai.com/docs/api-reference/audio/createSpeech: ``model``,
``input``, ``voice``, ``response_format``, ``speed``, ``stream_format`` (audio | sse), plus audiopd's
``mode``, ``steps``, ``seed`` and ``lexicon`` (words to ARPAbet phones, sent as the SDK's ``extra_body``).
Choices audiopd makes where OpenAI's names mean nothing here:

* ``model``: ``audiopd``, or OpenAI's ``tts-1``, ``tts-1-hd``, ``gpt-4o-mini-tts`` as aliases of it;
* ``voice``: a speaker of the loaded voice (``GET /v1/voices``); OpenAI's voice names (alloy, echo, ...)
  speak with the server's default speaker, named in the ``X-Audiopd-Voice`` header, so a client
  written for OpenAI works unchanged; any other name is a 400 that lists the speakers;
* ``response_format``: wav (the default here; OpenAI's is mp3), pcm (16-bit little-endian mono at
  24 kHz, as OpenAI sends it), flac, and mp3 / opus only where libsndfile can encode them; pcm streams
  sentence by sentence, the others come whole (a WAV with its true length) unless ``stream_format`` is sse;
* ``instructions`` (voice direction) is refused: this voice cannot follow it.
Errors use OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, so its client shows them.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from audiopd.audio import resample, to_pcm16
from audiopd.serve.request import MODES, TYPE_NAMES, RequestError, SynthesisRequest, check_numbers, request_lexicon

MODEL_ID = "audiopd"
MODEL_ALIASES = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")
OPENAI_VOICES = ("alloy", "ash", "ballad", "cedar", "coral", "echo", "fable", "marin", "nova", "onyx", "sage",
                 "shimmer", "verse")
PCM_RATE = 24000  # OpenAI's pcm: "raw samples in 24kHz (16-bit signed, low-endian), without the header"
# pcm goes out sentence by sentence as they are decoded; the others are sent whole, wav with its true length
# (a streamed WAV header cannot know it: the openai client's speech.create saved files that claimed 27 hours).
# SSE streams wav or pcm deltas, the first wav delta starting with a header of unknown length.
STREAMED = ("pcm",)
SSE_FORMATS = ("wav", "pcm")
CONTENT_TYPES = {"wav": "audio/wav", "pcm": "audio/pcm", "flac": "audio/flac", "mp3": "audio/mpeg",
                 "opus": "audio/ogg"}
_SF = {"wav": ("WAV", "PCM_16"), "flac": ("FLAC", "PCM_16"), "mp3": ("MP3", "MPEG_LAYER_III"), "opus": ("OGG", "OPUS")}
_FIELDS: dict[str, tuple[type, ...]] = {
    "model": (str,), "input": (str,), "voice": (str, dict), "response_format": (str,), "speed": (int, float),
    "stream_format": (str,), "instructions": (str,), "mode": (str,), "steps": (int,), "seed": (int,),
    "lexicon": (dict,),
}


@dataclass(frozen=True)
class SpeechRequest:
    synthesis: SynthesisRequest
    response_format: str = "wav"
    stream_format: str = "audio"


def available_formats(sample_rate: int) -> tuple[str, ...]:
    """wav, pcm, flac, and mp3 / opus where this libsndfile encodes them at ``sample_rate``."""
    out = ["wav", "pcm", "flac"]
    for fmt in ("mp3", "opus"):
        try:
            encode(np.zeros(sample_rate // 10, np.float32), sample_rate, fmt)
            out.append(fmt)
        except Exception:  # noqa: BLE001 (libsndfile without the encoder, or a rate it cannot take)
            continue
    return tuple(out)


def build_speech_request(fields: dict[str, Any], *, voices: Sequence[str], default_voice: str, max_chars: int,
                         formats: Sequence[str]) -> SpeechRequest:
    unknown = sorted(set(fields) - set(_FIELDS))
    if unknown:
        raise RequestError(400, f"unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(_FIELDS)}")
    for key, value in fields.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, _FIELDS[key])):
            want = TYPE_NAMES.get(_FIELDS[key], "a string")
            raise RequestError(400, f"{key} must be {want}, got {json.dumps(value)[:40]}")
    model = fields.get("model") or MODEL_ID
    if model != MODEL_ID and model not in MODEL_ALIASES:
        raise RequestError(400, f"unknown model {model[:60]!r}: use {MODEL_ID!r} (or {', '.join(MODEL_ALIASES)})")
    text = fields.get("input")
    if not isinstance(text, str) or not text.strip():
        raise RequestError(400, "missing or empty 'input'")
    if len(text) > max_chars:
        raise RequestError(413, f"input has {len(text)} characters, more than this server's limit of {max_chars}")
    if fields.get("instructions"):
        raise RequestError(400, "instructions are not supported: this voice cannot follow spoken directions")
    voice = fields.get("voice")
    if isinstance(voice, dict):  # the SDK's {"id": ...} form of a custom voice
        voice = voice.get("id")
    if voice is None or voice in OPENAI_VOICES:
        voice = default_voice
    if not isinstance(voice, str) or voice not in voices:
        raise RequestError(400, f"unknown voice {str(voice)[:60]!r} (speakers: {', '.join(voices)}; OpenAI's "
                                f"voice names speak with {default_voice!r})")
    fmt = fields.get("response_format") or "wav"
    if fmt not in formats:
        missing = " (no encoder installed)" if fmt in ("mp3", "opus", "aac") else ""
        raise RequestError(400, f"response_format {fmt[:20]!r} is not available{missing}; use one of "
                                f"{', '.join(formats)}")
    stream = fields.get("stream_format") or "audio"
    if stream not in ("audio", "sse"):
        raise RequestError(400, f"stream_format must be audio or sse, got {stream[:20]!r}")
    if stream == "sse" and fmt not in SSE_FORMATS:
        raise RequestError(400, f"stream_format sse sends {' or '.join(SSE_FORMATS)} deltas, not {fmt}")
    mode = fields.get("mode") or "auto"
    if mode not in MODES:
        raise RequestError(400, f"mode must be one of {', '.join(MODES)}, got {mode[:20]!r}")
    speed = check_numbers(fields)
    req = SynthesisRequest(text=text, voice=voice, mode=mode, steps=fields.get("steps"), seed=fields.get("seed"),
                           speed=1.0 if speed is None else float(speed), lexicon=request_lexicon(fields))
    return SpeechRequest(req, fmt, stream)


def openai_error(status: int, message: str) -> dict[str, Any]:
    kind = {429: "rate_limit_error", 503: "server_error", 500: "server_error"}.get(status, "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}


# ------------------------------------------------------------------------------------------- bytes
def pcm16(audio: np.ndarray) -> bytes:
    """Raw little-endian 16-bit samples, quantised like every file the engine writes (``to_pcm16``)."""
    return to_pcm16(audio).astype("<i2").tobytes()


def to_pcm_rate(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Resample to OpenAI's 24 kHz (polyphase; a piece starts and ends in a faded edge or a pause)."""
    if sample_rate == PCM_RATE or audio.size == 0:
        return audio
    return resample(audio, sample_rate, PCM_RATE).astype(np.float32)


UNKNOWN_SIZE = 0xFFFFFFFF


def streaming_wav_header(sample_rate: int) -> bytes:
    """A 16-bit mono WAV header for a stream of unknown length: RIFF and data sizes 0xFFFFFFFF, as ffmpeg writes
    to a pipe and OpenAI streams. libsndfile (soundfile) then reads to the end of the data; Python's wave reports
    the placeholder (2^31 - 1 frames) but its readframes stops at the end too."""
    return (b"RIFF" + struct.pack("<I", UNKNOWN_SIZE) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
            + b"data" + struct.pack("<I", UNKNOWN_SIZE))


def encode(audio: np.ndarray, sample_rate: int, fmt: str) -> bytes:
    """A whole text in wav / flac / mp3 / opus (libsndfile through soundfile), WAV and FLAC with ``say``'s 16-bit
    samples; the WAV's RIFF and data sizes are its true ones."""
    from audiopd.audio import audio_bytes

    return audio_bytes(audio, sample_rate, *_SF[fmt])
