"""Atomic file writes: a temp file in the target's folder, then a rename; and audio bytes on stdout that nothing else
can corrupt (``stdout_to_stderr``, ``write_fd``).

A failure (full disk, Ctrl-C, an exception in the writer) never leaves a partial or empty output behind, and
the result gets the permissions a plain ``open()`` would give (``mkstemp`` alone makes 0600 files).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

from audiopd.errors import AudiopdError


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``path`` to write; on success it replaces ``path``, on error it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def check_writable_dir(outdir: Path) -> None:
    """Prove ``outdir`` (or, if it does not exist yet, its nearest existing ancestor) takes files.

    Nothing is created here: a run that fails validation later must not leave an empty directory.
    A probe file is more honest than permission bits, which root and read-only mounts make lie.
    """
    existing = outdir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise AudiopdError(f"output directory {outdir} cannot be created: {existing} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".audiopd-probe-", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise AudiopdError(f"output directory {outdir} is not writable: {exc.strerror or exc}") from None


@contextmanager
def stdout_to_stderr(active: bool) -> Iterator[int | None]:
    """While loading and speaking, file descriptor 1 points at stderr, so that nothing a library prints (C
    libraries included) can corrupt WAV bytes written to stdout; yields the real stdout's descriptor."""
    if not active:
        yield None
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with redirect_stdout(sys.stderr):  # Python's own sys.stdout may not write to fd 1
            yield saved
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)


def write_fd(fd: int, data: bytes) -> None:
    """Write all of ``data`` to descriptor ``fd``, then close it (``stdout_to_stderr``'s saved stdout)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
