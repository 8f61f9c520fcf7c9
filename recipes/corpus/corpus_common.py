"""Shared plumbing for the corpus recipe stages: arguments, done-markers, atomic writes.

The stage scripts have numeric names (``01_sentences.py``) so they cannot be imported by name; each
one puts its own folder on ``sys.path`` and imports this module. Nothing here knows about any
absolute path: DATA is always given (default ``data``, relative to the current directory).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

VOICES: tuple[str, ...] = ("slt", "rms", "awb", "kal16")
SAMPLE_RATE = 16000


def stage_args(description: str, argv: list[str] | None = None,
               extra: "callable | None" = None) -> argparse.Namespace:
    """Parse the options every stage shares (``--data``, ``--force``) plus stage-specific ones."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", default="data", help="data root (default: ./data)")
    parser.add_argument("--force", action="store_true", help="redo the stage even when it is marked done")
    if extra is not None:
        extra(parser)
    return parser.parse_args(argv)


def corpus_dir(data: str | Path) -> Path:
    return Path(data) / "corpus"


def done_marker(data: str | Path, stage: str) -> Path:
    return corpus_dir(data) / f".done-{stage}"


def is_done(data: str | Path, stage: str) -> bool:
    return done_marker(data, stage).is_file()


def mark_done(data: str | Path, stage: str, info: dict) -> None:
    """Write the done-marker last, so an interrupted stage is never taken for a finished one."""
    atomic_write_text(done_marker(data, stage), json.dumps(info, indent=1, sort_keys=True) + "\n")


def clear_done(data: str | Path, stage: str) -> None:
    marker = done_marker(data, stage)
    if marker.exists():
        marker.unlink()


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` via a temp file in the same folder and rename: readers never see a partial file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def temp_path_for(path: Path, suffix: str) -> Path:
    """A unique sibling temp name (for tools such as flite that write a file themselves)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    return Path(tmp)


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> Path:
    return atomic_write_text(path, "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))


def read_jsonl(path: str | Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def read_sentences(data: str | Path) -> list[tuple[str, str, str]]:
    """Rows (id, split, text) of ``DATA/corpus/sentences.tsv``; fails clearly if stage 01 has not run."""
    path = corpus_dir(data) / "sentences.tsv"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run 01_sentences.py first")
    rows = []
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        if header != ["id", "split", "text"]:
            raise SystemExit(f"{path}: unexpected header {header}")
        for line in handle:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                rows.append((parts[0], parts[1], parts[2]))
    return rows


def read_phones(path: str | Path) -> list[tuple[str, float, float]]:
    """Rows (phone, start_s, end_s) of a phones tsv written by stage 02."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        handle.readline()
        for line in handle:
            p, s, e = line.rstrip("\n").split("\t")
            rows.append((p, float(s), float(e)))
    return rows


def frames_per_token(durations_s, frame_rate: float, num_frames: int):
    """Seconds per token -> integer frames per token summing to ``num_frames`` (cumulative rounding, so rounding
    errors never accumulate along an utterance). Shared by the corpus's stage 06 and the natural corpus's stage 04."""
    import numpy as np

    ends = np.rint(np.cumsum(durations_s) * frame_rate).astype(np.int64)
    ends = np.clip(ends, 0, num_frames)
    ends[-1] = num_frames
    return np.diff(np.concatenate([[0], ends])).astype(np.int64)


class Timer:
    """Wall-clock timer for the README's per-stage build times."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    @property
    def seconds(self) -> float:
        return round(time.monotonic() - self.start, 1)
