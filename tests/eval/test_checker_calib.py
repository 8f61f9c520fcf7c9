"""audiopd.eval.checker_calib: threshold sweeps from a hand-built bench report (pure arithmetic, no audio)."""

from __future__ import annotations

import json

import pytest

from audiopd.eval.checker_calib import derive, fails, format_text, main

CURRENT = {"min_window_score": -62.0, "min_mean_score": -30.0, "max_unexplained_speech_s": 0.3, "max_wer": 1.0}


def _clean(wer: float, failed: list[str], **metrics: float) -> dict:
    return {"kind": "clean", "passed": not failed, "failed": failed, "metrics": metrics,
            "outside": {"hyp": "", "edits": 0, "ref_words": 10, "wer": wer}}


def report() -> dict:
    items = [
        # intelligible (outside WER <= 0.5)
        _clean(0.1, [], alignment_window=-50.0, alignment_mean=-20.0, unexplained_speech=0.0, asr_wer=0.1),
        _clean(0.4, ["alignment_window"], alignment_window=-70.0, alignment_mean=-25.0, unexplained_speech=0.2),
        # broken (outside WER > 0.5)
        _clean(0.8, ["alignment_window", "alignment_mean", "unexplained_speech"], alignment_window=-90.0,
               alignment_mean=-40.0, unexplained_speech=0.5, asr_wer=0.8),
        _clean(0.9, ["alignment_window"], alignment_window=-65.0, alignment_mean=-28.0, unexplained_speech=0.1),
        _clean(1.0, ["alignment"]),  # alignment failed: no window/mean/unexplained metrics
        _clean(0.7, [], alignment_window=-55.0, alignment_mean=-22.0, unexplained_speech=0.0),  # broken, passed
        # a fault item: never part of the calibration
        {"kind": "skip", "passed": True, "failed": [], "metrics": {"alignment_window": -10.0}},
    ]
    return {"checker": dict(CURRENT), "items": items}


def test_fails_is_the_checkers_rule() -> None:
    assert fails(-65.0, -62.0) and fails(-62.0, -62.0) and not fails(-61.0, -62.0)
    assert fails(0.3, 0.3) and not fails(0.29, 0.3) and not fails(None, 0.3)


def test_window_score_sweep() -> None:
    r = derive(report())
    assert (r["n_clean"], r["n_intelligible"], r["n_broken"]) == (6, 2, 4)
    w = r["thresholds"]["min_window_score"]
    assert w["metric"] == "alignment_window" and w["current"] == -62.0 and w["n_with_metric"] == 5
    # No window value fails the clip whose alignment failed; with the other checks' help only the
    # -65 clip (failed by nothing but the window) and the -55 one (passed) need catching.
    assert w["fail_all_broken_alone"] is None and w["fail_all_broken_with_others"] == -55.0
    rows = {row["value"]: row for row in w["sweep"]}
    assert list(rows) == [-90.0, -65.0, -62.0, -55.0]  # loose to strict
    assert rows[-62.0]["current"] and not rows[-65.0]["current"]
    caught = {v: (row["broken_caught_alone"], row["broken_caught_total"]) for v, row in rows.items()}
    assert caught == {-90.0: (1, 2), -65.0: (2, 3), -62.0: (2, 3), -55.0: (3, 4)}
    fa = {v: (row["fa_intelligible_alone"], row["fa_intelligible_total"]) for v, row in rows.items()}
    assert fa == {-90.0: (0.0, 0.0), -65.0: (0.5, 0.5), -62.0: (0.5, 0.5), -55.0: (0.5, 0.5)}


def test_upper_limits_and_missing_metrics() -> None:
    r = derive(report())
    u = r["thresholds"]["max_unexplained_speech_s"]
    assert [row["value"] for row in u["sweep"]] == [0.5, 0.3, 0.1]  # loose to strict; 0 is no limit
    # The passed broken clip has 0 s unexplained speech: no positive limit can fail it.
    assert u["fail_all_broken_alone"] is None and u["fail_all_broken_with_others"] is None
    assert (u["sweep"][2]["broken_caught_alone"], u["sweep"][2]["fa_intelligible_alone"]) == (2, 0.5)
    assert r["thresholds"]["min_mean_score"]["fail_all_broken_with_others"] == -22.0
    wer = r["thresholds"]["max_wer"]
    assert wer["n_with_metric"] == 2  # ASR ran on two clips only (asr="borderline")
    assert wer["fail_all_broken_with_others"] is None  # the passed broken clip has no ASR WER
    # Without the failed alignment every broken clip has window/unexplained metrics: "alone" answers.
    rep = report()
    rep["items"] = [it for it in rep["items"] if it["failed"] != ["alignment"]]
    rep["items"][4]["metrics"]["unexplained_speech"] = 0.05
    t = derive(rep)["thresholds"]
    assert t["min_window_score"]["fail_all_broken_alone"] == -55.0
    assert t["max_unexplained_speech_s"]["fail_all_broken_alone"] == 0.05
    # When the other checks already fail every broken clip, the current value suffices.
    rep["items"] = rep["items"][:4]
    assert derive(rep)["thresholds"]["max_unexplained_speech_s"]["fail_all_broken_with_others"] == 0.3


def test_main_prints_tables_and_rejects_reports_without_outside(tmp_path, capsys) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps(report()))
    assert main([str(path), "--asr", "pocketsphinx"]) == 0  # an older report: no outside_judge, pocketsphinx
    out = capsys.readouterr().out
    assert out == format_text(derive(report())) + "\n"
    assert "6 clean clips: 2 intelligible, 4 broken" in out and "| -62 (current) | 2/4 | 3/4 | 50.0% | 50.0% |" in out
    assert main([str(path), "--json", "--asr", "pocketsphinx"]) == 0
    assert json.loads(capsys.readouterr().out) == derive(report())
    rep = report()
    for it in rep["items"]:
        it.pop("outside", None)
    path.write_text(json.dumps(rep))
    assert main([str(path), "--asr", "pocketsphinx"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no clean items with an outside judgement" in err
    with pytest.raises(ValueError):
        derive(rep)


def test_the_outside_recogniser_must_match_and_mos_is_printed(tmp_path, capsys) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps(report()))
    assert main([str(path)]) == 2  # --asr whisper (default) on a pocketsphinx-judged report
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "judgement is by pocketsphinx, not whisper" in err
    rep = report()
    rep["outside_judge"] = {"asr": "whisper"}
    for k, it in enumerate(it for it in rep["items"] if it["kind"] == "clean"):
        it["outside"].update(distillmos=2.0 + k, dnsmos_ovrl=2.0, dnsmos_p808=3.0)
    path.write_text(json.dumps(rep))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 broken (outside whisper WER > 0.5)" in out
    assert "intelligible: DistillMOS 2.50, DNSMOS OVRL 2.00, P.808 3.00" in out  # clips 0 and 1
    assert "broken: DistillMOS 5.50, DNSMOS OVRL 2.00, P.808 3.00" in out  # clips 2-5
