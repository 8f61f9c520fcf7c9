"""``audiopd say ... -o -`` writes the WAV to stdout and nothing else (finding of the server probe)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import soundfile as sf
from voice_fixtures import expected_samples, install_voices

from audiopd.artifacts import DEFAULT_VOICE
from audiopd.cli import main
from audiopd.pipeline import Synthesizer

TEXT = "Hello there, how are you?"


def test_say_to_stdout_in_a_pipe(tmp_path, monkeypatch) -> None:
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("alice", "bob")})
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "audiopd.cli", "say", TEXT, "-o", "-", "--mode", "parallel",
                           "--seed", "3", "--timestamps", str(tmp_path / "t.srt")],
                          capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    audio, rate = sf.read(io.BytesIO(proc.stdout), dtype="float32")
    assert rate == 16000 and audio.size == expected_samples(TEXT)
    assert (tmp_path / "t.srt").read_text().startswith("1\n")


def test_nothing_but_the_wav_reaches_stdout(tmp_path, monkeypatch, capfdbinary) -> None:
    """Whatever the voice, the checker or a C library prints while speaking goes to stderr, not into the WAV."""
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("alice", "bob")})
    inner = Synthesizer.synthesize

    def chatty(self, *args, **kwargs):
        print("chatter from python")
        os.write(1, b"chatter from C\n")
        return inner(self, *args, **kwargs)

    monkeypatch.setattr(Synthesizer, "synthesize", chatty)
    assert main(["say", TEXT, "-o", "-", "--mode", "parallel", "--seed", "1"]) == 0
    out, err = capfdbinary.readouterr()
    assert out[:4] == b"RIFF" and sf.info(io.BytesIO(out)).frames == expected_samples(TEXT)
    assert b"chatter from python" in err and b"chatter from C" in err


def test_stdout_and_a_file_name_still_refuse_non_wav(capsys) -> None:
    assert main(["say", "hi", "-o", "x.mp3"]) == 2
    assert "must end in .wav or .flac" in capsys.readouterr().err
