"""audiopd.eval.judging: the shared judge of the evaluation commands (options, scoring, MOS means, the cache).

The outside models are replaced by counting fakes here (their own tests are in test_judges.py), so this runs
without the eval extra and checks the plumbing exactly.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from audiopd.eval import judges, judging


@pytest.fixture
def fake_judges(monkeypatch) -> dict[str, int]:
    calls = {"transcribe": 0, "naturalness": 0}

    def transcribe(self, audio, rate):
        judges.prepare(audio, rate)  # the real input checks still apply
        calls["transcribe"] += 1
        return "The traveller paid $13."

    def naturalness(self, audio, rate, *, dnsmos=True):
        calls["naturalness"] += 1
        level = float(np.abs(audio).mean())
        return {"distillmos": 2.0 + level, "dnsmos_ovrl": 3.0, "dnsmos_p808": 3.5}

    monkeypatch.setattr(judges, "check_installed", lambda **kw: None)
    monkeypatch.setattr(judges.Judges, "transcribe", transcribe)
    monkeypatch.setattr(judges.Judges, "naturalness", naturalness)
    return calls


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    judging.add_arguments(p)
    return p.parse_args(argv)


def test_options_default_to_whisper_with_mos() -> None:
    args = parse([])
    assert (args.judge_asr, args.judge_mos, args.judge_cache) == ("whisper", True, None)
    args = parse(["--asr", "pocketsphinx", "--no-mos", "--judge-cache", "c.jsonl"])
    assert (args.judge_asr, args.judge_mos, args.judge_cache) == ("pocketsphinx", False, "c.jsonl")
    with pytest.raises(SystemExit):
        parse(["--asr", "vosk"])


def test_score_normalises_both_sides_and_adds_mos(fake_judges) -> None:
    judge = judging.from_args(parse([]))
    s = judge.score("The traveler paid thirteen dollars.", np.full(1600, 0.5, np.float32), 16000)
    assert s["hyp"] == s["ref"] == ["the", "traveler", "paid", "thirteen", "dollars"]
    assert (s["edits"], s["ref_words"]) == (0, 5)
    assert (s["distillmos"], s["dnsmos_ovrl"], s["dnsmos_p808"]) == (2.5, 3.0, 3.5)
    d = judge.describe()
    assert d["asr"] == "whisper" and d["mos"] is True and d["normaliser"] == judging.NORMALISER
    assert set(d["costs"]) == set(judges.JUDGE_NAMES)


def test_no_mos_and_a_custom_recognizer() -> None:
    judge = judging.EvalJudge(lambda audio, rate: "a b x")
    s = judge.score("a b c", np.zeros(10, np.float32), 16000)
    assert (s["edits"], s["ref_words"]) == (1, 3) and s["distillmos"] is None
    assert judging.mos_means([s]) == {"distillmos": None, "dnsmos_ovrl": None, "dnsmos_p808": None}


def test_mos_means_skip_missing_values() -> None:
    scores = [{"distillmos": 2.0, "dnsmos_ovrl": 3.0, "dnsmos_p808": None}, {"distillmos": 3.0}]
    assert judging.mos_means(scores) == {"distillmos": 2.5, "dnsmos_ovrl": 3.0, "dnsmos_p808": None}
    assert judging.mos_cells({"distillmos": 2.456}) == "2.46 | - | -"


def test_the_cache_judges_identical_audio_once_across_runs(fake_judges, tmp_path) -> None:
    cache = tmp_path / "j" / "cache.jsonl"
    audio = np.full(1600, 0.25, np.float32)
    first = judging.from_args(parse(["--judge-cache", str(cache)]))
    a = first.score("one", audio, 16000)
    first.score("one", audio, 16000)
    assert fake_judges == {"transcribe": 1, "naturalness": 1}
    with open(cache, "a") as f:
        f.write('{"key": "cut off by a kill')  # an interrupted write is ignored, not fatal
    second = judging.from_args(parse(["--judge-cache", str(cache)]))
    assert second.score("one", audio, 16000) == a
    assert fake_judges == {"transcribe": 1, "naturalness": 1} and second.describe()["cache_hits"] == 2
    # Other audio, or the same audio under another recogniser, is judged anew.
    second.score("one", audio * 2, 16000)
    assert fake_judges == {"transcribe": 2, "naturalness": 2}


def test_a_cache_path_that_is_a_directory_is_a_clear_error(tmp_path) -> None:
    from audiopd.errors import AudiopdError

    with pytest.raises(AudiopdError, match="is a directory"):
        judging.EvalJudge(lambda a, r: "", cache=str(tmp_path))


def test_pocketsphinx_is_selectable(fake_judges, monkeypatch) -> None:
    monkeypatch.setattr("audiopd.checker.sphinx.recognize", lambda audio, rate: "hello there")
    judge = judging.from_args(parse(["--asr", "pocketsphinx"]))
    s = judge.score("Hello there.", np.zeros(160, np.float32), 16000)
    assert s["edits"] == 0 and fake_judges["transcribe"] == 0 and s["distillmos"] == 2.0


def test_no_dnsmos_leaves_its_keys_empty_and_a_later_judge_fills_them(monkeypatch, tmp_path) -> None:
    seen = []

    def naturalness(self, audio, rate, *, dnsmos=True):
        seen.append(dnsmos)
        return {"distillmos": 3.0, "dnsmos_ovrl": 2.0 if dnsmos else None, "dnsmos_p808": 3.0 if dnsmos else None}

    monkeypatch.setattr(judges, "check_installed", lambda **kw: None)
    monkeypatch.setattr(judges.Judges, "transcribe", lambda self, audio, rate: "x")
    monkeypatch.setattr(judges.Judges, "naturalness", naturalness)
    cache = str(tmp_path / "c.jsonl")
    audio = np.zeros(160, np.float32)
    s = judging.from_args(parse(["--no-dnsmos", "--judge-cache", cache])).score("x", audio, 16000)
    assert (s["distillmos"], s["dnsmos_ovrl"], s["dnsmos_p808"]) == (3.0, None, None) and seen == [False]
    full = judging.from_args(parse(["--judge-cache", cache]))
    assert full.score("x", audio, 16000)["dnsmos_ovrl"] == 2.0 and seen == [False, True]
    assert full.describe()["dnsmos"] is True
    # Without DNSMOS a cached DNSMOS is not reported either: every clip of a row has it or none has.
    again = judging.from_args(parse(["--no-dnsmos", "--judge-cache", cache])).score("x", audio, 16000)
    assert (again["distillmos"], again["dnsmos_ovrl"]) == (3.0, None) and seen == [False, True]
