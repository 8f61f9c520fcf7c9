"""The render directory: audio files written crash-safely and ``manifest.jsonl``, a line per row.

Crash safety (SIGKILL included) rests on three habits:

* an audio file is written to ``.<id>.<ext>.<random>.tmp``, fsync'd, then ``os.replace``d onto its final
  name and the directory fsync'd, so a final name never holds a partial file;
* a manifest line is appended only after its file is in place, with one ``write`` + flush + fsync, so at
  most the last line can be torn;
* a new run reads the manifest, drops a torn last line, keeps the ``ok`` entries whose file still matches
  their sha256 and rewrites the manifest with just those (atomically); every other row of the input is
  rendered again and appended. So the manifest never holds two lines for one id.

One render at a time per manifest: an exclusive ``flock`` on ``.<manifest>.lock`` (released by the kernel
when the process dies, so a killed run never leaves a stale lock).
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from audiopd.artifacts import sha256_file
from audiopd.errors import AudiopdError

MANIFEST = "manifest.jsonl"
TMP_SUFFIX = ".tmp"


class ManifestError(AudiopdError):
    """The output directory or its manifest cannot be used (locked, corrupt, not writable)."""


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durable(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that after a crash ``path`` is either absent/old or complete."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}{TMP_SUFFIX}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def remove_temp_files(outdir: Path, names: Iterable[str]) -> int:
    """Delete leftover ``.<name>.*.tmp`` files of killed runs for the given final file names; returns how many.

    Only the names of this run's rows: shards of one input may share OUTDIR and must not delete each other's
    files in flight.
    """
    wanted = {f".{n}." for n in names}
    removed = 0
    for entry in os.scandir(outdir):
        name = entry.name
        if not (name.startswith(".") and name.endswith(TMP_SUFFIX)):
            continue
        cut = name[: -len(TMP_SUFFIX)].rfind(".")
        if cut > 0 and name[: cut + 1] in wanted:
            os.unlink(entry.path)
            removed += 1
    return removed


class Manifest:
    """``OUTDIR/<name>`` opened for a run: previous entries loaded and compacted, then appended line-wise."""

    def __init__(self, outdir: Path, name: str = MANIFEST) -> None:
        self.outdir = outdir
        self.path = outdir / name
        self._lock_fd: int | None = None
        self._fd: int | None = None
        self.entries: dict[str, dict[str, Any]] = {}  # kept ok entries by id, in file order
        self.dropped_torn_line = False

    # ------------------------------------------------------------------------------ open / close
    def open(self) -> Manifest:
        self.outdir.mkdir(parents=True, exist_ok=True)
        lock = self.outdir / f".{self.path.name}.lock"
        self._lock_fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise ManifestError(f"another render is writing {self.path} (lock {lock} is held)") from None
        self._load()
        return self

    def close(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._lock_fd = None

    def __enter__(self) -> Manifest:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------------------- reading
    def _load(self) -> None:
        if not self.path.exists():
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
            fsync_dir(self.outdir)
            return
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        last = len(lines) - 1
        entries: dict[str, dict[str, Any]] = {}
        for n, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                if not isinstance(entry, dict):
                    raise ValueError("not an object")
            except ValueError:
                # Only the last line can be torn by a crash (it lacks its newline); anything else is damage
                # this program did not do, and guessing could lose rows.
                if n == last:
                    self.dropped_torn_line = True
                    continue
                raise ManifestError(f"{self.path} line {n + 1} is not a JSON object; repair or remove that "
                                    "line (or the file) and run again") from None
            if entry.get("status") == "ok" and isinstance(entry.get("id"), str):
                entries.pop(entry["id"], None)
                entries[entry["id"]] = entry
        # Keep only entries whose file is present and intact; the rest get rendered again.
        self.entries = {k: e for k, e in entries.items() if self._intact(e)}
        kept = b"".join(_line(e) for e in self.entries.values())
        if kept != raw:
            write_durable(self.path, kept)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def _intact(self, entry: dict[str, Any]) -> bool:
        rel = entry.get("path")
        if not isinstance(rel, str) or not isinstance(entry.get("sha256"), str):
            return False
        path = self.outdir / rel
        if path.parent != self.outdir or not path.is_file():
            return False
        return sha256_file(path) == entry["sha256"]

    # ---------------------------------------------------------------------------------- writing
    def forget(self, ids: Iterable[str]) -> None:
        """Drop the entries of rows about to be rendered again (the input row changed), rewriting atomically."""
        ids = [i for i in ids if i in self.entries]
        if not ids:
            return
        for i in ids:
            del self.entries[i]
        write_durable(self.path, b"".join(_line(e) for e in self.entries.values()))
        if self._fd is not None:  # the old descriptor points at the replaced file
            os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def append(self, entry: dict[str, Any]) -> None:
        """Append one entry durably (a single write, then fsync)."""
        if self._fd is None:
            raise ManifestError("manifest is not open")
        data = _line(entry)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        os.fsync(self._fd)
        if entry.get("status") == "ok" and isinstance(entry.get("id"), str):
            self.entries[entry["id"]] = entry


def _line(entry: dict[str, Any]) -> bytes:
    # ensure_ascii keeps each line free of raw control characters an id or text could carry.
    return (json.dumps(entry, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")


def read_manifest(path: str | Path) -> list[dict[str, Any]]:
    """Every complete line of a manifest (for tools and tests); a torn last line is ignored."""
    out = []
    for line in Path(path).read_bytes().split(b"\n"):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out
