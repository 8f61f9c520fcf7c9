"""`audiopd render` killed with SIGKILL at random moments, then resumed: 0 lost, 0 corrupt, 0 duplicated rows.

The render runs in a subprocess on the tiny fixture voice (voice_fixtures), in small calls (--batch-rows 3) so
files and manifest lines are written all the time and a kill lands among them. After every kill the directory
must already be consistent (each manifest line names a complete file with its sha256; every file under a final
name is complete), and a last uninterrupted run must finish the input with one line per row and no temp file.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import soundfile as sf
from voice_fixtures import expected_samples, install_voices

from audiopd.artifacts import DEFAULT_VOICE
from audiopd.batch.manifest import read_manifest, sha256_file

WORDS = ("red green blue quick brown fox jumps over the lazy dog in a small house near the river bank "
         "every morning light").split()
KILLS = 5


def _rows(n: int) -> list[dict]:
    rng = random.Random(7)
    return [{"id": f"u{i:04d}", "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))) + "."}
            for i in range(n)]


def _start(src, out):
    cmd = [sys.executable, "-m", "audiopd.cli", "render", str(src), "-o", str(out), "--mode", "parallel",
           "--batch-rows", "3", "--seed", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _lines(out) -> int:
    try:
        return (out / "manifest.jsonl").read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _assert_consistent(out, texts: dict[str, str]) -> list[dict]:
    entries = read_manifest(out / "manifest.jsonl") if (out / "manifest.jsonl").exists() else []
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "a row appears twice in the manifest"
    for e in entries:
        assert e["status"] == "ok" and sha256_file(out / e["path"]) == e["sha256"], e["id"]
    for wav in out.glob("*.wav"):  # final names only (temp files start with '.')
        audio, _ = sf.read(wav)
        assert audio.size == expected_samples(texts[wav.stem]), f"{wav.name} is partial"
    return entries


def test_sigkill_at_random_moments_then_resume(tmp_path, monkeypatch):
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("slt", "rms")})
    rows = _rows(300)
    texts = {r["id"]: r["text"] for r in rows}
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    rng = random.Random(20261202)
    kills = 0
    for _ in range(KILLS):
        before = _lines(out)
        proc = _start(src, out)
        # Wait until this run has written something new (the voice has loaded), then a random moment more.
        deadline = time.monotonic() + 120
        while _lines(out) <= before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        kills += proc.returncode == -signal.SIGKILL
        proc.stderr.close()
        _assert_consistent(out, texts)
    assert kills == KILLS, "a run finished before its kill: the input is too small to test resuming"
    assert _lines(out) < len(rows)

    proc = _start(src, out)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    entries = _assert_consistent(out, texts)
    assert sorted(e["id"] for e in entries) == sorted(texts)  # 0 lost, 0 duplicated
    assert sorted(p.name for p in out.iterdir()) == sorted([".manifest.jsonl.lock", "manifest.jsonl"]
                                                           + [f"{i}.wav" for i in texts])  # no temp files
