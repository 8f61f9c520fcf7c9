"""audiopd.eval.compare: paired bootstrap of WER between two systems of tts_eval reports."""

from __future__ import annotations

import json

import pytest

from audiopd.eval.compare import main, paired_bootstrap, utterance_edits
from audiopd.eval.tts_eval import EvalInputError


def _report(rows: list[tuple[str, str, str, int, int]], seed: int = 0) -> dict:
    utts = [{"speaker": s, "system": m, "id": i, "edits": e, "ref_words": w, "ref": "", "hyp": ""}
            for s, m, i, e, w in rows]
    return {"seed": seed, "utterances": utts}


def _pair(n: int, edits_a: int, edits_b: int, words: int = 10, speaker: str = "slt", seed: int = 0) -> dict:
    rows = [(speaker, "serial", f"t{k:03d}", edits_a, words) for k in range(n)]
    rows += [(speaker, "teacher", f"t{k:03d}", edits_b, words) for k in range(n)]
    return _report(rows, seed)


def test_corpus_level_wer_and_a_constant_difference_has_no_spread():
    rep = _pair(40, edits_a=3, edits_b=1)
    c = paired_bootstrap(utterance_edits([rep], "serial"), utterance_edits([rep], "teacher"), above=19.0)
    assert (c.n, c.wer_a, c.wer_b, c.diff) == (40, 30.0, 10.0, 20.0)
    # Every sentence differs by the same 2 of 10 words: every resample gives exactly +20.
    assert c.low == c.high == 20.0
    assert c.share_above == 1.0


def test_interval_covers_the_difference_and_widens_with_noise():
    rows = [("kal16", "serial", f"t{k:03d}", (k % 5), 10) for k in range(100)]
    rows += [("kal16", "teacher", f"t{k:03d}", 1, 10) for k in range(100)]
    rep = _report(rows)
    c = paired_bootstrap(utterance_edits([rep], "serial"), utterance_edits([rep], "teacher"), seed=3)
    assert c.diff == pytest.approx(10.0)  # mean edits 2 against 1 of 10 words
    assert c.low < c.diff < c.high
    assert 1.0 < c.high - c.low < 12.0
    again = paired_bootstrap(utterance_edits([rep], "serial"), utterance_edits([rep], "teacher"), seed=3)
    assert again == c  # deterministic for a seed


def test_seeds_average_and_parts_of_one_seed_join():
    r0, r1 = _pair(4, edits_a=2, edits_b=0), _pair(4, edits_a=4, edits_b=0, seed=1)
    a = utterance_edits([r0, r1], "serial")
    assert a[("slt", "t000")] == (3.0, 10)
    c = paired_bootstrap(a, utterance_edits([r0], "teacher"))
    assert c.wer_a == 30.0 and c.diff == 30.0
    halves = [_pair(4, 2, 0, speaker="slt"), _pair(4, 6, 0, speaker="rms")]  # seed 0, two processes
    joined = utterance_edits(halves, "serial")
    assert len(joined) == 8 and joined[("rms", "t000")] == (6.0, 10)
    with pytest.raises(EvalInputError, match="repeats 'serial' utterance"):
        utterance_edits([r0, r0], "serial")


def test_speakers_filter_and_pairing_on_shared_utterances():
    rep = _report([("slt", "serial", "t1", 5, 10), ("rms", "serial", "t1", 0, 10),
                   ("slt", "teacher", "t1", 1, 10), ("slt", "teacher", "t2", 9, 10)])
    a = utterance_edits([rep], "serial", ["slt"])
    assert set(a) == {("slt", "t1")}
    c = paired_bootstrap(a, utterance_edits([rep], "teacher"))
    assert c.n == 1 and c.diff == 40.0


def test_bad_inputs_are_specific_errors():
    rep = _pair(3, 1, 0)
    with pytest.raises(EvalInputError, match="no 'auto' utterances"):
        utterance_edits([rep], "auto")
    with pytest.raises(EvalInputError, match="seed 1 run holds other 'serial' utterances"):
        utterance_edits([rep, _pair(4, 1, 0, seed=1)], "serial")
    with pytest.raises(EvalInputError, match="no 'utterances'"):
        utterance_edits([{"rows": []}], "serial")
    with pytest.raises(EvalInputError, match="share no"):
        paired_bootstrap(utterance_edits([rep], "serial"),
                         utterance_edits([_pair(3, 1, 0, speaker="rms")], "teacher"))
    other_text = _report([("slt", "teacher", f"t{k:03d}", 0, 7) for k in range(3)])
    with pytest.raises(EvalInputError, match="not the same text"):
        paired_bootstrap(utterance_edits([rep], "serial"), utterance_edits([other_text], "teacher"))
    with pytest.raises(EvalInputError, match="resamples"):
        paired_bootstrap(utterance_edits([rep], "serial"), utterance_edits([rep], "teacher"), resamples=10)


def test_cli(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_pair(20, 3, 1)))
    # A report written before --asr existed was judged by pocketsphinx.
    argv = ["--a", "serial", str(path), "--b", "teacher", str(path), "--above", "5", "--asr", "pocketsphinx"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "20 paired utterances, pocketsphinx WER" in out and "distillmos" not in out and "A - B +20.00 (95% +20.00..+20.00)" in out and "> 5: 1.000" in out
    assert main(["--a", "serial", str(tmp_path / "missing.json"), "--b", "teacher", str(path)]) == 2
    assert "no report at" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["--a", "serial", str(tmp_path / "bad.json"), "--b", "teacher", str(path)]) == 2
    assert "not a JSON report" in capsys.readouterr().err
    assert main(["--a", "serial", "--b", "teacher", str(path)]) == 2
    assert "at least one report" in capsys.readouterr().err


def test_cli_checks_the_recogniser_and_prints_paired_mos(tmp_path, capsys):
    path = tmp_path / "r.json"
    rep = _pair(20, 3, 1)
    path.write_text(json.dumps(rep))
    assert main(["--a", "serial", str(path), "--b", "teacher", str(path)]) == 2  # default --asr whisper
    assert "judged by pocketsphinx, not whisper" in capsys.readouterr().err
    rep["judge"] = {"asr": "whisper"}
    for u in rep["utterances"]:
        u["distillmos"] = 2.5 if u["system"] == "serial" else 3.0
    path.write_text(json.dumps(rep))
    assert main(["--a", "serial", str(path), "--b", "teacher", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "20 paired utterances, whisper WER" in out[0]
    assert out[1] == "distillmos: 20 paired utterances: A 2.500, B 3.000, A - B -0.500 (95% -0.500..-0.500)"
    assert len(out) == 2  # no DNSMOS in these reports: no line for it
