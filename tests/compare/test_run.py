"""audiopd.compare.run on the tiny fixture voice with the fake judge: what is synthesised, scored and written."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import soundfile as sf
from compare_fixtures import TEXTS, FakeJudge

from audiopd.compare.run import CompareConfig, CompareInputError, run_compare


def test_report_holds_every_clip_in_the_issue_schema(tts, small_cfg, tmp_path) -> None:
    out = tmp_path / "rep"
    judge = FakeJudge()
    results = run_compare(tts, TEXTS, small_cfg, judge, out)
    utts = results["utterances"]
    # 3 texts x 2 voices x 2 seeds x (serial + K=1 + K=4)
    assert len(utts) == 3 * 2 * 2 * 3 == judge.calls
    keys = {"text", "voice", "system", "seed", "audio", "distillmos", "dnsmos", "wer", "passed", "forward_passes",
            "wall_s", "rtf"}
    assert all(set(u) == keys for u in utts)
    assert {u["system"] for u in utts} == {"serial", "parallel-k1", "parallel-k4"}
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk["utterances"] == utts
    for u in utts:
        audio, rate = sf.read(out / u["audio"])
        assert rate == tts.sample_rate and audio.size > 0
        assert 0.0 <= u["wer"] <= 1.0 and u["wall_s"] > 0 and u["rtf"] == pytest.approx(
            u["wall_s"] / (audio.size / rate), rel=0.02)
    # K bounds the level-0 steps, so the passes grow with K; serial takes one level-0 step per frame.
    passes = {s: np.mean([u["forward_passes"] for u in utts if u["system"] == s]) for s in
              ("parallel-k1", "parallel-k4", "serial")}
    assert passes["parallel-k1"] < passes["parallel-k4"] < passes["serial"]
    # Clip names hide the system.
    assert not any(s in u["audio"] for u in utts for s in ("serial", "parallel"))
    assert "| parallel-k4 | 12 |" in (out / "summary.md").read_text()
    for name in ("index.html", "listen.html", "details.json", "summary.md", "plots/quality_vs_k.png", "plots/quality_per_ms.png",
                 "plots/worst_1.png", "plots/worst_2.png"):
        assert (out / name).is_file(), name
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".rep")]  # the build folder is gone


def test_same_seed_same_audio_and_summary_against_serial(tts, small_cfg, tmp_path) -> None:
    a = run_compare(tts, TEXTS[:1], small_cfg, FakeJudge(), tmp_path / "a")
    b = run_compare(tts, TEXTS[:1], small_cfg, FakeJudge(), tmp_path / "b")
    strip = [{k: v for k, v in u.items() if k not in ("wall_s", "rtf")} for u in a["utterances"]]
    assert strip == [{k: v for k, v in u.items() if k not in ("wall_s", "rtf")} for u in b["utterances"]]
    s = a["summary"]
    assert set(s["vs_serial"]) == {"parallel-k1", "parallel-k4"}
    mos = s["vs_serial"]["parallel-k1"]["distillmos"]
    assert mos["low"] <= mos["diff"] <= mos["high"] and mos["n"] == 2  # (voice, text) pairs, seeds averaged


def test_auto_mode_uses_the_verdict_it_delivered_with(tts, tmp_path) -> None:
    cfg = CompareConfig(voices=("rms",), modes=("serial", "auto"), steps=(), seeds=(0,), spectrograms=0, bench=False)
    res = run_compare(tts, TEXTS[:2], cfg, FakeJudge(), tmp_path / "r")
    assert [u["system"] for u in res["utterances"]] == ["serial", "auto"] * 2


def test_failure_leaves_no_report_and_keeps_the_earlier_one(tts, small_cfg, tmp_path) -> None:
    out = tmp_path / "rep"
    run_compare(tts, TEXTS[:1], small_cfg, FakeJudge(), out)
    before = (out / "results.json").read_text()

    class Broken(FakeJudge):
        def score(self, audio, sample_rate, text):
            if self.calls >= 3:
                raise RuntimeError("judge crashed")
            return super().score(audio, sample_rate, text)

    with pytest.raises(RuntimeError):
        run_compare(tts, TEXTS, small_cfg, Broken(), out)
    assert (out / "results.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["art", "rep"]


@pytest.mark.parametrize("cfg, needle", [
    (CompareConfig(voices=("nobody",)), "unknown voice 'nobody'"),
    (CompareConfig(modes=("parallel",)), "must include serial"),
    (CompareConfig(steps=(0, 3)), "--steps"),
    (CompareConfig(steps=(3, 3)), "--steps"),
    (CompareConfig(modes=("serial", "fast")), "--modes"),
    (CompareConfig(seeds=()), "--seeds"),
])
def test_bad_config_is_refused_before_any_folder(tts, tmp_path, cfg, needle) -> None:
    with pytest.raises(CompareInputError, match=needle.replace("(", r"\(")):
        run_compare(tts, TEXTS, cfg, FakeJudge(), tmp_path / "rep")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["art"]


def test_refuses_a_folder_holding_something_else(tts, small_cfg, tmp_path) -> None:
    out = tmp_path / "rep"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    with pytest.raises(CompareInputError, match="not empty"):
        run_compare(tts, TEXTS, small_cfg, FakeJudge(), out)
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_merge_joins_speakers_and_refuses_overlaps(tts, tmp_path) -> None:
    from audiopd.compare.run import merge_reports

    one = CompareConfig(voices=("rms",), steps=(2,), seeds=(0,), spectrograms=1, bench=False)
    a = run_compare(tts, TEXTS[:2], one, FakeJudge(), tmp_path / "a")
    b = run_compare(tts, TEXTS[:2], dataclasses.replace(one, voices=("slt",)), FakeJudge(), tmp_path / "b")
    merged = merge_reports([tmp_path / "a", tmp_path / "b"], tmp_path / "m")
    assert merged["utterances"] == a["utterances"] + b["utterances"]
    assert merged["summary"]["config"]["voices"] == ["rms", "slt"]
    assert merged["summary"]["vs_serial"]["parallel-k2"]["distillmos"]["n"] == 4  # 2 texts x 2 speakers
    for u in merged["utterances"]:
        assert (tmp_path / "m" / u["audio"]).read_bytes() == (tmp_path / ("a" if u["voice"] == "rms" else "b")
                                                               / u["audio"]).read_bytes()
    assert (tmp_path / "m" / "index.html").is_file() and (tmp_path / "m" / "listen.html").is_file()
    with pytest.raises(CompareInputError, match="both hold"):
        merge_reports([tmp_path / "a", tmp_path / "a"], tmp_path / "m2")
    assert not (tmp_path / "m2").exists()
