"""Torch-free pieces of the HTTP server: request parsing and validation, WAV bytes, compact reports.

Kept apart from the handler so ``audiopd serve --help`` and these helpers never import torch, and so
the rules a request must follow can be read (and tested) in one place. Every rejection is a
``RequestError`` carrying the HTTP status and a one-line message for the ``{"error": ...}`` body.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from audiopd.checker.config import CHECK_LEVELS  # torch-free
from audiopd.text.lexicon import Lexicon, LexiconError, load_lexicon

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_CHARS = 5000
# A request body is a small JSON object; 5000 characters of text need at most ~30 KB even if every
# character is a \uXXXX escape. 1 MiB leaves room for any sane --max-chars and refuses floods.
DEFAULT_MAX_BODY_BYTES = 1 << 20
# Same choices as `audiopd say --mode` (audiopd.synthesis.auto.MODES, which imports torch).
MODES = ("auto", "parallel", "serial")
FORMATS = ("wav", "json")
REPORT_HEADER = "X-Audiopd-Report"
# Stay far below common proxy/client header limits (8 KiB per line in nginx and Python's http.client
# allows 64 KiB); a long multi-chunk report loses its reasons first, then the rest of its detail.
MAX_HEADER_CHARS = 4096

# Field -> accepted JSON types. bool is a subclass of int in Python, so it is refused explicitly below.
_FIELDS: dict[str, tuple[type, ...]] = {
    "text": (str,), "voice": (str,), "mode": (str,), "steps": (int,), "seed": (int,), "speed": (int, float),
    "format": (str,), "checker": (str,), "lexicon": (dict,),
}


# what a refused field should have been, by its accepted JSON types
TYPE_NAMES = {(str,): "a string", (int, float): "a number", (int,): "an integer",
              (dict,): "an object of words to phones"}

MAX_SEED = 2**63 - 1


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:120]


class RequestError(Exception):
    """A request the server refuses: ``status`` (4xx) and a one-line ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class SynthesisRequest:
    """A validated ``/synthesize`` request. Ranges (steps, speed, seed) are checked by the facade."""

    text: str
    voice: str | None = None
    mode: str = "auto"
    steps: int | None = None
    seed: int | None = None
    speed: float = 1.0
    format: str = "wav"
    check_level: str = "fast"  # the request's "checker": the check of auto mode
    # the request's own pronunciations, over the server's --lexicon (audiopd.text.lexicon)
    lexicon: Lexicon | None = field(default=None, hash=False)


def parse_json_body(raw: bytes) -> dict[str, Any]:
    """A POST body -> the JSON object it holds, or RequestError 400 (never another exception)."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise RequestError(400, "the request body is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise RequestError(400, f"the request body is not valid JSON: {exc.msg} at line {exc.lineno} "
                                f"column {exc.colno}") from None
    except RecursionError:  # e.g. 200,000 nested brackets
        raise RequestError(400, "the request body is nested too deeply") from None
    except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits
        raise RequestError(400, f"the request body holds an unreadable number ({_first_line(exc)})") from None
    if not isinstance(data, dict):
        raise RequestError(400, f"the request body must be a JSON object, not {type(data).__name__}")
    return data


def build_request(fields: dict[str, Any], *, voices: Sequence[str], max_chars: int) -> SynthesisRequest:
    """Check the fields of a request (types, known names, text length) -> SynthesisRequest.

    Unknown fields are refused rather than ignored, so a typo such as ``"txt"`` or ``"sped"`` is reported
    instead of silently synthesising with defaults.
    """
    unknown = sorted(set(fields) - set(_FIELDS))
    if unknown:
        raise RequestError(400, f"unknown field(s) {', '.join(map(repr, unknown))}; "
                                f"known: {', '.join(_FIELDS)}")
    for key, value in fields.items():
        types = _FIELDS[key]
        if value is None:
            continue  # explicit null = the default (a null text is caught below as missing)
        if isinstance(value, bool) or not isinstance(value, types):
            want = TYPE_NAMES.get(types, "an integer")
            raise RequestError(400, f"{key} must be {want}, got {json.dumps(value)[:40]}")
    text = fields.get("text")
    if not isinstance(text, str) or not text.strip():
        raise RequestError(400, "missing or empty 'text'")
    if len(text) > max_chars:
        raise RequestError(413, f"text has {len(text)} characters, more than this server's limit of {max_chars}")
    voice = fields.get("voice")
    if voice is not None and voice not in voices:
        raise RequestError(400, f"unknown voice {voice!r} (available: {', '.join(voices) or 'none'})")
    mode = fields.get("mode") or "auto"
    if mode not in MODES:
        raise RequestError(400, f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    fmt = fields.get("format") or "wav"
    if fmt not in FORMATS:
        raise RequestError(400, f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    level = fields.get("checker") or "fast"
    if level not in CHECK_LEVELS:
        raise RequestError(400, f"checker must be one of {', '.join(CHECK_LEVELS)}, got {level!r}")
    speed = check_numbers(fields)
    return SynthesisRequest(text=text, voice=voice, mode=mode, steps=fields.get("steps"), seed=fields.get("seed"),
                            speed=1.0 if speed is None else float(speed), format=fmt, check_level=level,
                            lexicon=request_lexicon(fields))


def request_lexicon(fields: dict[str, Any]) -> Lexicon | None:
    """A request's ``"lexicon"`` (a JSON object of words to phones, ``audiopd.text.lexicon``), checked: 400 names
    the entry that is wrong."""
    value = fields.get("lexicon")
    if value is None:
        return None
    try:
        return load_lexicon(value)
    except LexiconError as exc:
        raise RequestError(400, f"lexicon: {_first_line(exc)}") from None


def check_numbers(fields: dict[str, Any]) -> float | None:
    """Range-check ``seed`` and ``speed`` (the facade checks them too, but with no cap on the seed); -> speed."""
    seed = fields.get("seed")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise RequestError(400, f"seed must be an integer in 0..{MAX_SEED}, got {str(seed)[:24]}")
    speed = fields.get("speed")
    if speed is not None and not math.isfinite(speed):
        raise RequestError(400, f"speed must be a finite number, got {speed!r}")
    return speed


# ------------------------------------------------------------------------------------------ responses
def wav_bytes(audio: np.ndarray, sample_rate: int) -> bytes:
    """Mono float audio -> a 16-bit PCM WAV file in memory (the same encoding as ``Result.write``)."""
    from audiopd.audio import audio_bytes  # lazy: `audiopd --help` builds this module's CLI options without soundfile

    return audio_bytes(audio, sample_rate, "WAV")


def plain(obj: Any) -> Any:
    """A report made JSON-safe: numpy scalars/arrays and tuples become plain, NaN/inf become null.

    Python's json writes NaN as a bare ``NaN`` token that strict JSON parsers (browsers) reject.
    """
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        return plain(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "to_dict"):
        return plain(obj.to_dict())
    return obj


# The header keeps the summary fields; per-attempt and per-chunk detail lives in format=json.
_HEADER_KEYS = ("voice", "seed", "requested_mode", "mode", "first_path", "check_level", "steps", "forward_passes",
                "audio_seconds", "wall_seconds", "chunks", "speed", "budget_exhausted", "escalation_yielded", "checker",
                "codec", "decoder", "lexicon", "warnings")


def compact_report(report: dict[str, Any]) -> dict[str, Any]:
    """The summary of a synthesis report for the ``X-Audiopd-Report`` header."""
    out = {k: report[k] for k in _HEADER_KEYS if k in report}
    check = report.get("check")
    out["check"] = None if check is None else {k: check.get(k) for k in ("passed", "score", "reasons")}
    return plain(out)


def report_header(report: dict[str, Any]) -> str:
    """Compact ASCII JSON of the report summary, at most MAX_HEADER_CHARS characters."""
    summary = compact_report(report)
    text = json.dumps(summary, separators=(",", ":"))  # ensure_ascii: header values must be latin-1
    if len(text) > MAX_HEADER_CHARS and summary.get("check"):
        reasons = summary["check"].pop("reasons") or []
        summary["check"]["reasons_dropped"] = len(reasons)
        text = json.dumps(summary, separators=(",", ":"))
    if len(text) > MAX_HEADER_CHARS:
        check = summary.get("check")
        summary = {k: summary.get(k) for k in ("mode", "steps", "forward_passes", "audio_seconds", "wall_seconds")}
        summary["check"] = None if check is None else {"passed": check["passed"], "score": check["score"]}
        summary["truncated"] = True
        text = json.dumps(summary, separators=(",", ":"))
    return text
