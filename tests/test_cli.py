"""The ``audiopd`` CLI: outputs of ``codec roundtrip``/``phonemize`` and the one-line error contract."""

from __future__ import annotations

import argparse
import io
import json
import sys

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from audiopd.cli import SUBCOMMANDS, main
from audiopd.codec.fixture import make_fixture_codec, write_fixture_artifact

SR = 16000


@pytest.fixture
def codecs_dir(tmp_path, monkeypatch) -> Path:
    """A temporary codec search path holding a fixture codec named ``fx``."""
    root = tmp_path / "codecs"
    write_fixture_artifact(root / "fx")
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(root))
    return root


def _wav(path: Path, seconds: float = 0.5, rate: int = SR, seed: int = 0, **kw) -> Path:
    rng = np.random.default_rng(seed)
    n = int(seconds * rate)
    t = np.arange(n) / rate
    audio = 0.3 * np.sin(2 * np.pi * 200 * t) + 0.02 * rng.standard_normal(n)
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), audio.astype(np.float32), rate, **kw)
    return path


def _files(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob("*") if p.is_file()) if d.exists() else []


def _assert_one_line_error(capsys, rc: int, *needles: str) -> str:
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("audiopd: error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


# ------------------------------------------------------------------------------ codec roundtrip
@pytest.mark.parametrize("levels", [None, 1, 2, 4])
def test_roundtrip_writes_decoded_audio(tmp_path, codecs_dir, capsys, levels) -> None:
    a = _wav(tmp_path / "in" / "a.wav", seconds=0.5, seed=1)
    b = _wav(tmp_path / "in" / "b.wav", seconds=0.31, seed=2)
    out = tmp_path / "out" / "nested"
    argv = ["codec", "roundtrip", str(a), str(b), "-o", str(out), "--codec", "fx"]
    if levels is not None:
        argv += ["--levels", str(levels)]
    assert main(argv) == 0
    assert capsys.readouterr().out.split() == [str(out / "a.wav"), str(out / "b.wav")]
    assert _files(out) == [out / "a.wav", out / "b.wav"]

    codec = make_fixture_codec()
    q = levels or codec.num_codebooks
    for src in (a, b):
        got, rate = sf.read(str(out / src.name), dtype="float32")
        audio, _ = sf.read(str(src), dtype="float32")
        assert rate == SR and got.shape == audio.shape  # trimmed back to the input's length
        expected = codec.decode(codec.encode(audio)[:, :q])[0, : audio.size]
        np.testing.assert_allclose(got, np.clip(expected, -1, 1), atol=1.5 / 32768)  # 16-bit PCM


def test_roundtrip_codec_by_directory_and_non_wav_input(tmp_path, codecs_dir) -> None:
    src = _wav(tmp_path / "speech.flac", format="FLAC")
    out = tmp_path / "out"
    assert main(["codec", "roundtrip", str(src), "-o", str(out), "--codec", str(codecs_dir / "fx")]) == 0
    # Output is always WAV, so it gets a .wav name.
    assert _files(out) == [out / "speech.wav"]
    assert sf.info(str(out / "speech.wav")).format == "WAV"


@pytest.mark.parametrize(
    "make_bad, needles",
    [
        (lambda d: d / "missing.wav", ["missing.wav", "no such file"]),
        (lambda d: _touch(d / "empty.wav", b""), ["empty.wav", "not a readable audio file"]),
        (lambda d: _touch(d / "text.wav", b"hello, I am not audio\n" * 50), ["text.wav", "not a readable audio file"]),
        (lambda d: _wav(d / "zero.wav", seconds=0.0), ["zero.wav", "no audio samples"]),
        (lambda d: _wav(d / "rate.wav", rate=8000), ["rate.wav", "8000 Hz", "16000 Hz"]),
    ],
    ids=["missing", "empty-file", "not-audio", "no-samples", "wrong-rate"],
)
def test_bad_input_writes_nothing(tmp_path, codecs_dir, capsys, make_bad, needles) -> None:
    good = _wav(tmp_path / "in" / "good.wav")
    bad = make_bad(tmp_path / "in")
    out = tmp_path / "out"
    # The bad file comes second: the good one must not be written either.
    rc = main(["codec", "roundtrip", str(good), str(bad), "-o", str(out), "--codec", "fx"])
    _assert_one_line_error(capsys, rc, *needles)
    assert not out.exists()


def _touch(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("levels", ["0", "5", "-1"])
def test_levels_out_of_range(tmp_path, codecs_dir, capsys, levels) -> None:
    src = _wav(tmp_path / "a.wav")
    rc = main(["codec", "roundtrip", str(src), "-o", str(tmp_path / "out"), "--codec", "fx", "--levels", levels])
    _assert_one_line_error(capsys, rc, f"--levels {levels}", "1..4")
    assert not (tmp_path / "out").exists()


def test_levels_not_a_number(tmp_path, codecs_dir, capsys) -> None:
    src = _wav(tmp_path / "a.wav")
    rc = main(["codec", "roundtrip", str(src), "-o", str(tmp_path / "out"), "--codec", "fx", "--levels", "two"])
    _assert_one_line_error(capsys, rc, "--levels", "'two'")


def test_missing_codec_artifact(tmp_path, codecs_dir, capsys) -> None:
    src = _wav(tmp_path / "a.wav")
    rc = main(["codec", "roundtrip", str(src), "-o", str(tmp_path / "out"), "--codec", "nope"])
    _assert_one_line_error(capsys, rc, "no codec named 'nope'")
    assert not (tmp_path / "out").exists()


def test_corrupted_codec_artifact(tmp_path, codecs_dir, capsys) -> None:
    cfg = codecs_dir / "fx" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("seed: 0", "seed: 7"))
    src = _wav(tmp_path / "a.wav")
    rc = main(["codec", "roundtrip", str(src), "-o", str(tmp_path / "out"), "--codec", "fx"])
    _assert_one_line_error(capsys, rc, "checksum mismatch")


def test_output_dir_not_writable(tmp_path, codecs_dir, capsys) -> None:
    src = _wav(tmp_path / "a.wav")
    blocker = _touch(tmp_path / "file.txt", b"x")  # a file where a directory should be (fails even as root)
    rc = main(["codec", "roundtrip", str(src), "-o", str(blocker / "sub"), "--codec", "fx"])
    _assert_one_line_error(capsys, rc, "file.txt", "not a directory")
    assert blocker.read_bytes() == b"x"


def test_refuses_to_overwrite_its_input(tmp_path, codecs_dir, capsys) -> None:
    src = _wav(tmp_path / "a.wav")
    before = src.read_bytes()
    rc = main(["codec", "roundtrip", str(src), "-o", str(tmp_path), "--codec", "fx"])
    _assert_one_line_error(capsys, rc, "overwrite the input")
    assert src.read_bytes() == before


def test_two_inputs_with_one_output_name(tmp_path, codecs_dir, capsys) -> None:
    a = _wav(tmp_path / "x" / "same.wav")
    b = _wav(tmp_path / "y" / "same.wav")
    rc = main(["codec", "roundtrip", str(a), str(b), "-o", str(tmp_path / "out"), "--codec", "fx"])
    _assert_one_line_error(capsys, rc, "both be written")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "argv, needles",
    [
        (["codec", "roundtrip", "a.wav"], ["-o/--outdir"]),
        (["codec", "roundtrip", "-o", "out"], ["IN.wav"]),
        (["codec", "encode"], ["invalid choice", "'encode'"]),
        (["frobnicate"], ["invalid choice", "'frobnicate'"]),
        (["phonemize"], ["TEXT"]),
        (["--no-such-option"], ["unrecognized arguments"]),
    ],
)
def test_usage_errors_are_one_line(capsys, argv, needles) -> None:
    _assert_one_line_error(capsys, main(argv), *needles)


def test_help_and_bare_groups(capsys) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "codec" in out and "phonemize" in out
    assert main([]) == 2
    assert main(["codec"]) == 2
    assert "roundtrip" in capsys.readouterr().err


def test_codec_list(codecs_dir, capsys) -> None:
    assert main(["codec", "list"]) == 0
    assert "fx" in capsys.readouterr().out.split()


def test_subcommands_are_registered() -> None:
    assert {"codec roundtrip", "codec list", "phonemize"} <= set(SUBCOMMANDS)
    for sub in SUBCOMMANDS.values():
        assert sub.help and callable(sub.run)


def test_a_run_builds_only_its_own_commands_arguments() -> None:
    """``main`` builds the arguments of the command it runs only (the others' modules stay unimported on a
    one-off ``say``); every command still parses when it is the one asked for."""
    from audiopd.subcommands import build_parser

    def options(parser, *path):
        for word in path:
            parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[word]
        return {s for a in parser._actions for s in a.option_strings}

    say_only = build_parser("say")
    assert "--voice" in options(say_only, "say")
    assert options(say_only, "render") == {"-h", "--help"}
    assert options(say_only, "codec", "roundtrip") == {"-h", "--help"}
    every = build_parser()
    for path in (("say",), ("render",), ("codec", "roundtrip")):
        assert options(every, *path) == options(build_parser(path[0]), *path) != {"-h", "--help"}


# ------------------------------------------------------------------------------------- phonemize
def _frontend():
    from audiopd.text import phonemize

    return phonemize


def test_phonemize_prints_text_and_tokens(capsys) -> None:
    phonemize = _frontend()
    assert main(["phonemize", "Dr.", "Smith", "paid", "$5."]) == 0
    out = capsys.readouterr().out.splitlines()
    expected = phonemize("Dr. Smith paid $5.")
    assert out == [expected.text, " ".join(expected.tokens)]
    assert out[1].split()[0] == "^" and out[1].split()[-1] == "$"


@pytest.mark.parametrize("text", ["", "   ", "中文"])
def test_phonemize_nothing_to_speak(capsys, text) -> None:
    _frontend()
    _assert_one_line_error(capsys, main(["phonemize", text]))


# ------------------------------------------------------------------------------- check --voice
def _voice_artifact(root: Path, checker_yaml: str | None) -> Path:
    """A tiny voice artifact (random weights; `check` reads only its thresholds), optionally with checker.yaml."""
    from audiopd.artifacts import write_checksums
    from audiopd.model.config import ModelConfig
    from audiopd.model.voice import VoiceInfo, VoiceModel, save_voice

    cfg = ModelConfig(num_symbols=20, num_codebooks=4, cardinality=32, num_speakers=1, d_model=16, n_heads=2,
                      ff_mult=2, dropout=0.0, encoder_layers=1, duration_channels=8, masked_layers=1,
                      serial_layers=1, max_frames=64)
    d = save_voice(VoiceModel(cfg, VoiceInfo(codec="fx", voices=("alice",))), root)
    if checker_yaml is not None:
        (d / "checker.yaml").write_text(checker_yaml)
        write_checksums(d)
    return d


@pytest.fixture
def check_stub(monkeypatch) -> list[dict]:
    """Replaces audiopd.check; records the keyword arguments (the config) of every call and passes."""
    import audiopd

    calls: list[dict] = []

    def stub(audio, sample_rate, text, **kw):
        calls.append(kw)
        return {"passed": True, "score": 1.0, "reasons": [], "bad_spans": []}

    monkeypatch.setattr(audiopd, "check", stub, raising=False)
    return calls


def test_check_uses_the_voice_thresholds(tmp_path, monkeypatch, check_stub, capsys) -> None:
    from audiopd.checker import CheckerConfig

    wav = _wav(tmp_path / "a.wav")
    _voice_artifact(tmp_path / "voices" / "calibrated", "min_window_score: -80\nmax_wer: 0.9\n")
    _voice_artifact(tmp_path / "voices" / "plain", None)
    monkeypatch.setenv("AUDIOPD_VOICES_PATH", str(tmp_path / "voices"))
    assert main(["check", str(wav), "--text", "hello", "--voice", "calibrated"]) == 0
    assert main(["check", str(wav), "--text", "hello", "--voice", str(tmp_path / "voices" / "calibrated")]) == 0
    assert main(["check", str(wav), "--text", "hello", "--voice", "plain"]) == 0  # no checker.yaml: defaults
    assert main(["check", str(wav), "--text", "hello"]) == 0
    assert main(["check", str(wav), "--text", "hello", "--voice", "calibrated", "--checker", "thorough"]) == 0
    want = CheckerConfig(min_window_score=-80.0, max_wer=0.9)
    thorough = CheckerConfig(min_window_score=-80.0, max_wer=0.9, recognizer="sphinx", asr="always")
    assert check_stub == [{"config": want}, {"config": want}, {"config": CheckerConfig()},
                          {"config": CheckerConfig()}, {"config": thorough}]
    assert capsys.readouterr().out.count("PASS") == 5
    (tmp_path / "my.dict").write_text("HELLO  HH EH1 L OW0\n", encoding="utf-8")
    assert main(["check", str(wav), "--text", "hello", "--lexicon", str(tmp_path / "my.dict")]) == 0
    assert check_stub[-1]["lexicon"].get("hello") == ("HH", "EH1", "L", "OW0")  # the checker expects these phones


@pytest.mark.parametrize("yaml_text, needles", [
    ("min_window_score: -80\nmax_werr: 0.9\n", ("checker.yaml", "unknown key", "max_werr")),
    ("max_wer: high\n", ("checker.yaml", "max_wer must be float")),
    (None, ("no voice named 'absent'",)),
])
def test_check_bad_voice_thresholds_exit_2(tmp_path, monkeypatch, check_stub, capsys, yaml_text, needles) -> None:
    wav = _wav(tmp_path / "a.wav")
    _voice_artifact(tmp_path / "voices" / "v", yaml_text)
    monkeypatch.setenv("AUDIOPD_VOICES_PATH", str(tmp_path / "voices"))
    voice = "absent" if yaml_text is None else "v"
    _assert_one_line_error(capsys, main(["check", str(wav), "--text", "hello", "--voice", voice]), *needles)
    assert check_stub == []  # never checked with the wrong thresholds


def test_voices_lists_the_shipped_voices_default_first(capsys) -> None:
    assert main(["voices"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("natural (default): codec mel22k, 22050 Hz")
    assert any(line.split() == ["heart", "taught", "by", "kokoro:af_heart"] for line in lines)
    assert main(["voices", "--json"]) == 0
    voices = {v["name"]: v for v in json.loads(capsys.readouterr().out)}
    assert [s["name"] for s in voices["natural"]["speakers"]] == ["adam", "heart", "joe"]
    assert voices["natural"]["default"] and not voices["flite"]["default"]


def test_voices_names_a_broken_artifact_and_lists_the_rest(tmp_path, monkeypatch, capsys) -> None:
    _voice_artifact(tmp_path / "voices" / "mine", None)
    broken = _voice_artifact(tmp_path / "voices" / "tampered", None)
    with open(broken / "model.safetensors", "r+b") as f:  # one byte changed: its checksum no longer holds
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 1]))
    monkeypatch.setenv("AUDIOPD_VOICES_PATH", str(tmp_path / "voices"))
    assert main(["voices"]) == 1
    out = capsys.readouterr().out
    assert "mine: codec fx" in out and "  alice" in out and "natural (default)" in out
    assert "tampered: BROKEN: " in out and "checksum" in out.lower()


def test_a_closed_stdout_ends_a_command_quietly(monkeypatch, capsys) -> None:
    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["voices"]) == 141
    assert capsys.readouterr().err == ""
