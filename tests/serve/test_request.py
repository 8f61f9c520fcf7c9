"""Request parsing and validation, WAV bytes and the compact report header (no sockets)."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
import soundfile as sf

from audiopd.serve.request import (
    MAX_HEADER_CHARS,
    RequestError,
    SynthesisRequest,
    build_request,
    parse_json_body,
    plain,
    report_header,
    wav_bytes,
)

VOICES = ("alice", "bob")


def test_defaults_and_full_requests() -> None:
    assert build_request({"text": "Hi."}, voices=VOICES, max_chars=10) == SynthesisRequest(text="Hi.")
    fields = {"text": "Hi.", "voice": "bob", "mode": "serial", "steps": 4, "seed": 0, "speed": 2, "format": "json"}
    req = build_request(fields, voices=VOICES, max_chars=10)
    assert req == SynthesisRequest("Hi.", "bob", "serial", 4, 0, 2.0, "json") and isinstance(req.speed, float)
    # An explicit null means the default.
    assert build_request({"text": "Hi.", "mode": None, "speed": None}, voices=VOICES, max_chars=10).mode == "auto"
    assert build_request({"text": "Hi.", "checker": "thorough"}, voices=VOICES, max_chars=10).check_level == "thorough"
    words = build_request({"text": "Hi.", "lexicon": {"Hi": "HH AY1"}}, voices=VOICES, max_chars=10).lexicon
    assert words.get("hi") == ("HH", "AY1") and len(words) == 1


@pytest.mark.parametrize("fields, status, needle", [
    ({"text": "x" * 11}, 413, "11 characters"),
    ({"text": ""}, 400, "missing or empty"),
    ({"voice": "bob"}, 400, "missing or empty"),
    ({"text": "Hi.", "seed": 1.0}, 400, "seed must be an integer"),
    ({"text": "Hi.", "speed": "1"}, 400, "speed must be a number"),
    ({"text": "Hi.", "speed": math.inf}, 400, "finite"),
    ({"text": "Hi.", "seed": 2**63}, 400, "seed must be an integer in 0.."),
    ({"text": "Hi.", "voice": 1}, 400, "voice must be a string"),
    ({"text": "Hi.", "extra": 1, "more": 2}, 400, "unknown field(s) 'extra', 'more'"),
    ({"text": "Hi.", "lexicon": "nguyen W IH1 N"}, 400, "lexicon must be an object of words to phones"),
    ({"text": "Hi.", "lexicon": {"nguyen": "W IH N"}}, 400, "lexicon: entry 'nguyen': vowel 'IH' needs its stress"),
    ({"text": "Hi.", "lexicon": {"e-mail": "IY1"}}, 400, "lexicon: entry 'e-mail': 'e-mail' is not a word"),
])
def test_bad_fields(fields, status: int, needle: str) -> None:
    with pytest.raises(RequestError) as info:
        build_request(fields, voices=VOICES, max_chars=10)
    assert info.value.status == status and needle in info.value.message


def test_json_body_must_be_an_object() -> None:
    assert parse_json_body(b'{"text": "caf\\u00e9"}') == {"text": "caf\u00e9"}
    # Finding: 4,301+ digit integers (ValueError) and 200,000-deep nesting (RecursionError) were 500s.
    for raw in (b"", b"[]", b'"text"', b"{'text': 1}", b'{"seed": ' + b"7" * 5000 + b"}",
                b"[" * 200_000 + b"]" * 200_000, b'{"a":' * 200_000 + b"1" + b"}" * 200_000):
        with pytest.raises(RequestError) as info:
            parse_json_body(raw)
        assert info.value.status == 400


def test_wav_bytes_are_16bit_pcm_and_clipped() -> None:
    audio = np.array([0.0, 0.5, -0.5, 2.0, -2.0], np.float32)
    data = wav_bytes(audio, 22050)
    back, rate = sf.read(io.BytesIO(data), dtype="int16")
    assert rate == 22050 and sf.info(io.BytesIO(data)).subtype == "PCM_16"
    assert back.tolist() == [0, 16384, -16384, 32767, -32768]  # clipped to full scale


def test_plain_makes_reports_strict_json() -> None:
    report = {"a": np.float32(0.5), "b": (1, np.int64(2)), "c": float("nan"), "d": np.arange(2), "e": {3: -math.inf}}
    text = json.dumps(plain(report), allow_nan=False)
    assert json.loads(text) == {"a": 0.5, "b": [1, 2], "c": None, "d": [0, 1], "e": {"3": None}}


def _report(reasons: list[str]) -> dict:
    return {"mode": "parallel", "steps": 8, "forward_passes": 10, "audio_seconds": 1.5, "wall_seconds": 0.2,
            "seed": 1, "attempts": [{"huge": "x" * 10_000}], "words": ["w"] * 1000,
            "check": {"passed": False, "score": 0.25, "reasons": reasons, "bad_spans": [(0.1, 0.2)] * 500}}


def test_report_header_is_compact_ascii_and_bounded() -> None:
    header = report_header(_report(["caf\u00e9 mispronounced"]))
    header.encode("ascii")
    summary = json.loads(header)
    assert "attempts" not in summary and "words" not in summary and "bad_spans" not in summary["check"]
    assert summary["check"] == {"passed": False, "score": 0.25, "reasons": ["caf\u00e9 mispronounced"]}
    # Many long reasons (a long multi-chunk text): the reasons go, the verdict stays.
    long = json.loads(report_header(_report([f"chunk {i}: " + "r" * 200 for i in range(100)])))
    assert long["check"] == {"passed": False, "score": 0.25, "reasons_dropped": 100}
    assert len(report_header(_report(["r" * 200] * 100))) <= MAX_HEADER_CHARS
    # Even absurd warnings cannot blow the limit: the core fields survive.
    huge = json.loads(report_header({**_report([]), "warnings": ["w" * 9000]}))
    assert huge["truncated"] and huge["forward_passes"] == 10 and huge["check"]["passed"] is False
