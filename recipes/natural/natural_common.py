"""Shared plumbing for the natural corpus stages: data layout, done-markers, voices, the text table.

Stage scripts have numeric names (``01_text.py``) so each puts this folder on ``sys.path`` and imports this
module. The atomic-write helpers are the corpus recipe's (``recipes/corpus/corpus_common.py``); the layout
differs: DATA is the natural corpus root itself (``DATA/text.tsv``, ``DATA/wav/<voice>/<id>.wav``,
``DATA/manifest.jsonl``, ``DATA/.done-NN``), so ``--data /somewhere/natural`` keeps it apart from the flite corpus.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "corpus"))
from corpus_common import Timer, atomic_write_text, read_jsonl, temp_path_for, write_jsonl  # noqa: E402,F401

# Kokoro's six named in issue 23 plus two more (one American, one British, for accent balance), and Piper joe.
DEFAULT_VOICES: tuple[str, ...] = (
    "kokoro:af_heart", "kokoro:af_bella", "kokoro:am_michael", "kokoro:am_adam", "kokoro:bf_emma",
    "kokoro:bm_george", "kokoro:af_nicole", "kokoro:bm_lewis", "piper:joe",
)
TEXT_COLUMNS = ("id", "split", "kind", "text", "written")
SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class TextRow:
    """One sentence: ``text`` is the normalised spoken form every teacher reads, ``written`` the source form."""

    id: str
    split: str
    kind: str
    text: str
    written: str


def stage_args(description: str, argv: list[str] | None = None, extra=None, *,
               default_data: str = "data/natural") -> argparse.Namespace:
    """A stage's options: ``--data`` (its data root), ``--force``, and whatever ``extra(parser)`` adds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", default=default_data, help=f"the recipe's data root (default: ./{default_data})")
    parser.add_argument("--force", action="store_true", help="redo the stage even when it is marked done")
    if extra is not None:
        extra(parser)
    return parser.parse_args(argv)


def done_marker(data: str | Path, stage: str) -> Path:
    return Path(data) / f".done-{stage}"


def is_done(data: str | Path, stage: str) -> bool:
    return done_marker(data, stage).is_file()


def mark_done(data: str | Path, stage: str, info: dict) -> None:
    """Written last, so an interrupted stage is never taken for a finished one."""
    atomic_write_text(done_marker(data, stage), json.dumps(info, indent=1, sort_keys=True) + "\n")


def done_voices(data: str | Path, stage: str) -> set[str]:
    """The voices a stage's done marker covers (a stage run on some voices is done for those only)."""
    if not is_done(data, stage):
        return set()
    return set(json.loads(done_marker(data, stage).read_text(encoding="utf-8")).get("voices", ()))


def voice_dir_name(voice: str) -> str:
    """``kokoro:af_heart`` -> ``kokoro_af_heart`` (a folder name)."""
    return voice.replace(":", "_")


def write_text_table(path: str | Path, rows: list[TextRow]) -> Path:
    lines = ["\t".join(TEXT_COLUMNS)]
    for row in rows:
        fields = [row.id, row.split, row.kind, row.text, row.written]
        if any("\t" in f or "\n" in f for f in fields):
            raise ValueError(f"row {row.id} holds a tab or newline")
        lines.append("\t".join(fields))
    return atomic_write_text(path, "\n".join(lines) + "\n")


def read_text_table(data: str | Path) -> list[TextRow]:
    """Rows of ``DATA/text.tsv``; a missing table says which stage to run."""
    path = Path(data) / "text.tsv"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run recipes/natural/01_text.py --data {data} first")
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = tuple(next(reader))
        if header != TEXT_COLUMNS:
            raise SystemExit(f"{path}: unexpected header {header}")
        return [TextRow(*fields) for fields in reader if len(fields) == len(TEXT_COLUMNS)]
