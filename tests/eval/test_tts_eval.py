"""audiopd.eval.tts_eval on a tiny fixture voice and a two-sentence corpus with flite teacher audio.

The voice is a randomly initialised VoiceModel (speakers "slt" and "rms", like two corpus voices)
saved into tmp_path and found through $AUDIOPD_VOICES_PATH, with the fixture codec. Its duration
predictor is pinned to 5 frames per token, so serial steps are predictable. Teacher audio is
rendered with Debian flite in the speaker's own flite voice; pocketsphinx recognises everything
in the end-to-end test. Other tests pass a fixed recognizer so the WER arithmetic can be checked
exactly.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from voice_fixtures import install_voices

import audiopd
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.eval.tts_eval import (
    EvalInputError,
    evaluate,
    main,
    markdown_table,
    select_sentences,
)
from audiopd.text import phonemize
from audiopd.text.wer import text_to_words

SENTENCES = {"t001": "Please call me tomorrow morning.", "t002": "It was a very good year."}
SPEAKERS = ("slt", "rms")
needs_flite = pytest.mark.skipif(shutil.which("flite") is None, reason="Debian flite is not installed (make deps)")


@pytest.fixture
def voice_env(tmp_path, monkeypatch) -> Path:
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: SPEAKERS, "partial": ("slt", "zed")})
    return tmp_path


def write_corpus(root: Path, *, flite: bool) -> Path:
    """DATA/corpus/manifest.jsonl with the two test sentences per speaker (+ a train row with no wav)."""
    data = root / "data"
    rows = []
    for sid, text in SENTENCES.items():
        for sp in SPEAKERS:
            wav = data / "corpus" / "wav" / sp / f"{sid}.wav"
            wav.parent.mkdir(parents=True, exist_ok=True)
            if flite:
                subprocess.run(["flite", "-voice", sp, "-t", text, "-o", str(wav)], check=True)
            else:
                sf.write(str(wav), 0.1 * np.sin(np.arange(8000) / 5.0).astype(np.float32), 16000)
            rows.append({"id": sid, "voice": sp, "split": "test", "text": text,
                         "wav": str(wav.relative_to(data)), "seconds": 0.5})
    # A training sentence whose audio does not exist: the eval must never touch it.
    rows.append({"id": "t000", "voice": "slt", "split": "train", "text": "Never read me.",
                 "wav": "corpus/wav/slt/missing.wav", "seconds": 1.0})
    (data / "corpus" / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def pooled_wer(utts: list[dict], speaker: str | None, system: str) -> float:
    sel = [u for u in utts if u["system"] == system and (speaker is None or u["speaker"] == speaker)]
    return round(100.0 * sum(u["edits"] for u in sel) / sum(u["ref_words"] for u in sel), 2)


@pytest.mark.slow  # six pocketsphinx recognitions: ~12 s on the shared machine
@needs_flite
def test_end_to_end_with_flite_teacher_and_pocketsphinx(voice_env, tmp_path, capsys) -> None:
    data = write_corpus(tmp_path, flite=True)
    out = tmp_path / "r" / "report.json"
    rc = main(["--data", str(data), "--voice", DEFAULT_VOICE, "--n", "2", "--modes", "parallel,serial",
               "--speakers", "slt", "--steps", "4", "--batch", "2", "--out", str(out), "--asr", "pocketsphinx",
               "--no-mos"])
    assert rc == 0
    report = json.loads(out.read_text())
    assert report["n"] == 2 and report["speakers"] == ["slt"] and report["warnings"] == []
    assert {s["id"] for s in report["sentences"]} == set(SENTENCES)
    systems = ["teacher", "parallel", "serial"]
    assert [r["system"] for r in report["rows"]] == systems
    # Every system spoke exactly the same sentences.
    for sy in systems:
        assert sorted(u["id"] for u in report["utterances"] if u["system"] == sy) == ["t001", "t002"]
    rows = {r["system"]: r for r in report["rows"]}
    for sy, r in rows.items():
        assert r["wer"] == pooled_wer(report["utterances"], "slt", sy)
        if sy == "teacher":
            assert r["gap_pp"] is None and r["rtf"] is None and r["forward_passes"] is None
        else:
            assert r["gap_pp"] == pytest.approx(r["wer"] - rows["teacher"]["wer"], abs=0.011)
            assert r["rtf"] > 0 and r["forward_passes"] > 0
    # pocketsphinx recognises these flite sentences well; the untrained voice speaks shaped noise.
    assert rows["teacher"]["wer"] <= 20.0
    assert rows["serial"]["wer"] > rows["teacher"]["wer"]
    # Both texts share one padded batch: serial takes one level-0 step per frame of the longer one
    # (5 frames per token); parallel at most K = 4.
    assert rows["serial"]["steps"] == max(len(phonemize(t).ids) * 5 for t in SENTENCES.values())
    assert 1 <= rows["parallel"]["steps"] <= 4
    # The same table goes to stdout.
    printed = capsys.readouterr().out
    assert markdown_table(report) in printed and printed.count("| slt |") == 3


def test_main_prints_the_table_and_writes_the_json(voice_env, tmp_path, capsys, monkeypatch) -> None:
    # pocketsphinx costs ~1-2 s per clip here (see the slow test above); this one checks the plumbing.
    monkeypatch.setattr("audiopd.checker.sphinx.recognize", lambda audio, rate: "it was a good year")
    data = write_corpus(tmp_path, flite=False)
    out = tmp_path / "r" / "report.json"
    assert main(["--data", str(data), "--n", "2", "--modes", "parallel,serial", "--steps", "3", "--batch", "1",
                 "--seed", "5", "--out", str(out), "--asr", "pocketsphinx", "--no-mos"]) == 0
    report = json.loads(out.read_text())
    assert (report["voice"], report["codec"], report["seed"], report["steps"]) == (DEFAULT_VOICE, "fx", 5, 3)
    assert report["decoder"] == "fixture"  # the codec's default; --decoder names another
    assert [(r["speaker"], r["system"]) for r in report["rows"]] == [
        (sp, sy) for sp in (*SPEAKERS, "all") for sy in ("teacher", "parallel", "serial")]
    assert len(report["utterances"]) == 3 * 2 * len(SPEAKERS)
    for u in report["utterances"]:
        assert (u["speaker"], u["system"]) in {(r["speaker"], r["system"]) for r in report["rows"]}
        assert u["hyp"] == "it was a good year" and u["ref_words"] == len(text_to_words(SENTENCES[u["id"]]))
    printed = capsys.readouterr().out
    assert markdown_table(report) in printed and printed.count("| all |") == 3


def test_wer_gap_and_costs_with_a_fixed_recognizer(voice_env, tmp_path) -> None:
    data = write_corpus(tmp_path, flite=False)
    heard = []

    def recognizer(audio: np.ndarray, rate: int) -> str:
        heard.append(audio.size / rate)
        return "it was a call"  # t001: 4 substitutions + 1 deletion; t002: 3 hits, 1 substitution, 2 deletions

    tts = audiopd.load()
    report = evaluate(tts, data, n=5, modes=["serial"], seed=3, batch=1, recognizer=recognizer)
    assert report["n"] == 2 and report["warnings"] == ["only 2 test sentences are eligible, not 5"]
    refs = [text_to_words(SENTENCES[i]) for i in sorted(SENTENCES)]
    assert [len(r) for r in refs] == [5, 6]
    expected = round(100.0 * (5 + 3) / 11, 2)
    rows = {(r["speaker"], r["system"]): r for r in report["rows"]}
    for sp in (*SPEAKERS, "all"):
        assert rows[(sp, "teacher")]["wer"] == rows[(sp, "serial")]["wer"] == expected
        assert rows[(sp, "serial")]["gap_pp"] == 0.0
    ser = rows[("slt", "serial")]
    assert ser["rtf"] == pytest.approx(ser["wall_s"] / ser["audio_s"], rel=0.01)
    # Teacher clips (0.5 s) and the synthesis of both sentences (5 frames per token), for both speakers.
    synth = sorted(len(phonemize(t).ids) * 5 / 100 for t in SENTENCES.values())
    assert sorted(heard) == pytest.approx(sorted([0.5] * 4 + synth * 2))


def test_a_speaker_outside_the_corpus_has_no_teacher_and_no_gap(voice_env, tmp_path) -> None:
    data = write_corpus(tmp_path, flite=False)
    tts = audiopd.load("partial")
    report = evaluate(tts, data, n=2, modes=["parallel"], steps=2, recognizer=lambda a, r: "")
    assert report["warnings"] == ["speaker 'zed' is not a corpus voice: no teacher audio, no gap"]
    rows = {(r["speaker"], r["system"]): r for r in report["rows"]}
    assert set(rows) == {("slt", "teacher"), ("slt", "parallel"), ("zed", "parallel"), ("all", "teacher"),
                         ("all", "parallel")}
    assert rows[("slt", "parallel")]["gap_pp"] == 0.0 and rows[("slt", "parallel")]["wer"] == 100.0
    assert rows[("zed", "parallel")]["gap_pp"] is None and rows[("all", "parallel")]["gap_pp"] is None


def test_a_speaker_named_apart_from_its_teacher_is_judged_beside_the_teachers_recordings(tmp_path, monkeypatch) -> None:
    # The natural voice's "joe" learnt from the corpus voice "piper:joe" (VoiceInfo.teachers).
    import dataclasses

    from voice_fixtures import tiny_voice

    from audiopd.codec.fixture import write_fixture_artifact
    from audiopd.model.voice import save_voice

    data = write_corpus(tmp_path, flite=False)  # corpus voices slt and rms
    write_fixture_artifact(tmp_path / "codecs" / "fx")
    model = tiny_voice(("joe", "ann"))
    model.info = dataclasses.replace(model.info, teachers=("slt", ""))
    save_voice(model, tmp_path / "voices" / "named")
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path / "codecs"))
    tts = audiopd.load(tmp_path / "voices" / "named")
    report = evaluate(tts, data, n=2, modes=["parallel"], steps=2, recognizer=lambda a, r: "")
    rows = {(r["speaker"], r["system"]) for r in report["rows"]}
    assert ("joe", "teacher") in rows and ("ann", "teacher") not in rows
    assert report["warnings"] == ["speaker 'ann' is not a corpus voice: no teacher audio, no gap"]


def _rows(ids_by_voice: dict[str, list[str]], split: str = "test") -> list[dict]:
    return [{"id": i, "voice": v, "split": split, "text": f"Sentence {i}.", "wav": f"corpus/wav/{v}/{i}.wav"}
            for v, ids in ids_by_voice.items() for i in ids]


IDS = [f"s{k:03d}" for k in range(30)]


@pytest.mark.parametrize("speakers, n, seed, expect_len", [
    (["a", "b"], 10, 0, 10),
    (["a"], 10, 1, 10),
    (["a", "b"], 100, 0, 29),  # s029 lacks speaker b
    (["a", "zed"], 100, 0, 30),  # zed is no corpus voice: no constraint from it
])
def test_select_sentences_is_deterministic_and_shared(speakers, n, seed, expect_len) -> None:
    rows = _rows({"a": IDS, "b": IDS[:29]}) + _rows({"a": ["x1", "x2"]}, split="train")
    picked = select_sentences(rows, speakers, n, seed)
    assert len(picked) == expect_len and [s.id for s in picked] == sorted(s.id for s in picked)
    assert all(s.id in IDS for s in picked)
    assert [s.id for s in select_sentences(rows, speakers, n, seed)] == [s.id for s in picked]
    if expect_len < 29:
        assert [s.id for s in select_sentences(rows, speakers, n, seed + 1)] != [s.id for s in picked]


def test_the_dev_split_is_drawn_apart_from_the_test_split() -> None:
    dev = [f"d{k:03d}" for k in range(8)]
    rows = _rows({"a": IDS, "b": IDS}) + _rows({"a": dev, "b": dev}, split="dev")
    assert [s.id for s in select_sentences(rows, ["a", "b"], 100, 0, "dev")] == dev
    assert {s.id for s in select_sentences(rows, ["a", "b"], 100, 0)} == set(IDS)  # test, the default
    with pytest.raises(EvalInputError, match="no 'dev' split rows"):
        select_sentences(_rows({"a": IDS}), ["a"], 5, 0, "dev")
    with pytest.raises(EvalInputError, match="--split must be one of test, dev, got 'train'"):
        select_sentences(rows, ["a"], 5, 0, "train")


@pytest.mark.parametrize("rows, speakers, n, needle", [
    (_rows({"a": IDS}, split="train"), ["a"], 5, "no 'test' split rows"),
    (_rows({"a": IDS[:5], "b": IDS[5:]}), ["a", "b"], 5, "no test sentence is recorded by all of a, b"),
    (_rows({"a": IDS}), ["a"], 0, "--n must be >= 1"),
])
def test_select_sentences_rejects_unusable_input(rows, speakers, n, needle) -> None:
    with pytest.raises(EvalInputError, match=needle):
        select_sentences(rows, speakers, n, 0)


@pytest.mark.parametrize("argv, needle", [
    (["--data", "{d}/nowhere"], "no corpus manifest at"),
    (["--modes", "parallel,fast"], "modes must be a non-empty list"),
    (["--speakers", "slt,carol"], "unknown speaker(s) carol"),
    (["--batch", "0"], "--batch must be >= 1"),
    (["--join", "0"], "--join must be >= 1"),
    (["--n", "2", "--join", "5"], "--join 5 needs at least 5 sentences"),
    (["--voice", "nope"], "no voice named 'nope'"),
    (["--decoder", "hq"], "has no decoder 'hq'"),
])
def test_main_bad_input_is_one_line_and_exit_2(voice_env, tmp_path, capsys, argv, needle) -> None:
    data = write_corpus(tmp_path, flite=False)
    argv = ["--data", str(data), "--asr", "pocketsphinx", "--no-mos", *[a.format(d=tmp_path) for a in argv]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("tts_eval: error: ") and err.count("\n") == 1 and needle in err, err


def test_a_missing_eval_extra_is_one_line_naming_it(voice_env, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "faster_whisper", None)  # as if the eval extra were not installed
    data = write_corpus(tmp_path, flite=False)
    assert main(["--data", str(data), "--n", "1", "--no-mos"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'audiopd[eval]'" in err, err


def test_markdown_table_marks_missing_values() -> None:
    report = {"rows": [
        {"speaker": "slt", "system": "teacher", "n": 2, "wer": 10.0, "gap_pp": None, "forward_passes": None,
         "steps": None, "rtf": None, "distillmos": 3.1, "dnsmos_ovrl": 2.9, "dnsmos_p808": 3.456},
        {"speaker": "slt", "system": "parallel", "n": 2, "wer": 12.5, "gap_pp": 2.5, "forward_passes": 11.0,
         "steps": 8.0, "rtf": 0.25},
    ], "judge": {"asr": "whisper"}}
    lines = markdown_table(report).splitlines()
    assert len(lines) == 4 and lines[0].startswith("| speaker | system | n | WER % whisper |")
    assert lines[2] == "| slt | teacher | 2 | 10.0 | - | 3.10 | 2.90 | 3.46 | - | - | - |"
    assert lines[3] == "| slt | parallel | 2 | 12.5 | +2.50 | - | - | - | 11.0 | 8.0 | 0.25 |"


def test_auto_summary_counts_escalations_fallbacks_and_broken_passes() -> None:
    from audiopd.eval.tts_eval import auto_summary

    def u(attempts, mode, passed, edits, words=4):
        return {"system": "auto", "attempts": attempts, "delivered_mode": mode, "check_passed": passed,
                "edits": edits, "ref_words": words}

    utts = [u(1, "parallel", True, 0), u(3, "parallel", True, 3), u(4, "serial", False, 4),
            {"system": "parallel", "edits": 0, "ref_words": 4}]
    s = auto_summary(utts)
    assert s["n"] == 3
    assert s["escalated_share"] == round(2 / 3, 3)
    assert s["serial_fallback_share"] == round(1 / 3, 3)
    assert s["delivered_failing_share"] == round(1 / 3, 3)
    assert s["asr_broken"] == 2 and s["asr_broken_but_passed"] == 1
    assert auto_summary(utts[3:]) is None


def test_join_speaks_passages_and_joins_the_teacher_recordings(voice_env, tmp_path) -> None:
    """--join 2: one passage per speaker, its text the two sentences, its teacher audio both recordings."""
    from audiopd.eval.tts_eval import TEACHER_PAUSE_S
    from audiopd.synthesis.join import JoinConfig

    assert TEACHER_PAUSE_S == JoinConfig().pause_s
    data = write_corpus(tmp_path, flite=False)
    heard, texts = [], []

    def recognizer(audio: np.ndarray, rate: int) -> str:
        heard.append(round(audio.size / rate, 3))
        return "please call me tomorrow"

    tts = audiopd.load()
    real = tts.synthesize_batch

    def spy(batch, **kw):
        texts.extend(batch)
        return real(batch, **kw)

    tts.synthesize_batch = spy
    report = evaluate(tts, data, n=2, modes=["parallel"], steps=2, batch=4, join=2, recognizer=recognizer)
    assert report["n"] == 1 and report["join"] == 2 and report["warnings"] == []
    passage = " ".join(SENTENCES[i] for i in sorted(SENTENCES))
    assert report["sentences"] == [{"id": "t001+t002", "text": passage}]
    assert texts == [passage] * len(SPEAKERS)
    # Teacher: two 0.5 s recordings with the pause between them, once per speaker.
    assert heard.count(round(0.5 + TEACHER_PAUSE_S + 0.5, 3)) == len(SPEAKERS)
    ref = text_to_words(passage)
    for u in report["utterances"]:
        assert u["ref_words"] == len(ref) == 11 and u["edits"] == 7  # 4 hits, 7 deletions


def test_join_rejects_too_few_sentences_and_warns_about_leftovers(voice_env, tmp_path) -> None:
    from audiopd.eval.tts_eval import join_sentences

    data = write_corpus(tmp_path, flite=False)
    tts = audiopd.load()
    with pytest.raises(EvalInputError, match="--join 3 needs at least 3 sentences"):
        evaluate(tts, data, n=2, modes=["parallel"], join=3, recognizer=lambda a, r: "")
    with pytest.raises(EvalInputError, match="--join must be >= 1"):
        join_sentences([], 0)
    from audiopd.eval.tts_eval import Sentence

    three = [Sentence(f"s{i}", f"Text {i}.", {"slt": (f"w{i}.wav",)}) for i in range(3)]
    three[0].wavs["rms"] = ("r0.wav",)  # a voice that did not record every part is not a passage voice
    joined = join_sentences(three, 2)
    assert [(s.id, s.text, s.wavs) for s in joined] == [("s0+s1", "Text 0. Text 1.", {"slt": ("w0.wav", "w1.wav")})]
    assert join_sentences(three, 1) == three


def test_peers_speak_the_same_sentences_as_rows_of_their_own(voice_env, tmp_path) -> None:
    from audiopd.eval.judging import EvalJudge
    from audiopd.eval.peers import PeerAudio

    data = write_corpus(tmp_path, flite=False)

    class FakePeer:
        name = "kokoro:af_heart"
        sample_rate = 24000

        def __init__(self) -> None:
            self.texts: list[str] = []

        def synthesize(self, text: str) -> PeerAudio:
            self.texts.append(text)
            return PeerAudio(np.full(24000, 0.1, np.float32), 24000, None)

    peer = FakePeer()
    # The peer's 1 s clips are heard right; everything else (0.5 s teacher clips) as nothing.
    judge = EvalJudge(lambda a, r: SENTENCES["t001"] if a.size == 24000 else "",
                      lambda a, r: {"distillmos": 4.5 if a.size == 24000 else 3.0, "dnsmos_ovrl": 3.0,
                                    "dnsmos_p808": 3.5})
    report = evaluate(audiopd.load(), data, n=2, modes=[], speakers=["slt"], judge=judge, peers=[peer])
    assert peer.texts == [SENTENCES["t001"], SENTENCES["t002"]] and report["peers"] == ["kokoro:af_heart"]
    rows = {(r["speaker"], r["system"]): r for r in report["rows"]}
    assert set(rows) == {("slt", "teacher"), ("kokoro:af_heart", "peer")}
    p = rows[("kokoro:af_heart", "peer")]
    assert p["n"] == 2 and p["gap_pp"] is None and p["distillmos"] == 4.5 and p["rtf"] is not None
    assert p["wer"] == round(100.0 * 6 / 11, 2)  # t002 (6 words) heard as t001's words: all 6 wrong
    assert rows[("slt", "teacher")]["distillmos"] == 3.0 and rows[("slt", "teacher")]["rtf"] is None
    with pytest.raises(EvalInputError, match="modes must be"):
        evaluate(audiopd.load(), data, n=2, modes=[], judge=judge)


def test_the_natural_corpus_layout_is_read_too(tmp_path) -> None:
    # recipes/natural writes DATA/manifest.jsonl (no corpus/ folder), voices named like "piper:joe".
    from audiopd.eval.heldout import read_manifest

    row = {"id": "n1", "voice": "piper:joe", "split": "test", "text": "Hello there.", "wav": "wav/piper_joe/n1.wav"}
    (tmp_path / "manifest.jsonl").write_text(json.dumps(row) + "\n")
    assert read_manifest(tmp_path) == [row]
    picked = select_sentences([row], ["piper:joe"], 5, 0)
    assert [(s.id, s.wavs) for s in picked] == [("n1", {"piper:joe": ("wav/piper_joe/n1.wav",)})]
    # The flite corpus's manifest wins when both exist.
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "manifest.jsonl").write_text(json.dumps({**row, "voice": "slt"}) + "\n")
    assert [r["voice"] for r in read_manifest(tmp_path)] == ["slt"]


def test_help_names_the_default_voice_by_its_value(capsys) -> None:
    try:
        rc = main(["--help"])
    except SystemExit as exc:  # argparse's --help
        rc = exc.code
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines at the terminal's width
    assert rc == 0 and f"./myvoice (default: {DEFAULT_VOICE})" in out and "(default: default)" not in out
