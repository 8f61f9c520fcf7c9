"""Versioned, checksummed artifact directories (codecs and voices).

An artifact directory holds a ``config.yaml`` with ``format_version`` and ``kind``, data files
(safetensors, never pickles) and a ``SHA256SUMS`` file in ``sha256sum`` format. Loaders verify every
listed checksum and reject versions they don't know, so a stale or corrupted download can't
silently produce different audio.
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

from audiopd.errors import ArtifactError

_REPO_ROOT = Path(__file__).resolve().parent.parent
# The voice ``audiopd.load()`` speaks with, and its first speaker (adam) the default speaker: the Kokoro-taught
# voice, whose adam is its most natural speaker (parallel WER 4.52%, DistillMOS 4.32 on the 226 test sentences,
# against heart's 4.58% / 4.12 and joe's 7.79% / 3.50, with its mel refiner and K <= 2, 2026-12-06; README.md,
# "How it sounds, beside its peers").
DEFAULT_VOICE = "natural"
# --voice's help, the same in every command that loads a voice (resolved by audiopd.cli._load_voice).
VOICE_HELP = (f"a shipped voice's name (default: {DEFAULT_VOICE}) or a path like ./myvoice, a speaker of a shipped "
              "voice (slt: the flite voice's), or VOICE:SPEAKER")


def require_format_version(found: object, supported: int | tuple[int, ...], *, what: str, where: str) -> None:
    """Raise ``ArtifactError`` unless ``found`` is a format version this audiopd reads."""
    known = supported if isinstance(supported, tuple) else (supported,)
    if found not in known:
        raise ArtifactError(
            f"{where}: {what} format_version {found!r} is not supported (this audiopd reads {', '.join(map(str, known))})"
        )


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_checksums(directory: Path) -> Path:
    """(Re)write ``SHA256SUMS`` for every regular file in ``directory`` except itself and README.md."""
    directory = Path(directory)
    lines = []
    for p in sorted(directory.iterdir()):
        if p.is_file() and p.name not in ("SHA256SUMS", "README.md"):
            lines.append(f"{sha256_file(p)}  {p.name}\n")
    out = directory / "SHA256SUMS"
    out.write_text("".join(lines))
    return out


def read_checksums(directory: Path) -> dict[str, str]:
    """File name -> sha256 digest of every line of ``directory``'s SHA256SUMS (blank lines skipped; {} without the
    file). It only reads: ``verify_checksums`` is what vouches for the files."""
    path = Path(directory) / "SHA256SUMS"
    if not path.is_file():
        return {}
    lines = (ln.partition("  ") for ln in path.read_text().splitlines() if ln.strip())
    return {name.strip(): digest.strip() for digest, _, name in lines}


def verify_checksums(directory: Path) -> None:
    """Raise ``ArtifactError`` unless every file listed in ``SHA256SUMS`` exists, lies inside ``directory`` and matches.

    An entry is a plain name relative to the artifact: an absolute name, a ``..`` part or a symlink that
    resolves outside the directory is rejected, so a crafted artifact cannot make the loader read (and
    vouch for) any other file on the machine.
    """
    directory = Path(directory)
    sums = directory / "SHA256SUMS"
    if not sums.is_file():
        raise ArtifactError(f"{directory}: SHA256SUMS is missing")
    for name, digest in read_checksums(directory).items():
        target = directory / _checked_entry(directory, name)
        if not target.is_file():
            raise ArtifactError(f"{directory}: {name} is listed in SHA256SUMS but missing")
        if sha256_file(target) != digest:
            raise ArtifactError(f"{directory}: checksum mismatch for {name} (corrupted or edited)")


def _checked_entry(directory: Path, name: str) -> str:
    """``name`` from SHA256SUMS if it stays inside ``directory`` (symlinks resolved), else ``ArtifactError``."""
    if not name:
        raise ArtifactError(f"{directory}: SHA256SUMS has a line without a file name")
    if os.path.isabs(name) or ".." in Path(name).parts:
        raise ArtifactError(f"{directory}: SHA256SUMS entry {name!r} points outside the artifact directory")
    if not (directory / name).resolve().is_relative_to(directory.resolve()):
        raise ArtifactError(f"{directory}: SHA256SUMS entry {name!r} resolves outside the artifact directory")
    return name


def search_path(kind: str) -> list[Path]:
    """Where artifacts of ``kind`` ("checkers", "codecs" or "voices") are looked up, in order.

    1. ``$AUDIOPD_<KIND>_PATH`` (``os.pathsep``-separated), for users' own artifacts;
    2. the copy installed inside the package (``audiopd/_assets/<kind>``);
    3. the source checkout's top-level ``<kind>/`` (editable installs and tests).
    """
    paths: list[Path] = []
    env = os.environ.get(f"AUDIOPD_{kind.upper()}_PATH")
    if env:
        paths.extend(Path(p) for p in env.split(os.pathsep) if p)
    try:
        installed = Path(str(resources.files("audiopd") / "_assets" / kind))
        if installed.is_dir():
            paths.append(installed)
    except (ModuleNotFoundError, TypeError):
        pass
    checkout = _REPO_ROOT / kind
    if checkout.is_dir():
        paths.append(checkout)
    return paths


def looks_like_path(spec: str) -> bool:
    """Whether an artifact argument names a directory rather than a shipped artifact.

    Only a spelled-out path counts (a separator as in ``./NAME``, ``.`` or ``..``, a leading ``~``, or an
    absolute path), so a folder in the working directory never shadows the shipped artifact of the same name.
    """
    seps = tuple(s for s in (os.sep, os.altsep) if s)
    return any(s in spec for s in seps) or spec in (".", "..") or spec.startswith("~") or os.path.isabs(spec)


def find_artifact(kind: str, name: str | os.PathLike[str]) -> Path:
    """Resolve a shipped artifact's name, or a directory path, or raise a clear error.

    A ``Path`` is a directory; so is a string that ``looks_like_path``. A bare name is looked up on
    ``search_path(kind)`` only, never in the working directory: to load a directory there, write ``./NAME``.
    """
    what = kind[:-1]
    if isinstance(name, os.PathLike) or looks_like_path(name):
        directory = Path(name).expanduser()
        if not (directory / "config.yaml").is_file():
            raise ArtifactError(f"no {what} artifact at {directory} (no directory with a config.yaml there)")
        return directory
    if not name:
        raise ArtifactError(f"empty {what} name")
    for root in search_path(kind):
        d = root / name
        if (d / "config.yaml").is_file():
            return d
    looked = ", ".join(str(p) for p in search_path(kind)) or "(nowhere)"
    raise ArtifactError(f"no {what} named {name!r}: looked in {looked} (a directory is named by a path, e.g. ./{name})")


def available(kind: str) -> list[str]:
    names: set[str] = set()
    for root in search_path(kind):
        for d in root.iterdir():
            if (d / "config.yaml").is_file():
                names.add(d.name)
    return sorted(names)
