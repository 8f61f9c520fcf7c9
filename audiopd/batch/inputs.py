"""Rows to render, read from ``.txt``, ``.csv``, ``.tsv``, ``.jsonl`` or stdin (``-``).

* ``.txt``: a line per utterance; the id is the 1-based line number, zero-padded to 6 digits so ids stay
  stable (and sort) as a file grows. Blank lines separate paragraphs and are not rows.
* ``.csv`` / ``.tsv``: a header naming ``id`` and ``text`` and optionally ``voice,mode,steps,seed,speed``;
  an empty cell means "the command line's value". Any other column is refused (a typo must not be ignored).
* ``.jsonl``: an object per line with ``id``, ``text`` and optionally the same keys (a number id is taken as
  its digits).
* ``-``: stdin, read as JSON lines when its first non-blank line starts with ``{``, else as text lines.

A bad field, an unsafe id or unspeakable text makes that row a bad row (``Row.error``), never the whole run;
a malformed file (no header, an unknown column) or two rows with one id is a usage error before any work.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audiopd.errors import AudiopdError, NothingToSpeakError

if TYPE_CHECKING:
    from audiopd.text.lexicon import Lexicon

FORMATS = ("txt", "csv", "tsv", "jsonl")
FIELDS = ("id", "text", "voice", "mode", "steps", "seed", "speed")
MODES = ("auto", "parallel", "serial")  # the facade's (audiopd.synthesis.auto.MODES), kept torch-free here
SPEED_RANGE = (0.25, 4.0)  # the facade's (audiopd.pipeline.SPEED_RANGE)
# Room for the extension and the temporary-file prefix/suffix within the usual 255-byte name limit.
MAX_ID_BYTES = 200


class InputError(AudiopdError):
    """The input file cannot be read as rows (missing, undecodable, bad header, duplicate ids)."""


@dataclass(frozen=True)
class Row:
    """One utterance. ``None`` fields take the command line's value; ``error`` marks a bad row."""

    index: int  # position among the rows, 0-based
    line: int  # 1-based line (record) number in the input, for messages
    id: Any  # as given; a str for every row without an error
    text: str
    voice: str | None = None
    mode: str | None = None
    steps: int | None = None
    seed: int | None = None
    speed: float | None = None
    error: str | None = None


def id_problem(row_id: Any) -> str | None:
    """Why ``row_id`` is not a safe file name (None if it is): nothing may be written outside OUTDIR."""
    if not isinstance(row_id, str):
        return f"id must be a string, got {type(row_id).__name__}"
    if not row_id.strip():
        return "empty id"
    if "/" in row_id or "\\" in row_id:
        return f"id {row_id!r} holds a path separator"
    if row_id.startswith("."):  # "." and "..", hidden files, and the renderer's own ".<id>.*.tmp" names
        return f"id {row_id!r} starts with '.'"
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in row_id):
        return f"id {row_id!r} holds a control character"
    if len(row_id.encode("utf-8")) > MAX_ID_BYTES:
        return f"id is longer than {MAX_ID_BYTES} bytes"
    return None


def detect_format(source: str, text: str | None = None) -> str:
    """The input format from the file suffix, or for stdin from its first non-blank line."""
    if source == "-":
        first = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
        return "jsonl" if first.startswith("{") else "txt"
    suffix = Path(source).suffix.lower().lstrip(".")
    if suffix in FORMATS:
        return suffix
    if suffix == "json":
        return "jsonl"
    raise InputError(f"{source}: cannot tell the input format from the suffix {Path(source).suffix or '(none)'!r}; "
                     f"use one of {', '.join('.' + f for f in FORMATS)} or --input-format")


def read_source(source: str) -> str:
    if source == "-":
        try:
            return sys.stdin.read()
        except UnicodeDecodeError as exc:
            raise InputError(f"stdin is not valid UTF-8 text ({exc.reason})") from None
    path = Path(source)
    if not path.is_file():
        raise InputError(f"{source}: no such file")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not valid UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{source}: cannot read ({exc.strerror or exc})") from None


def read_rows(source: str, fmt: str | None = None, lexicon: Lexicon | None = None) -> list[Row]:
    """Parse ``source`` (a path or ``-``) into rows, checking each (their text as the frontend with ``lexicon``
    reads it); duplicate ids raise ``InputError``."""
    text = read_source(source)
    fmt = fmt or detect_format(source, text)
    if fmt not in FORMATS:
        raise InputError(f"unknown input format {fmt!r}; use one of {', '.join(FORMATS)}")
    records = {"txt": _txt_records, "jsonl": _jsonl_records}.get(fmt)
    raw = records(text) if records else _table_records(text, "," if fmt == "csv" else "\t", source)
    rows = [_check(i, line, rec, err, lexicon) for i, (line, rec, err) in enumerate(raw)]
    _refuse_duplicates(rows)
    return rows


def _txt_records(text: str):
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield n, {"id": f"{n:06d}", "text": line.strip()}, None


def _jsonl_records(text: str):
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            yield n, {}, f"line {n} is not JSON ({exc.msg})"
            continue
        if not isinstance(obj, dict):
            yield n, {}, f"line {n} is a JSON {type(obj).__name__}, not an object"
            continue
        unknown = sorted(set(obj) - set(FIELDS))
        yield n, obj, (f"unknown field(s) {', '.join(unknown)} (known: {', '.join(FIELDS)})" if unknown else None)


def _table_records(text: str, delimiter: str, source: str):
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = reader.fieldnames
    except csv.Error as exc:
        raise InputError(f"{source}: unreadable header ({exc})") from None
    if not header:
        raise InputError(f"{source}: empty file, expected a header with id{delimiter}text")
    header = [h.strip() for h in header]
    reader.fieldnames = header
    missing = [f for f in ("id", "text") if f not in header]
    unknown = [h for h in header if h not in FIELDS]
    if missing or unknown or len(set(header)) != len(header):
        problem = (f"missing column(s) {', '.join(missing)}" if missing else
                   f"unknown column(s) {', '.join(unknown)}" if unknown else "a repeated column")
        raise InputError(f"{source}: the header has {problem}; columns are {', '.join(FIELDS)} (id and text "
                         "required)")
    try:
        for rec in reader:
            line = reader.line_num
            if None in rec or any(v is None for v in rec.values()):  # more or fewer cells than the header
                cells = {k: v for k, v in rec.items() if k is not None and v is not None}
                yield line, cells, f"line {line} has {'more' if None in rec else 'fewer'} cells than the header"
                continue
            # An empty optional cell means "not given"; id and text stay as given (empty is a bad row).
            yield line, {k: v for k, v in rec.items() if k in ("id", "text") or v.strip()}, None
    except csv.Error as exc:
        raise InputError(f"{source}: line {reader.line_num}: {exc}") from None


def _check(index: int, line: int, rec: dict, error: str | None, lexicon: Lexicon | None = None) -> Row:
    """A Row from one record; the first problem found becomes its ``error``."""
    row_id = rec.get("id")
    if isinstance(row_id, int) and not isinstance(row_id, bool):
        row_id = str(row_id)  # documented normalisation: a JSON number id names the file by its digits
    text = rec.get("text")
    row = Row(index=index, line=line, id=row_id, text=text if isinstance(text, str) else "")
    problem = error or id_problem(row_id)
    if problem is None and not isinstance(text, str):
        problem = "text must be a string" if "text" in rec else "no text"
    fields: dict[str, Any] = {}
    for key, parse in (("voice", _voice), ("mode", _mode), ("steps", _steps), ("seed", _seed), ("speed", _speed)):
        if problem is None and rec.get(key) is not None:
            try:
                fields[key] = parse(rec[key])
            except ValueError as exc:
                problem = f"{key}: {exc}"
    if problem is None:
        problem = text_problem(text, lexicon)
    return replace(row, **fields, error=problem)


def text_problem(text: str, lexicon: Lexicon | None = None) -> str | None:
    """Why ``text`` cannot be spoken (None if it can), from the text frontend the facade uses (with the render's
    ``lexicon``: a lexicon word is never spelled out, so the spelling limit spares it)."""
    from audiopd.text import phonemize

    try:
        phonemize(text, lexicon=lexicon)
    except NothingToSpeakError as exc:
        return str(exc) or "nothing to speak"
    except AudiopdError as exc:
        return str(exc)
    return None


def _voice(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"must be a speaker name, got {v!r}")
    return v.strip()


def _mode(v: Any) -> str:
    if not isinstance(v, str) or v.strip() not in MODES:
        raise ValueError(f"must be one of {', '.join(MODES)}, got {v!r}")
    return v.strip()


def _int(v: Any, lo: int, hi: int | None) -> int:
    if isinstance(v, str):
        try:
            v = int(v.strip())
        except ValueError:
            raise ValueError(f"must be an integer, got {v!r}") from None
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        raise ValueError(f"must be an integer in {lo}..{hi if hi is not None else ''}, got {v!r}")
    return v


def _steps(v: Any) -> int:
    return _int(v, 1, 256)


def _seed(v: Any) -> int:
    return _int(v, 0, 2**63 - 1)


def _speed(v: Any) -> float:
    try:
        f = float(v.strip()) if isinstance(v, str) else float(v) if isinstance(v, (int, float)) else math.nan
    except ValueError:
        f = math.nan
    if isinstance(v, bool) or not SPEED_RANGE[0] <= f <= SPEED_RANGE[1]:
        raise ValueError(f"must be a number in {SPEED_RANGE[0]}..{SPEED_RANGE[1]}, got {v!r}")
    return f


def _refuse_duplicates(rows: list[Row]) -> None:
    seen: dict[str, int] = {}
    for row in rows:
        if not isinstance(row.id, str):
            continue
        if row.id in seen:
            raise InputError(f"id {row.id!r} appears twice (lines {seen[row.id]} and {row.line}); ids name the "
                             "output files, so they must be unique")
        seen[row.id] = row.line


def select_shard(rows: list[Row], shard: tuple[int, int] | None) -> list[Row]:
    """Rows of shard I of N: every N-th row from the I-th (0-based) in input order, so shards are disjoint,
    cover every row, and do not depend on the machine or the order shards run in."""
    if shard is None:
        return rows
    i, n = shard
    return [r for r in rows if r.index % n == i]


def parse_shard(spec: str) -> tuple[int, int]:
    """``I/N`` with 0 <= I < N."""
    try:
        i_s, n_s = spec.split("/")
        i, n = int(i_s), int(n_s)
    except ValueError:
        raise InputError(f"--shard {spec!r}: expected I/N, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise InputError(f"--shard {spec!r}: need N >= 1 and 0 <= I < N")
    return i, n
