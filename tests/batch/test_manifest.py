"""The render directory's crash-safe writes and manifest (audiopd.batch.manifest)."""

from __future__ import annotations

import hashlib
import json

import pytest

from audiopd.batch.manifest import (Manifest, ManifestError, read_manifest, remove_temp_files, sha256_file,
                                     write_durable)


def ok_entry(outdir, row_id, data=b"RIFF....audio"):
    write_durable(outdir / f"{row_id}.wav", data)
    return {"id": row_id, "status": "ok", "path": f"{row_id}.wav", "sha256": hashlib.sha256(data).hexdigest()}


def test_write_durable_replaces_and_leaves_no_temp(tmp_path):
    write_durable(tmp_path / "a.wav", b"one")
    write_durable(tmp_path / "a.wav", b"two")
    assert (tmp_path / "a.wav").read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.wav"]
    assert sha256_file(tmp_path / "a.wav") == hashlib.sha256(b"two").hexdigest()


def test_append_then_reopen_keeps_intact_ok_entries(tmp_path):
    with Manifest(tmp_path) as m:
        m.append(ok_entry(tmp_path, "a"))
        m.append({"id": "b", "status": "error", "error": "bad"})
        m.append(ok_entry(tmp_path, "c"))
    (tmp_path / "c.wav").write_bytes(b"changed behind our back")
    with Manifest(tmp_path) as m:
        assert list(m.entries) == ["a"]  # error lines are retried; c's file no longer matches
    assert [e["id"] for e in read_manifest(tmp_path / "manifest.jsonl")] == ["a"]


def test_torn_last_line_is_dropped_and_file_repaired(tmp_path):
    with Manifest(tmp_path) as m:
        m.append(ok_entry(tmp_path, "a"))
        m.append(ok_entry(tmp_path, "b"))
    path = tmp_path / "manifest.jsonl"
    raw = path.read_bytes()
    path.write_bytes(raw[:-20])  # a kill in the middle of the second line's write
    with Manifest(tmp_path) as m:
        assert list(m.entries) == ["a"] and m.dropped_torn_line
        m.append(ok_entry(tmp_path, "b"))
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == ["a", "b"]


def test_damaged_middle_line_is_refused(tmp_path):
    entry = ok_entry(tmp_path, "a")
    (tmp_path / "manifest.jsonl").write_text("garbage\n" + json.dumps(entry) + "\n")
    with pytest.raises(ManifestError, match="line 1"):
        Manifest(tmp_path).open()


def test_later_line_for_an_id_wins_and_forget_rewrites(tmp_path):
    first = ok_entry(tmp_path, "a", b"first")
    second = ok_entry(tmp_path, "a", b"second")
    (tmp_path / "manifest.jsonl").write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    with Manifest(tmp_path) as m:
        assert m.entries["a"]["sha256"] == second["sha256"]
        m.forget(["a"])
        m.append({"id": "a", "status": "error", "error": "x"})
    assert [e["status"] for e in read_manifest(tmp_path / "manifest.jsonl")] == ["error"]


def test_entry_pointing_outside_outdir_is_not_trusted(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "secret.wav").write_bytes(b"x")
    entry = {"id": "s", "status": "ok", "path": "../secret.wav", "sha256": hashlib.sha256(b"x").hexdigest()}
    (out / "manifest.jsonl").write_text(json.dumps(entry) + "\n")
    with Manifest(out) as m:
        assert m.entries == {}


def test_second_writer_is_locked_out(tmp_path):
    with Manifest(tmp_path):
        with pytest.raises(ManifestError, match="another render"):
            Manifest(tmp_path).open()
    with Manifest(tmp_path):  # released on close
        pass


def test_remove_temp_files_only_for_the_given_names(tmp_path):
    for name in (".a.wav.1a2b3c4d.tmp", ".b.wav.99999999.tmp", ".a.wav.lock", "a.wav"):
        (tmp_path / name).write_bytes(b"x")
    assert remove_temp_files(tmp_path, ["a.wav"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".a.wav.lock", ".b.wav.99999999.tmp", "a.wav"]
