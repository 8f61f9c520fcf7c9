"""Word timestamps from predicted durations, and their SRT / WebVTT / JSON files.

Durations fix the alignment before any token is decoded (audiopd.model.encoder), so word times need
no aligner: a word's span of phoneme tokens (``Phonemized.words``) covers a known range of frames.
Subtitle cues group consecutive words up to ``max_chars`` characters / ``max_cue_s`` seconds (42
characters is the usual two-line subtitle width), and always break at a pause of ``break_gap_s``
or more (chunk joins, long punctuation pauses), so a cue never spans a silence.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from audiopd.errors import AudiopdError
from audiopd.fileio import write_text_atomic

FORMATS = {".srt": "srt", ".vtt": "vtt", ".json": "json"}


@dataclass(frozen=True)
class WordTime:
    """One spoken word (normalised, lower case) and its time span in the output audio."""

    word: str
    start_s: float
    end_s: float

    def to_dict(self) -> dict[str, float | str]:
        return asdict(self)


def word_times(spans: Sequence[tuple[str, int, int]], durations: Sequence[int] | np.ndarray,
               frame_rate: float, offset_s: float = 0.0) -> list[WordTime]:
    """Word times from (word, token start, token end) spans and per-token frame durations."""
    if frame_rate <= 0:
        raise ValueError(f"frame_rate must be > 0, got {frame_rate}")
    ends = np.cumsum(np.asarray(durations, dtype=np.int64))
    out = []
    for word, start, end in spans:
        if not 0 <= start < end <= ends.size:
            raise ValueError(f"word span ({start}, {end}) of {word!r} is outside {ends.size} tokens")
        first = int(ends[start - 1]) if start > 0 else 0
        out.append(WordTime(word, offset_s + first / frame_rate, offset_s + int(ends[end - 1]) / frame_rate))
    return out


def timestamp_format(path: str | Path) -> str:
    """'srt', 'vtt' or 'json' from the file suffix; a clear error for anything else."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise AudiopdError(f"timestamps file {path}: unknown format {suffix or '(no suffix)'!r}; "
                           f"use one of {', '.join(FORMATS)}")
    return FORMATS[suffix]


def group_cues(words: Sequence[WordTime], *, max_chars: int = 42, max_cue_s: float = 5.0,
               break_gap_s: float = 0.25) -> list[tuple[float, float, str]]:
    """Consecutive words -> cues (start_s, end_s, text)."""
    cues: list[tuple[float, float, str]] = []
    cur: list[WordTime] = []
    for w in words:
        if cur:
            text = " ".join(x.word for x in cur) + " " + w.word
            if (w.start_s - cur[-1].end_s >= break_gap_s or len(text) > max_chars
                    or w.end_s - cur[0].start_s > max_cue_s):
                cues.append((cur[0].start_s, cur[-1].end_s, " ".join(x.word for x in cur)))
                cur = []
        cur.append(w)
    if cur:
        cues.append((cur[0].start_s, cur[-1].end_s, " ".join(x.word for x in cur)))
    return cues


def _clock(seconds: float, sep: str) -> str:
    ms = max(0, int(round(seconds * 1000.0)))
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def to_srt(words: Sequence[WordTime]) -> str:
    blocks = [f"{i}\n{_clock(a, ',')} --> {_clock(b, ',')}\n{text}\n"
              for i, (a, b, text) in enumerate(group_cues(words), start=1)]
    return "\n".join(blocks)


def to_vtt(words: Sequence[WordTime]) -> str:
    blocks = [f"{_clock(a, '.')} --> {_clock(b, '.')}\n{text}\n" for a, b, text in group_cues(words)]
    return "WEBVTT\n\n" + "\n".join(blocks)


def to_json(words: Sequence[WordTime], *, duration_s: float | None = None) -> str:
    data: dict = {"words": [{"word": w.word, "start_s": round(w.start_s, 3), "end_s": round(w.end_s, 3)}
                            for w in words]}
    if duration_s is not None:
        data["duration_s"] = round(duration_s, 3)
    return json.dumps(data, indent=2) + "\n"


def render_timestamps(words: Sequence[WordTime], fmt: str, *, duration_s: float | None = None) -> str:
    if fmt == "srt":
        return to_srt(words)
    if fmt == "vtt":
        return to_vtt(words)
    if fmt == "json":
        return to_json(words, duration_s=duration_s)
    raise ValueError(f"unknown timestamps format {fmt!r}")


def write_timestamps(path: str | Path, words: Sequence[WordTime], *, duration_s: float | None = None) -> Path:
    """Write word timestamps as SRT, WebVTT or JSON, chosen by the suffix of ``path``."""
    return write_text_atomic(path, render_timestamps(words, timestamp_format(path), duration_s=duration_s))
