"""Artifact lookup and checksum verification (audiopd/artifacts.py): names, paths and SHA256SUMS entries."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from audiopd import artifacts
from audiopd.artifacts import find_artifact, verify_checksums, write_checksums
from audiopd.errors import ArtifactError


def _artifact(directory: Path, note: str) -> Path:
    directory.mkdir(parents=True)
    (directory / "config.yaml").write_text(f"format_version: 1\nkind: voice\nnote: {note}\n")
    write_checksums(directory)
    return directory


@pytest.fixture
def shipped_and_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A shipped voice ``myvoice`` on the search path, and a working directory with its own ``myvoice`` folder."""
    shipped = _artifact(tmp_path / "shipped" / "myvoice", "shipped")
    work = tmp_path / "work"
    local = _artifact(work / "myvoice", "local")
    _artifact(work / "onlyhere", "local")
    monkeypatch.setenv("AUDIOPD_VOICES_PATH", str(tmp_path / "shipped"))
    monkeypatch.chdir(work)
    return shipped, local


def test_bare_name_is_never_the_working_directory(shipped_and_cwd: tuple[Path, Path]) -> None:
    shipped, _ = shipped_and_cwd
    assert find_artifact("voices", "myvoice").resolve() == shipped.resolve()


def test_bare_name_only_in_the_working_directory_is_not_found(shipped_and_cwd: tuple[Path, Path]) -> None:
    with pytest.raises(ArtifactError, match=r"no voice named 'onlyhere'.*\./onlyhere"):
        find_artifact("voices", "onlyhere")


@pytest.mark.parametrize("spec", ["./myvoice", "../work/myvoice"])
def test_spelled_out_path_names_the_directory(shipped_and_cwd: tuple[Path, Path], spec: str) -> None:
    _, local = shipped_and_cwd
    assert find_artifact("voices", spec).resolve() == local.resolve()


def test_path_objects_and_absolute_paths_name_the_directory(shipped_and_cwd: tuple[Path, Path]) -> None:
    _, local = shipped_and_cwd
    assert find_artifact("voices", Path("myvoice")).resolve() == local.resolve()
    assert find_artifact("voices", str(local)).resolve() == local.resolve()


def test_path_without_an_artifact_is_a_clear_error(shipped_and_cwd: tuple[Path, Path]) -> None:
    with pytest.raises(ArtifactError, match="no voice artifact at nowhere/myvoice"):
        find_artifact("voices", "nowhere/myvoice")


def test_cwd_folder_named_like_the_shipped_codec_does_not_replace_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from audiopd.codec import load_codec

    impostor = tmp_path / "world16k"
    impostor.mkdir()
    (impostor / "config.yaml").write_text("format_version: 1\nkind: impostor\n")
    monkeypatch.chdir(tmp_path)
    codec = load_codec("world16k")
    assert codec.sample_rate == 16000


@pytest.mark.parametrize(("spec", "is_path"), [
    ("default", False), ("world16k", False), ("default:rms", False), ("my.voice", False),
    ("./default", True), ("../voices/default", True), ("voices/default", True), ("/abs/voice", True),
    ("~/voices/mine", True), (".", True), ("..", True),
])
def test_looks_like_path(spec: str, is_path: bool) -> None:
    assert artifacts.looks_like_path(spec) is is_path


# ------------------------------------------------------------------------------------------ SHA256SUMS
def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def outside_file(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("not part of any artifact\n")
    return secret


def test_checksums_of_a_plain_artifact_verify(tmp_path: Path) -> None:
    d = _artifact(tmp_path / "voice", "plain")
    (d / "weights.bin").write_bytes(b"\x00\x01")
    write_checksums(d)
    verify_checksums(d)


@pytest.mark.parametrize("entry", ["../secret.txt", "sub/../../secret.txt"])
def test_checksum_entry_with_dotdot_is_rejected(tmp_path: Path, outside_file: Path, entry: str) -> None:
    d = _artifact(tmp_path / "voice", "dotdot")
    (d / "sub").mkdir()
    with open(d / "SHA256SUMS", "a") as f:
        f.write(f"{_digest(outside_file)}  {entry}\n")
    with pytest.raises(ArtifactError, match="outside the artifact directory"):
        verify_checksums(d)


def test_checksum_entry_with_absolute_name_is_rejected(tmp_path: Path, outside_file: Path) -> None:
    d = _artifact(tmp_path / "voice", "absolute")
    with open(d / "SHA256SUMS", "a") as f:
        f.write(f"{_digest(outside_file)}  {outside_file}\n")
    with pytest.raises(ArtifactError, match="outside the artifact directory"):
        verify_checksums(d)


def test_checksum_entry_through_an_outward_symlink_is_rejected(tmp_path: Path, outside_file: Path) -> None:
    d = _artifact(tmp_path / "voice", "symlink")
    (d / "weights.bin").symlink_to(outside_file)
    write_checksums(d)  # lists weights.bin with the outside file's digest
    assert "weights.bin" in (d / "SHA256SUMS").read_text()
    with pytest.raises(ArtifactError, match="resolves outside the artifact directory"):
        verify_checksums(d)


def test_checksum_entry_through_an_inward_symlink_is_accepted(tmp_path: Path) -> None:
    d = _artifact(tmp_path / "voice", "inward")
    (d / "data").mkdir()
    (d / "data" / "weights.bin").write_bytes(b"\x02")
    (d / "weights.bin").symlink_to(d / "data" / "weights.bin")
    write_checksums(d)
    verify_checksums(d)
