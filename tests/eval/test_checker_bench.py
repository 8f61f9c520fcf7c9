"""checker_bench on a voice's own output (`--voice`), on a tiny fixture voice, plus the outside-ASR figures.

The voice is a randomly initialised VoiceModel (speakers "alice" and "bob") with the fixture codec,
saved into tmp_path and found through $AUDIOPD_VOICES_PATH / $AUDIOPD_CODECS_PATH; its duration
predictor is pinned to 5 frames per token, so a sentence lasts (phonemes x 50 ms). The outside
recogniser is a fixed function so the WER arithmetic is exact; the real checker runs where it is
cheap (a few clips, ASR off), and is replaced by a recording stub where only its config matters.
The real benchmark (flite and PocketSphinx) is tests/checker/test_end_to_end.py (slow).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from voice_fixtures import install_voices

import audiopd
import audiopd.checker
from audiopd.artifacts import DEFAULT_VOICE, write_checksums
from audiopd.checker import CheckerConfig
from audiopd.eval.bench_clips import FORTUNE_DIR, voice_clips
from audiopd.eval.checker_bench import main, outside_summary, run_bench
from audiopd.text.wer import text_to_words

LONG = ["Please call me tomorrow morning about the garden.", "It was a very good year for the small farmers.",
        "Nobody knows where the old road used to go.", "A quiet dog is better than a loud cat.",
        "The river was cold and the bridge was long."]
SHORT = "Go."  # 0.4 s at 5 frames per token: too short for the faults, so it is skipped


@pytest.fixture
def voice_dir(tmp_path, monkeypatch) -> Path:
    return install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("alice", "bob")})[DEFAULT_VOICE]


@pytest.fixture
def tts(voice_dir):
    return audiopd.load()


def first_sentence_heard(audio: np.ndarray, rate: int) -> str:
    """Outside recogniser stub: always 'hears' LONG[0], so clip 0 is intelligible and the others broken."""
    return LONG[0]


# --------------------------------------------------------------------------------- voice clips
def test_voice_clips_round_robin_skip_short_and_decode_no_more_than_needed(tts, monkeypatch) -> None:
    calls: list[tuple[list[str], str, str, bool, int]] = []
    real = tts.synthesize_batch

    def spy(texts, *, voice, mode, check, seed):
        calls.append((list(texts), voice, mode, check, seed))
        return real(texts, voice=voice, mode=mode, check=check, seed=seed)

    monkeypatch.setattr(tts, "synthesize_batch", spy)
    clips = voice_clips(tts, "bench", 3, min_seconds=1.0, batch=1, seed=5, sentences=[LONG[0], SHORT, *LONG[1:]])
    # Candidate k goes to speaker k % 2; "Go." (bob) is decoded, found too short and skipped.
    assert [(c.text, c.voice) for c in clips] == [(LONG[0], "alice"), (LONG[1], "alice"), (LONG[2], "bob")]
    assert [c for call in calls for c in call[0]] == [LONG[0], SHORT, LONG[1], LONG[2]]  # nothing past the 3rd
    assert {(mode, check) for _, _, mode, check, _ in calls} == {("parallel", False)}
    assert [seed for *_, seed in calls] == [5, 5, 7, 7]  # seed + index of the window's first sentence
    assert all(c.sample_rate == 16000 and c.seconds >= 1.0 for c in clips)
    # The clip is exactly the voice's parallel output for that text, speaker and seed.
    again = real([LONG[1]], voice="alice", mode="parallel", check=False, seed=7)[0]
    assert np.array_equal(clips[1].audio, again.audio)


def test_voice_clips_batch_per_speaker(tts, monkeypatch) -> None:
    calls: list[tuple[list[str], str]] = []
    real = tts.synthesize_batch
    monkeypatch.setattr(tts, "synthesize_batch",
                        lambda texts, **kw: calls.append((list(texts), kw["voice"])) or real(texts, **kw))
    clips = voice_clips(tts, "bench", 4, min_seconds=1.0, batch=2, sentences=LONG)
    assert [c.voice for c in clips] == ["alice", "bob", "alice", "bob"]
    assert calls == [([LONG[0], LONG[2]], "alice"), ([LONG[1], LONG[3]], "bob")]


# ------------------------------------------------------------------------------ outside summary
def _item(kind: str, passed: bool, wer: float | None, edits: int = 0, words: int = 10) -> dict:
    it = {"kind": kind, "passed": passed, "failed": [] if passed else ["x"], "metrics": {}}
    if wer is not None:
        it["outside"] = {"hyp": "", "edits": edits, "ref_words": words, "wer": wer}
    return it


def test_outside_summary_on_hand_built_items() -> None:
    items = [
        _item("clean", True, 0.2, 2, 10),   # intelligible, passed
        _item("clean", False, 0.5, 5, 10),  # intelligible (<= 0.5 counts), flagged: a false alarm
        _item("clean", False, 0.0, 0, 8),   # intelligible, flagged: a false alarm
        _item("clean", True, 0.8, 8, 10),   # broken but passed
        _item("clean", False, 1.0, 12, 12),  # broken and flagged
        _item("clean", False, None),        # no outside judgement: not counted
        _item("skip", True, 0.9, 9, 10),    # a fault item never counts here
    ]
    s = outside_summary(items)
    assert s == {"broken_wer": 0.5, "n_clean": 5, "n_intelligible": 3, "n_broken": 2,
                 "outside_wer": round(27 / 50, 4),
                 "false_alarms_intelligible": 2, "false_alarm_rate_intelligible": 2 / 3,
                 "false_alarms_all": 3, "false_alarm_rate_all": 3 / 5,
                 "broken_passed": 1, "broken_passed_rate": 1 / 2,
                 "distillmos": None, "dnsmos_ovrl": None, "dnsmos_p808": None}
    # Another line moves the 0.5 clip into "broken": it was flagged, so broken-passed stays 1.
    s2 = outside_summary(items, broken_wer=0.4)
    assert (s2["n_intelligible"], s2["n_broken"], s2["broken_passed"]) == (2, 3, 1)
    assert s2["false_alarm_rate_intelligible"] == 1 / 2
    only_broken = outside_summary([_item("clean", True, 0.9, 9, 10)])
    assert only_broken["false_alarm_rate_intelligible"] is None and only_broken["broken_passed_rate"] == 1.0
    assert outside_summary([_item("clean", True, None), _item("swap", False, 1.0)]) is None


# ------------------------------------------------------------------------------------ run_bench
def test_run_bench_on_the_voice_with_the_real_checker(tts) -> None:
    report = run_bench(3, kinds=("clean", "swap"), asr="never", progress=False, tts=tts, voice_name=DEFAULT_VOICE,
                       sentences=LONG, recognizer=first_sentence_heard, min_seconds=1.0, seed=3)
    assert (report["source"], report["voice"], report["seed"], report["n_clips"]) == ("voice", DEFAULT_VOICE, 3, 3)
    assert report["checker_config"] == "default" and report["checker"]["min_window_score"] == -62.0
    assert report["asr"] == report["checker"]["asr"] == "never"
    assert [c["text"] for c in report["clips"]] == LONG[:3]
    assert [c["voice"] for c in report["clips"]] == ["alice", "bob", "alice"]
    # Outside judgement: clip 0 heard perfectly, the others scored against LONG[0]'s words.
    wers = [c["outside"]["wer"] for c in report["clips"]]
    assert wers[0] == 0.0 and all(w > 0.5 for w in wers[1:])
    assert report["clips"][1]["outside"]["ref_words"] == len(text_to_words(LONG[1]))
    clean = [it for it in report["items"] if it["kind"] == "clean"]
    swaps = [it for it in report["items"] if it["kind"] == "swap"]
    assert len(clean) == len(swaps) == 3
    assert [it["outside"] for it in clean] == [c["outside"] for c in report["clips"]]
    assert all("outside" not in it for it in swaps)
    assert all(it["passed"] == (not it["failed"]) for it in report["items"])
    assert report["outside"] == outside_summary(report["items"])
    assert report["outside"]["false_alarms_all"] == sum(not it["passed"] for it in clean)
    assert report["false_alarm_rate"] == report["outside"]["false_alarm_rate_all"]
    # The checker's cost, split: no recognition ran (asr="never"); alignment is part of the whole.
    assert report["rtf_asr"] == 0.0 and 0 < report["rtf_align"] <= report["rtf"]
    json.loads(json.dumps(report))  # the --out file round-trips


def test_run_bench_reports_naturalness_beside_the_outside_wer(tts) -> None:
    from audiopd.eval.checker_bench import _summary_lines
    from audiopd.eval.judging import EvalJudge

    mos = iter([2.0, 3.0])
    judge = EvalJudge(first_sentence_heard, lambda audio, rate: {"distillmos": next(mos), "dnsmos_ovrl": 2.5,
                                                                  "dnsmos_p808": 3.25}, asr="whisper")
    report = run_bench(2, kinds=("clean",), asr="never", progress=False, tts=tts, sentences=LONG, judge=judge,
                       min_seconds=1.0)
    assert [c["outside"]["distillmos"] for c in report["clips"]] == [2.0, 3.0]
    o = report["outside"]
    assert (o["distillmos"], o["dnsmos_ovrl"], o["dnsmos_p808"]) == (2.5, 2.5, 3.25)
    assert report["outside_judge"]["asr"] == "whisper" and report["outside_judge"]["mos"] is True
    lines = _summary_lines(report)
    assert "outside ASR (whisper) on 2 clean clips" in lines[1]
    assert lines[2] == "naturalness of the clean clips: DistillMOS 2.50, DNSMOS OVRL 2.50, P.808 3.25"


def test_run_bench_uses_the_voice_checker_yaml(voice_dir, monkeypatch) -> None:
    (voice_dir / "checker.yaml").write_text("min_window_score: -80\nasr: always\n")
    write_checksums(voice_dir)
    seen: list[CheckerConfig] = []

    def recorder(audio, rate, text, *, config):
        seen.append(config)
        return audiopd.checker.Verdict(passed=True, score=1.0, metrics={"alignment_window": -70.0})

    monkeypatch.setattr(audiopd.checker, "score", recorder)
    tts = audiopd.load()
    report = run_bench(2, kinds=("clean",), progress=False, tts=tts, sentences=LONG, recognizer=first_sentence_heard,
                       min_seconds=1.0)
    assert report["checker_config"] == "voice" and report["asr"] == "always"
    assert seen == [tts.checker_config] * 2 == [CheckerConfig(min_window_score=-80.0, asr="always")] * 2
    # --asr overrides only the ASR mode; the voice's thresholds stay.
    seen.clear()
    report = run_bench(2, asr="never", kinds=("clean",), progress=False, tts=tts, sentences=LONG,
                       recognizer=first_sentence_heard, min_seconds=1.0)
    assert seen[0] == CheckerConfig(min_window_score=-80.0, asr="never") and report["checker"]["asr"] == "never"


# ----------------------------------------------------------------------------------------- CLI
@pytest.mark.skipif(not FORTUNE_DIR.is_dir(), reason="needs Debian fortunes")
def test_main_with_a_voice_writes_the_report(voice_dir, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("audiopd.checker.sphinx.recognize", lambda audio, rate: "nothing like it")
    out = tmp_path / "r" / "cb.json"
    assert main(["--voice", str(voice_dir), "--n", "2", "--kinds", "clean", "--checker-asr", "never", "--threads",
                 "1", "--quiet", "--out", str(out), "--asr", "pocketsphinx", "--no-mos"]) == 0
    report = json.loads(out.read_text())
    assert report["source"] == "voice" and report["voice"] == str(voice_dir) and report["n_clips"] == 2
    assert report["outside"]["n_broken"] == 2 and report["outside"]["broken_passed"] == sum(
        it["passed"] for it in report["items"])
    printed = capsys.readouterr().out
    assert "| clean |" in printed and "outside ASR (pocketsphinx) on 2 clean clips" in printed
    assert "broken passed" in printed
    assert "(recognition 0.000, alignment " in printed
    assert "detection -;" in printed  # clean clips only: no fault to detect


@pytest.mark.parametrize("setup, needle", [("missing", "no voice named"), ("bad_key", "min_windw_score")])
def test_main_voice_errors_are_one_line(voice_dir, capsys, setup: str, needle: str) -> None:
    voice = "nope"
    if setup == "bad_key":
        (voice_dir / "checker.yaml").write_text("min_windw_score: -80\n")
        write_checksums(voice_dir)
        voice = DEFAULT_VOICE
    assert main(["--voice", voice, "--n", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err and needle in err and "Traceback" not in err


# ------------------------------------------------------------------------------------ teachers
class EchoTeacher:
    """A natural teacher stand-in: speaks through the fixture voice, under a peer's name."""

    def __init__(self, tts, name: str) -> None:
        self.tts, self.name, self.sample_rate = tts, name, tts.sample_rate

    def synthesize(self, text: str):
        from audiopd.eval.peers import PeerAudio

        res = self.tts.synthesize(text, mode="parallel", seed=0, check=False)
        return PeerAudio(res.audio, res.sample_rate, None)


def test_run_bench_checks_the_teachers_audio_with_the_voice_thresholds(voice_dir, monkeypatch) -> None:
    (voice_dir / "checker.yaml").write_text("min_window_score: -80\nasr: never\n")
    write_checksums(voice_dir)
    seen: list[tuple[CheckerConfig, int]] = []

    def recorder(audio, rate, text, *, config):
        seen.append((config, audio.size))
        return audiopd.checker.Verdict(passed=True, score=1.0, metrics={})

    monkeypatch.setattr(audiopd.checker, "score", recorder)
    tts = audiopd.load()
    teachers = [EchoTeacher(tts, "piper:one"), EchoTeacher(tts, "piper:two")]
    report = run_bench(3, kinds=("clean",), progress=False, tts=tts, sentences=LONG, teachers=teachers,
                       recognizer=first_sentence_heard, min_seconds=1.0)
    assert report["source"] == "teacher" and report["checker_config"] == "voice" and report["seed"] is None
    assert [c["voice"] for c in report["clips"]] == ["piper:one", "piper:two", "piper:one"]
    assert [c["text"] for c in report["clips"]] == LONG[:3]
    assert [cfg for cfg, _ in seen] == [tts.checker_config] * 3  # the voice's thresholds, not the defaults
    assert report["outside"]["n_clean"] == 3  # the teachers' clips are judged from outside too


def test_main_teacher_needs_a_voice_with_natural_teachers(voice_dir, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--teacher", "--n", "2", "--quiet"])
    assert "--teacher needs --voice" in capsys.readouterr().err
    assert main(["--voice", DEFAULT_VOICE, "--teacher", "--n", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "are not natural teachers" in err and "alice" in err


@pytest.mark.skipif(not FORTUNE_DIR.is_dir(), reason="needs Debian fortunes")
def test_main_words_picks_short_sentences_and_min_seconds_keeps_short_clips(voice_dir, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("audiopd.checker.sphinx.recognize", lambda audio, rate: "nothing like it")
    out = tmp_path / "short.json"
    assert main(["--voice", str(voice_dir), "--n", "3", "--kinds", "clean", "--checker-asr", "never", "--quiet",
                 "--words", "2-4", "--min-seconds", "0", "--out", str(out), "--asr", "pocketsphinx", "--no-mos"]) == 0
    texts = [c["text"] for c in json.loads(out.read_text())["clips"]]
    assert len(texts) == 3 and all(2 <= len(t.split()) <= 4 for t in texts)


@pytest.mark.parametrize("words", ["6-2", "0-3", "x", "3"])
def test_main_rejects_a_bad_words_range(voice_dir, capsys, words: str) -> None:
    with pytest.raises(SystemExit):
        main(["--voice", str(voice_dir), "--n", "2", "--words", words, "--quiet"])
    assert "--words must be MIN-MAX" in capsys.readouterr().err
