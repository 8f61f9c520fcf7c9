"""`audiopd serve`: a real process on a tiny voice artifact, clean Ctrl-C/SIGTERM shutdown, usage errors."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest
from serve_fixtures import VOICES
from voice_fixtures import tiny_voice

from audiopd.artifacts import DEFAULT_VOICE
from audiopd.cli import main
from audiopd.codec.fixture import write_fixture_artifact
from audiopd.model.voice import save_voice
from audiopd.serve.server import WARM_UP_TEXT, bind, run


@pytest.fixture
def artifacts(tmp_path, monkeypatch) -> dict[str, str]:
    """A tiny voice named ``DEFAULT_VOICE`` and its fixture codec on temporary artifact search paths."""
    write_fixture_artifact(tmp_path / "codecs" / "fx")
    save_voice(tiny_voice(VOICES), tmp_path / "voices" / DEFAULT_VOICE)
    env = {"AUDIOPD_CODECS_PATH": str(tmp_path / "codecs"), "AUDIOPD_VOICES_PATH": str(tmp_path / "voices")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.mark.parametrize("sig, inherited_ignore", [(signal.SIGINT, False), (signal.SIGTERM, False),
                                                   (signal.SIGINT, True)])
def test_serve_prints_its_url_answers_and_stops_cleanly(artifacts, sig, inherited_ignore) -> None:
    """Ctrl-C and SIGTERM stop the server cleanly, also when started from a job that ignores SIGINT."""
    env = {**os.environ, **artifacts, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "audiopd.cli", "serve", "--port", "0", "--voice", "bob", "--threads", "1"]
    if inherited_ignore:  # what a shell does to a background job: SIGINT ignored, and exec keeps it so
        cmd = ["sh", "-c", 'trap "" INT; exec "$0" "$@"', *cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()  # blocks until the voice is loaded and the socket bound
        assert "serving at http://127.0.0.1:" in line, (line, proc.poll())
        url = line.split("serving at ")[1].split()[0]
        with urllib.request.urlopen(url + "health", timeout=30) as resp:
            health = json.loads(resp.read())
        assert health["voice"] == DEFAULT_VOICE and health["speaker"] == "bob" and health["sample_rate"] == 16000
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "shutting down" in out and "Traceback" not in err
    assert "GET /health" in err  # the access log


def test_signal_handlers_are_in_place_when_the_ready_line_is_printed(synth) -> None:
    """The "serving at" line means ready: a service manager's SIGTERM sent at once must shut down cleanly."""
    sock = bind("127.0.0.1", 0)
    seen: dict[str, object] = {}

    class Out(io.StringIO):
        def write(self, text: str) -> int:
            if "serving at" in text:
                seen["sigterm"] = signal.getsignal(signal.SIGTERM)
                os.kill(os.getpid(), signal.SIGTERM)
            return super().write(text)

    before = signal.getsignal(signal.SIGTERM)
    out = Out()
    assert run(sock, lambda: (synth, None), out=out) == 0
    handler = seen["sigterm"]
    assert callable(handler) and handler not in (signal.SIG_DFL, signal.SIG_IGN, before), handler
    assert signal.getsignal(signal.SIGTERM) == before  # restored on the way out
    assert "shutting down" in out.getvalue()


def test_the_port_is_bound_before_the_voice_loads(synth) -> None:
    """Finding: the port was bound only after the model loaded; now /healthz answers 503 "loading" meanwhile."""
    sock = bind("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    release, answers = threading.Event(), {}

    def slow_loader():
        for path in ("/healthz", "/health"):
            try:
                urllib.request.urlopen(url + path, timeout=10)
            except urllib.error.HTTPError as err:
                answers[path] = (err.code, json.loads(err.read())["status"])
        with socket.socket() as other:  # the port is taken while loading
            answers["bind"] = other.connect_ex(("127.0.0.1", sock.getsockname()[1])) == 0
        release.set()
        return synth, None

    class Out(io.StringIO):
        def write(self, text: str) -> int:
            if "serving at" in text:  # printed from the server's event loop: ask from another thread
                threading.Thread(target=ready_then_stop, daemon=True).start()
            return super().write(text)

    def ready_then_stop() -> None:
        with urllib.request.urlopen(url + "/healthz", timeout=10) as resp:
            answers["ready"] = json.loads(resp.read())["status"]
        os.kill(os.getpid(), signal.SIGINT)

    assert run(sock, slow_loader, out=Out()) == 0
    assert answers == {"/healthz": (503, "loading"), "/health": (503, "loading"), "bind": True, "ready": "ok"}


def test_the_server_speaks_once_before_it_says_it_is_ready(synth, monkeypatch) -> None:
    """Warm-up: no client pays for the first call's set-up (on the natural voice a fresh server's slowest first
    byte of five auto requests was 265-466 ms without it, 149-155 ms with it)."""
    calls: list[tuple[str, str]] = []
    inner = synth.synthesize

    def recorded(text, **kw):
        calls.append((text, kw.get("mode")))
        return inner(text, **kw)

    monkeypatch.setattr(synth, "synthesize", recorded)
    seen: dict = {}

    class Out(io.StringIO):
        def write(self, text: str) -> int:
            if "serving at" in text:
                seen["calls"] = list(calls)
                threading.Thread(target=lambda: os.kill(os.getpid(), signal.SIGINT), daemon=True).start()
            return super().write(text)

    assert run(bind("127.0.0.1", 0), lambda: (synth, None), out=Out()) == 0
    assert seen["calls"] == [(WARM_UP_TEXT, "auto")]


@pytest.mark.parametrize("argv, needle", [
    (["serve", "--port", "70000"], "--port 70000 is out of range"),
    (["serve", "--max-chars", "0"], "--max-chars must be >= 1"),
    (["serve", "--threads", "0"], "--threads must be >= 1"),
    (["serve", "--port", "x"], "invalid int value"),
    (["serve", "--voice", "carol"], "unknown voice 'carol'"),
    (["serve", "--lexicon", "/nonexistent/my.dict"], "lexicon /nonexistent/my.dict: No such file"),
])
def test_serve_usage_errors_exit_2_with_one_line(artifacts, capsys, argv, needle: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("audiopd: error: ") and err.count("\n") == 1 and needle in err, err


def test_serve_on_a_busy_port_is_a_one_line_error(artifacts, capsys) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert main(["serve", "--port", str(busy.getsockname()[1])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("audiopd: error: cannot listen on 127.0.0.1:") and err.count("\n") == 1, err


def test_serve_is_listed_in_help(capsys) -> None:
    assert main(["--help"]) == 0
    assert "serve" in capsys.readouterr().out
