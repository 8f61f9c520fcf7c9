"""The facade (audiopd.load / Synthesizer / Result) and the `say` / `check` commands, on a tiny voice.

The voice is a randomly initialised VoiceModel saved with save_voice into tmp_path, named ``default``
on a temporary $AUDIOPD_VOICES_PATH, with the fixture codec registered through $AUDIOPD_CODECS_PATH.
Its duration predictor is pinned to 5 frames per token so lengths and word times are predictable.
Checker stubs appear only where a test must force a pass or a failure.
"""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from voice_fixtures import FRAMES_PER_TOKEN, HOP, expected_samples, tiny_voice

import audiopd
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.cli import main
from audiopd.codec.fixture import write_fixture_artifact
from audiopd.errors import ArtifactError, NothingToSpeakError
from audiopd.model.voice import save_voice
from audiopd.pipeline import SynthesisConfig, SynthesisOptionError, Synthesizer
from audiopd.synthesis.join import JoinConfig
from audiopd.text import phonemize

SR = 16000
TEXT = "Hello there, how are you?"
REPORT_KEYS = {"mode", "steps", "forward_passes", "audio_seconds", "wall_seconds", "chunks", "attempts", "check"}


@pytest.fixture
def artifacts(tmp_path, monkeypatch) -> Path:
    write_fixture_artifact(tmp_path / "codecs" / "fx")
    save_voice(tiny_voice(("alice", "bob")), tmp_path / "voices" / DEFAULT_VOICE)
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path / "codecs"))
    monkeypatch.setenv("AUDIOPD_VOICES_PATH", str(tmp_path / "voices"))
    return tmp_path


@pytest.fixture
def tts(artifacts) -> Synthesizer:
    return audiopd.load()


class Stub:
    """Checker stub: scripted verdicts per call (the last one repeats)."""

    def __init__(self, *script: tuple[bool, float]) -> None:
        self.script, self.calls = script, 0

    def __call__(self, audio, sample_rate, text, **kw):
        self.calls += 1
        passed, score = self.script[min(self.calls, len(self.script)) - 1]
        return {"passed": passed, "score": score, "reasons": [] if passed else [f"bad #{self.calls}"],
                "bad_spans": [(0.1, 0.3)]}


# ------------------------------------------------------------------------------------- load / result
def test_load_default_voice_and_its_codec(tts) -> None:
    assert tts.voices == ("alice", "bob") and tts.sample_rate == SR and tts.codec.name == "fx"


@pytest.mark.parametrize("mode", ["parallel", "serial", "auto"])
def test_synthesize_returns_audio_of_the_predicted_length(tts, mode: str) -> None:
    res = tts.synthesize(TEXT, mode=mode, seed=1, check=False)
    assert res.audio.dtype == np.float32 and res.audio.ndim == 1
    assert res.audio.size == expected_samples(TEXT) and np.abs(res.audio).max() > 0
    assert res.sample_rate == SR
    assert REPORT_KEYS <= set(res.report)
    assert res.report["mode"] == ("parallel" if mode == "auto" else mode)
    assert res.report["chunks"] == 1 and res.report["check"] is None
    assert res.report["audio_seconds"] == pytest.approx(res.audio.size / SR)
    assert [a["mode"] for a in res.report["attempts"]] == [res.report["mode"]]
    assert res.report["forward_passes"] == res.report["attempts"][0]["forward_passes"] > 0


def test_serial_takes_one_step_per_frame_and_parallel_at_most_k(tts) -> None:
    frames = expected_samples(TEXT) // HOP
    assert tts.synthesize(TEXT, mode="serial", seed=0).report["steps"] == frames
    assert 1 <= tts.synthesize(TEXT, mode="parallel", steps=3, seed=0).report["steps"] <= 3


def test_same_seed_same_audio_other_seed_other_audio(tts) -> None:
    a = tts.synthesize(TEXT, mode="parallel", seed=7).audio
    b = tts.synthesize(TEXT, mode="parallel", seed=7).audio
    c = tts.synthesize(TEXT, mode="parallel", seed=8).audio
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_random_seed_is_reported_and_reproduces(tts) -> None:
    first = tts.synthesize(TEXT, mode="serial")
    again = tts.synthesize(TEXT, mode="serial", seed=first.report["seed"])
    assert np.array_equal(first.audio, again.audio)


def test_speakers_and_speed(tts) -> None:
    base = tts.synthesize(TEXT, mode="parallel", seed=0)
    assert base.report["voice"] == "alice"
    assert tts.synthesize(TEXT, voice="bob", mode="parallel", seed=0).report["voice"] == "bob"
    assert tts.synthesize(TEXT, mode="parallel", seed=0, speed=2.0).audio.size < base.audio.size
    with pytest.raises(ArtifactError, match="unknown voice 'carol'"):
        tts.synthesize(TEXT, voice="carol")


def test_word_timestamps_follow_the_durations(tts) -> None:
    res = tts.synthesize(TEXT, mode="parallel", seed=0)
    ph = phonemize(TEXT)
    assert [w.word for w in res.words] == [w.word for w in ph.words]
    for w, span in zip(res.words, ph.words):
        assert w.start_s == pytest.approx(span.start * FRAMES_PER_TOKEN / 100)
        assert w.end_s == pytest.approx(span.end * FRAMES_PER_TOKEN / 100)


def test_both_decoders_share_the_fine_passes_and_the_window() -> None:
    # parallel vs serial comparisons (bench, tts_eval) are only fair when their masked passes are alike
    cfg = SynthesisConfig()
    assert cfg.parallel.attention_window == cfg.serial.attention_window > 0
    assert cfg.parallel.fine_passes == cfg.serial.fine_passes is not None
    assert cfg.auto.first_steps == cfg.parallel.steps  # auto's first attempt is the parallel mode's decoding
    assert cfg.auto.first_steps == cfg.parallel.steps  # auto's first attempt is the parallel mode's decoding


def test_long_text_is_chunked_and_joined_without_clicks(artifacts) -> None:
    cfg = SynthesisConfig(max_chunk_chars=40, join=JoinConfig(pause_s=0.1, fade_s=0.01))
    tts = audiopd.load(config=cfg)
    sentences = ["The first sentence is here.", "A second one follows it.", "And then a third."]
    res = tts.synthesize(" ".join(sentences), mode="parallel", seed=0)
    assert res.report["chunks"] == 3
    assert res.audio.size == sum(expected_samples(s) for s in sentences) + 2 * 1600
    # Each join: the outgoing chunk fades to ~0, the pause is silent, the next chunk fades in.
    start = expected_samples(sentences[0])
    assert np.all(res.audio[start : start + 1600] == 0)
    assert abs(res.audio[start - 1]) < 0.01 * np.abs(res.audio).max() + 1e-6
    # Word times of the second chunk start after the first chunk and its pause.
    second = [w for w in res.words if w.word == "second"][0]
    assert second.start_s >= (start + 1600) / SR
    assert all(a.end_s <= b.start_s + 1e-9 for a, b in zip(res.words, res.words[1:]))
    assert res.words[-1].end_s <= res.duration_s + 1e-9


def test_batch_decodes_several_texts_in_one_model_batch(tts) -> None:
    texts = ["Good morning.", TEXT, "Yes."]
    results = tts.synthesize_batch(texts, mode="parallel", seed=0)
    assert [r.audio.size for r in results] == [expected_samples(t) for t in texts]
    # One padded batch: every text reports the passes of that single decoder run.
    assert len({r.report["forward_passes"] for r in results}) == 1
    assert all(len(r.report["attempts"]) == 1 for r in results)


@pytest.mark.parametrize("text", ["", "   ", "!!! ???", "\u4f60\u597d"])
def test_unspeakable_text_raises_a_clear_error(tts, text: str) -> None:
    with pytest.raises(NothingToSpeakError):
        tts.synthesize(text)


@pytest.mark.parametrize("kwargs", [{"mode": "fast"}, {"steps": 0}, {"steps": 2.5}, {"seed": -1},
                                    {"speed": 0.0}, {"speed": 10.0}, {"time_budget_s": 0}, {"check_level": "quick"}])
def test_bad_options_are_rejected(tts, kwargs) -> None:
    with pytest.raises(SynthesisOptionError):
        tts.synthesize(TEXT, **kwargs)


def test_voice_and_codec_must_fit(artifacts) -> None:
    write_fixture_artifact(artifacts / "codecs" / "fx8k", sample_rate=12000, frame_rate=100)
    with pytest.raises(ArtifactError, match="sample rate 16000, codec 12000"):
        audiopd.load(codec="fx8k")
    with pytest.raises(ArtifactError, match="no voice named 'nope'"):
        audiopd.load("nope")


def test_voice_rejects_a_codec_whose_tokens_mean_something_else(artifacts) -> None:
    import dataclasses

    from audiopd.codec import load_codec

    fx = load_codec("fx")
    # Same shape and rates, other code tables (another seed): only the fingerprint can tell.
    write_fixture_artifact(artifacts / "codecs" / "fx_other", seed=7)
    model = tiny_voice(("alice", "bob"))
    model.info = dataclasses.replace(model.info, codec_fingerprint=fx.token_fingerprint)
    save_voice(model, artifacts / "voices" / "stamped")
    assert audiopd.load("stamped").codec.token_fingerprint == fx.token_fingerprint
    with pytest.raises(ArtifactError, match="learnt the tokens of another 'fx_other' codec"):
        audiopd.load("stamped", codec="fx_other")
    audiopd.load(DEFAULT_VOICE, codec="fx_other")  # an unstamped (older) voice: no fingerprint, no check


# ---------------------------------------------------------------------------------------- auto mode
def test_auto_escalates_to_serial_and_delivers_the_best_failing_attempt(tts) -> None:
    # The whole ladder: no escalation budget (the stub checks in microseconds, so a budget priced by the first
    # attempt would end it early; test_say_says_when_the_budget_cut_escalation covers the budget).
    auto = dataclasses.replace(tts.config.auto, escalation_budget=None)
    tts.config = dataclasses.replace(tts.config, auto=auto)
    tts.checker = Stub((False, 0.2), (False, 0.7), (False, 0.3), (False, 0.5))
    res = tts.synthesize(TEXT, seed=0)
    steps = [(a["mode"], a["kind"]) for a in res.report["attempts"]]
    assert steps == [("parallel", "full"), ("parallel", "repair"), ("parallel", "full"), ("serial", "full")]
    assert [a["passed"] for a in res.report["attempts"]] == [False] * 4
    # Delivered: the repair attempt (score 0.7), flagged as failing with its reasons.
    assert res.report["check"]["passed"] is False and res.report["check"]["score"] == 0.7
    assert res.report["check"]["reasons"] == ["bad #2"] and res.report["mode"] == "parallel"
    assert res.report["forward_passes"] == sum(a["forward_passes"] for a in res.report["attempts"])


def test_auto_stops_escalating_once_an_attempt_passes(tts) -> None:
    tts.checker = Stub((False, 0.2), (True, 0.9))
    res = tts.synthesize(TEXT, seed=0)
    assert [a["kind"] for a in res.report["attempts"]] == ["full", "repair"]
    assert res.report["check"]["passed"] is True


def test_time_budget_limits_escalation(tts) -> None:
    tts.checker = Stub((False, 0.2))
    res = tts.synthesize(TEXT, seed=0, time_budget_s=1e-6)
    assert len(res.report["attempts"]) == 1 and res.report["budget_exhausted"]


def test_the_torch_facade_checks_with_the_recogniser_in_torch(artifacts, monkeypatch) -> None:
    """The torch facade has torch loaded anyway, so its default checker runs the recogniser there (the NumPy
    facade's stays in NumPy: tests/lite/test_synth.py, "speaks and checks without torch")."""
    seen = []

    def spy(*_a, **kw):
        seen.append(kw.get("runtime", "numpy"))
        return Stub((True, 0.9))

    monkeypatch.setattr("audiopd.pipeline.default_checker", spy)
    audiopd.load().synthesize(TEXT, seed=0)
    assert seen == ["torch"]


def test_say_says_when_the_budget_cut_escalation(artifacts, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("audiopd.pipeline.default_checker", lambda *_a, **_k: Stub((False, 0.1)))
    tts = audiopd.load()
    res = tts.synthesize(TEXT, seed=0, time_budget_s=1e-6)
    assert any("time budget" in w for w in res.report["warnings"])
    monkeypatch.setattr("audiopd.cli._load_voice", lambda spec, **kw: (tts, None))
    monkeypatch.setattr(tts, "synthesize", lambda *a, **kw: res)
    assert main(["say", TEXT, "-o", str(tmp_path / "b.wav")]) == 0
    assert "warning: the time budget stopped escalation" in capsys.readouterr().err


def test_refused_text_is_one_line_and_writes_nothing(artifacts, tmp_path, capsys) -> None:
    out = tmp_path / "long.wav"
    _one_line_error(capsys, main(["say", "x" * 3000, "-o", str(out), "--mode", "parallel"]), "3,000 letters")
    assert not out.exists()


def test_explicit_check_on_a_fixed_mode_reports_without_escalating(tts) -> None:
    tts.checker = Stub((False, 0.4))
    res = tts.synthesize(TEXT, mode="serial", seed=0, check=True)
    assert len(res.report["attempts"]) == 1 and res.report["check"]["passed"] is False


# ---------------------------------------------------------------------------------------------- CLI
def _one_line_error(capsys, rc: int, needle: str) -> None:
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("audiopd: error: ") and err.count("\n") == 1 and needle in err, err


def test_say_writes_wav_report_and_timestamps(artifacts, tmp_path) -> None:
    out, rep, srt = tmp_path / "o" / "a.wav", tmp_path / "o" / "r.json", tmp_path / "o" / "a.srt"
    rc = main(["say", TEXT, "-o", str(out), "--mode", "parallel", "--seed", "3", "--report", str(rep),
               "--timestamps", str(srt)])
    assert rc == 0
    audio, rate = sf.read(str(out), dtype="float32")
    assert rate == SR and audio.size == expected_samples(TEXT)
    report = json.loads(rep.read_text())
    assert REPORT_KEYS <= set(report) and report["seed"] == 3 and report["mode"] == "parallel"
    assert srt.read_text().startswith("1\n00:00:00,050 --> ")


def test_say_writes_flac_with_the_samples_of_the_wav(artifacts, tmp_path) -> None:
    wav, flac = tmp_path / "a.wav", tmp_path / "a.FLAC"
    for out in (wav, flac):
        assert main(["say", TEXT, "-o", str(out), "--mode", "parallel", "--seed", "3"]) == 0
    assert sf.info(str(flac)).format == "FLAC" and sf.info(str(wav)).format == "WAV"
    a, b = sf.read(str(wav), dtype="int16")[0], sf.read(str(flac), dtype="int16")[0]
    assert a.size == expected_samples(TEXT) and np.array_equal(a, b)  # lossless: the same 16-bit samples


def test_say_reads_stdin_and_picks_a_speaker(artifacts, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Good morning."))
    out, vtt = tmp_path / "s.wav", tmp_path / "s.vtt"
    assert main(["say", "-", "-o", str(out), "--voice", "bob", "--mode", "serial", "--timestamps", str(vtt)]) == 0
    assert sf.info(str(out)).frames == expected_samples("Good morning.")
    assert vtt.read_text().startswith("WEBVTT")


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["say", "!!!", "-o", "{d}/x.wav", "--mode", "parallel"], "no speakable words"),
        (["say", "-o", "{d}/x.wav"], "no text given"),
        (["say", "hi", "-o", "{d}/x.mp3"], "must end in .wav or .flac"),
        (["say", "hi", "-o", "{d}/x.wav", "--timestamps", "{d}/x.txt"], "unknown format"),
        (["say", "hi", "-o", "{d}/x.wav", "--report", "{d}/x.wav"], "different files"),
        (["say", "hi", "-o", "{d}/x.wav", "--speed", "9", "--mode", "parallel"], "speed must be"),
        (["say", "hi", "-o", "{d}/x.wav", "--voice", "carol"], "unknown voice 'carol'"),
        (["say", "hi", "-o", "{d}/x.wav", "--mode", "fast"], "invalid choice"),
    ],
)
def test_say_bad_input_exits_2_and_writes_nothing(artifacts, tmp_path, capsys, argv, needle) -> None:
    d = tmp_path / "out"
    _one_line_error(capsys, main([a.format(d=d) for a in argv]), needle)
    assert not d.exists() or not any(d.iterdir())


def test_say_warns_when_the_delivered_audio_fails_the_check(artifacts, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("audiopd.pipeline.default_checker", lambda *_a, **_k: Stub((False, 0.1)))
    out = tmp_path / "w.wav"
    assert main(["say", TEXT, "-o", str(out), "--seed", "0"]) == 0
    assert out.is_file() and "warning: the output failed the check: bad #" in capsys.readouterr().err
    assert main(["say", TEXT, "-o", str(out), "--seed", "0", "--strict"]) == 1


@pytest.mark.parametrize("passed, rc", [(True, 0), (False, 1)])
def test_check_exit_codes(tmp_path, capsys, monkeypatch, passed: bool, rc: int) -> None:
    wav = tmp_path / "a.wav"
    sf.write(str(wav), np.zeros(SR // 2, np.float32), SR)
    seen = {}

    def stub(audio, sample_rate, text, config=None):
        seen.update(samples=audio.size, rate=sample_rate, text=text)
        return {"passed": passed, "score": 0.5, "reasons": [] if passed else ["too quiet"], "bad_spans": []}

    monkeypatch.setattr(audiopd, "check", stub, raising=False)
    assert main(["check", str(wav), "--text", "hello"]) == rc
    assert seen == {"samples": SR // 2, "rate": SR, "text": "hello"}
    assert capsys.readouterr().out.startswith("PASS" if passed else "FAIL score 0.500: too quiet")
    assert main(["check", str(wav), "--text", "hello", "--json"]) == rc
    assert json.loads(capsys.readouterr().out)["passed"] is passed


@pytest.mark.parametrize("argv, needle", [(["check", "{d}/missing.wav", "--text", "hi"], "no such file"),
                                          (["check", "{d}/a.wav", "--text", "***"], "no speakable words"),
                                          (["check", "{d}/a.wav"], "--text")])
def test_check_bad_input_exits_2(tmp_path, capsys, argv, needle) -> None:
    sf.write(str(tmp_path / "a.wav"), np.zeros(800, np.float32), SR)
    _one_line_error(capsys, main([a.format(d=tmp_path) for a in argv]), needle)


# ------------------------------------------------------------------------------- with the real checker
needs_flite = pytest.mark.skipif(shutil.which("flite") is None, reason="Debian flite is not installed (make deps)")


@pytest.mark.slow  # pocketsphinx start-up + two checks: 5-7 s here
@needs_flite
def test_check_command_on_real_speech(tmp_path, capsys) -> None:
    wav = tmp_path / "fox.wav"
    text = "The quick brown fox jumps over the lazy dog."
    subprocess.run(["flite", "-voice", "rms", "-t", text, "-o", str(wav)], check=True)
    assert main(["check", str(wav), "--text", text]) == 0
    assert capsys.readouterr().out.startswith("PASS")
    assert main(["check", str(wav), "--text", "A completely different sentence about rain in Spain."]) == 1
    assert capsys.readouterr().out.startswith("FAIL")


@pytest.mark.slow  # four checked attempts: ~9 s here
def test_auto_mode_with_the_real_checker_never_delivers_a_failure_silently(artifacts) -> None:
    # The untrained voice speaks shaped noise: every attempt must fail, all of them reported. No escalation
    # budget: this is about the whole ladder's verdicts, and a loaded machine would otherwise stop it early.
    from audiopd.synthesis.config import AutoConfig

    tts = audiopd.load(config=SynthesisConfig(auto=AutoConfig(escalation_budget=None)))
    res = tts.synthesize("Good morning, everyone.", seed=0)
    attempts = res.report["attempts"]
    assert attempts[0]["mode"] == "parallel" and attempts[-1]["mode"] == "serial"
    assert all(a["passed"] is False and a["reasons"] for a in attempts)
    verdict = res.report["check"]
    assert verdict["passed"] is False and verdict["reasons"]
    assert verdict["score"] == max(a["score"] for a in attempts)
    assert res.report["warnings"] == []


class _Sized:
    def __init__(self, frames: int) -> None:
        self.frames = frames


def test_parallel_batches_leave_out_items_that_would_be_mostly_padding(artifacts) -> None:
    tts = audiopd.load(config=SynthesisConfig(max_batch=3, max_batch_frames=10_000, max_padding=0.1))
    items = [_Sized(n) for n in (1188, 787, 1100, 780, 770, 1000)]
    # Serial (no padding limit): longest first, three per batch.
    assert tts._groups(items) == [[0, 2, 5], [1, 3, 4]]
    # Parallel/auto: 1000 frames is 16% short of 1188, so it starts its own batch.
    assert tts._groups(items, 0.1) == [[0, 2], [5], [1, 3, 4]]
    assert tts._groups(items, 0.0) == [[0], [2], [5], [1], [3], [4]]
    with pytest.raises(ValueError, match="max_padding"):
        SynthesisConfig(max_padding=1.5).validate()


def test_a_long_texts_chunks_are_decoded_apart_in_parallel_mode_only(tts, monkeypatch) -> None:
    sizes: list[list[int]] = []
    real = Synthesizer._groups

    def spy(self, items, max_padding=None):
        groups = real(self, items, max_padding)
        sizes.extend([items[i].frames for i in g] for g in groups)
        return groups

    monkeypatch.setattr(Synthesizer, "_groups", spy)
    text = "A fairly long first sentence with many words in it to speak. Short one."
    tts_chunked = audiopd.load(config=SynthesisConfig(max_chunk_chars=70))
    serial = tts_chunked.synthesize(text, mode="serial", seed=0)
    assert serial.report["chunks"] == 2 and len(sizes) == 1 and len(sizes[0]) == 2
    sizes.clear()
    parallel = tts_chunked.synthesize(text, mode="parallel", seed=0)
    assert len(sizes) == 2 and all(len(s) == 1 for s in sizes)
    assert parallel.audio.size == serial.audio.size


def test_a_lone_chunk_decodes_with_the_condition_its_durations_came_from(tts, monkeypatch) -> None:
    """One encoder pass per lone chunk, not two; a batch of several chunks builds its padded condition."""
    calls: list[int] = []
    real = type(tts.model).condition

    def spy(self, phonemes, *args, **kw):
        calls.append(phonemes.shape[0])
        return real(self, phonemes, *args, **kw)

    monkeypatch.setattr(type(tts.model), "condition", spy)
    one = tts.synthesize(TEXT, mode="parallel", seed=0)
    assert one.report["chunks"] == 1 and calls == [1]
    calls.clear()
    tts.synthesize_batch([TEXT, TEXT], mode="parallel", seed=0)
    assert calls == [1, 1, 2]  # durations per chunk, then the two equal chunks batched together


@pytest.mark.parametrize("mode", ["parallel", "serial"])
def test_a_bfloat16_facade_speaks_like_float32s_and_says_so(artifacts, mode: str) -> None:
    from audiopd.model.voice import load_voice

    model = load_voice(DEFAULT_VOICE)
    f32 = audiopd.load(model, precision="float32")
    bf16 = audiopd.load(model, precision="bfloat16")
    assert f32.model is model and bf16.model is not model  # the caller's model keeps its float32 weights
    assert {p.dtype for p in model.masked.parameters()} == {torch.float32}
    a = f32.synthesize(TEXT, mode=mode, seed=1, check=False)
    b = bf16.synthesize(TEXT, mode=mode, seed=1, check=False)
    assert (a.report["precision"], b.report["precision"]) == ("float32", "bfloat16")
    assert b.audio.dtype == np.float32 and b.audio.size == a.audio.size and np.isfinite(b.audio).all()
    with pytest.raises(ValueError, match="precision must be one of"):
        audiopd.load(model, precision="half")
