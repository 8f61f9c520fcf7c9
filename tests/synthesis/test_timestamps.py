"""Word times from durations, cue grouping, and the SRT / WebVTT / JSON writers."""

from __future__ import annotations

import json
import re

import pytest

from audiopd.errors import AudiopdError
from audiopd.synthesis.timestamps import (
    WordTime,
    group_cues,
    timestamp_format,
    to_srt,
    to_vtt,
    word_times,
    write_timestamps,
)


def test_word_times_from_token_durations() -> None:
    # tokens: ^ | HH AH0 L OW1 | _ | W ER1 L D | . $ ; durations in frames at 100 Hz.
    durations = [10, 5, 4, 6, 8, 0, 7, 9, 5, 6, 20, 15]
    spans = [("hello", 1, 5), ("world", 6, 10)]
    words = word_times(spans, durations, 100.0, offset_s=1.0)
    assert words == [WordTime("hello", 1.10, 1.33), WordTime("world", 1.33, 1.60)]


@pytest.mark.parametrize("spans", [[("x", 0, 13)], [("x", 3, 3)], [("x", -1, 2)]])
def test_word_times_reject_spans_outside_the_tokens(spans) -> None:
    with pytest.raises(ValueError):
        word_times(spans, [1] * 12, 100.0)


@pytest.mark.parametrize("name, fmt", [("a.srt", "srt"), ("b.VTT", "vtt"), ("c.json", "json")])
def test_format_by_suffix(name: str, fmt: str) -> None:
    assert timestamp_format(name) == fmt


@pytest.mark.parametrize("name", ["a.txt", "noext", "a.srt.bak"])
def test_unknown_format_is_a_clear_error(name: str) -> None:
    with pytest.raises(AudiopdError, match="unknown format"):
        timestamp_format(name)


def _words(n: int, gap_after: int | None = None) -> list[WordTime]:
    out, t = [], 0.0
    for i in range(n):
        out.append(WordTime(f"w{i}", t, t + 0.3))
        t += 0.35 + (1.0 if gap_after is not None and i == gap_after else 0.0)
    return out


def test_cues_break_at_pauses_and_length() -> None:
    cues = group_cues(_words(6, gap_after=2))
    assert [c[2] for c in cues] == ["w0 w1 w2", "w3 w4 w5"]
    long = group_cues([WordTime("abcdefghij", i, i + 0.5) for i in range(0, 10)], max_chars=25, break_gap_s=10)
    assert all(len(text) <= 25 for _, _, text in long)
    assert " ".join(t for _, _, t in long).split() == ["abcdefghij"] * 10


def test_srt_and_vtt_text() -> None:
    words = [WordTime("hello", 0.05, 0.5), WordTime("world", 0.5, 1.0), WordTime("again", 3725.0, 3725.4567)]
    srt = to_srt(words)
    assert srt == ("1\n00:00:00,050 --> 00:00:01,000\nhello world\n\n"
                   "2\n01:02:05,000 --> 01:02:05,457\nagain\n")
    vtt = to_vtt(words)
    assert vtt.startswith("WEBVTT\n\n00:00:00.050 --> 00:00:01.000\nhello world\n")
    assert re.findall(r"\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}", vtt) and "," not in vtt


def test_write_files_atomically(tmp_path) -> None:
    words = _words(3)
    for suffix in (".srt", ".vtt", ".json"):
        path = write_timestamps(tmp_path / "sub" / f"out{suffix}", words, duration_s=1.5)
        assert path.is_file() and path.read_text().strip()
    data = json.loads((tmp_path / "sub" / "out.json").read_text())
    assert data["duration_s"] == 1.5 and [w["word"] for w in data["words"]] == ["w0", "w1", "w2"]
    assert [p.name for p in (tmp_path / "sub").iterdir() if p.name.startswith(".")] == []  # no temp left
    with pytest.raises(AudiopdError):
        write_timestamps(tmp_path / "out.txt", words)
    assert not (tmp_path / "out.txt").exists()
