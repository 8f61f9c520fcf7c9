"""`audiopd compare` on the command line: a whole run with the fake judge, and bad input -> one line, exit 2,
nothing written."""

from __future__ import annotations

import json

import pytest
from compare_fixtures import TEXTS, FakeJudge

from audiopd.cli import main
from audiopd.compare import judging


@pytest.fixture
def fake_judges(tts, monkeypatch):
    """The CLI loads its own Synthesizer (the voice's real checker) and the real judges: fake judges here."""
    monkeypatch.setattr(judging, "RealJudge", lambda asr, threads=None: FakeJudge())


def _texts(tmp_path, lines):
    p = tmp_path / "texts.txt"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_cli_writes_the_report_and_prints_the_headline(tmp_path, fake_judges, capsys) -> None:
    texts = _texts(tmp_path, ["# a comment", "", *TEXTS[:2]])
    out = tmp_path / "rep"
    rc = main(["compare", str(texts), "-o", str(out), "--voices", "rms", "--steps", "2,1", "--seeds", "0",
               "--bench-lengths", "0.3", "--bench-batch", "1,2", "--audio-format", "ogg", "--codec", "fx"])
    assert rc == 0
    stdout = capsys.readouterr().out
    assert "parallel-k1" in stdout and "smallest K matching serial" in stdout
    res = json.loads((out / "results.json").read_text())
    assert [u["system"] for u in res["utterances"][:3]] == ["serial", "parallel-k1", "parallel-k2"]
    assert all(u["audio"].endswith(".ogg") for u in res["utterances"])
    wl = res["summary"]["workload"]
    assert {(c["k"], c["batch"]) for c in wl["cells"]} == {(1, 1), (1, 2), (2, 1), (2, 2)}
    assert all(c["serial_wins"] == (c["serial_s"] < c["parallel_s"]) for c in wl["cells"])
    assert (out / "plots" / "workload.png").is_file()
    assert res["summary"]["config"]["texts"] == 2 and res["summary"]["config"]["codec"] == "fx"
    assert res["summary"]["config"]["decoder"] == "fixture"


@pytest.mark.parametrize("lines, extra, needle", [
    ([], [], "holds no sentences"),
    (["# only a comment", "  "], [], "holds no sentences"),
    (TEXTS, ["--voices", "rms,nobody"], "unknown voice 'nobody'"),
    (TEXTS, ["--steps", "1,x"], "--steps must be comma-separated integers"),
    (TEXTS, ["--steps", "0,4"], "--steps must be distinct integers in 1..256"),
    (TEXTS, ["--steps", ","], "--steps must not be empty"),
    (TEXTS, ["--steps", "300"], "1..256"),
    (TEXTS, ["--modes", "parallel"], "must include serial"),
    (TEXTS, ["--seeds", "-1"], "--seeds"),
    (["Fine.", "***"], [], "line 2"),
    (TEXTS, ["--asr", "google"], "invalid choice"),
    (TEXTS, ["--bench-batch", "0"], "--bench-batch"),
    (TEXTS, ["--codec", "no-such-codec"], "no-such-codec"),
    (TEXTS, ["--decoder", "no-such-decoder"], "no decoder 'no-such-decoder'"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, fake_judges, capsys, lines, extra,
                                                         needle) -> None:
    texts = _texts(tmp_path, lines)
    before = sorted(p.name for p in tmp_path.iterdir())
    rc = main(["compare", str(texts), "-o", str(tmp_path / "rep"), *extra])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("audiopd: error: ") and needle in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_missing_texts_and_missing_judges(tmp_path, tts, capsys, monkeypatch) -> None:
    assert main(["compare", str(tmp_path / "nope.txt"), "-o", str(tmp_path / "rep")]) == 2
    assert "no texts file" in capsys.readouterr().err
    assert main(["compare", "-o", str(tmp_path / "rep")]) == 2
    assert "no TEXTS" in capsys.readouterr().err

    def absent(asr, threads=None):
        raise judging.JudgeUnavailableError("the judges are not installed (test); install the eval extra")

    monkeypatch.setattr(judging, "RealJudge", absent)
    texts = _texts(tmp_path, TEXTS)
    assert main(["compare", str(texts), "-o", str(tmp_path / "rep")]) == 2
    assert "eval extra" in capsys.readouterr().err
    assert not (tmp_path / "rep").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".rep")]


def test_tally_errors(tmp_path, capsys) -> None:
    assert main(["compare", "--tally", str(tmp_path / "a.json"), "-o", str(tmp_path)]) == 2
    assert "no report at" in capsys.readouterr().err
    (tmp_path / "results.json").write_text(json.dumps({"utterances": [], "summary": {}}))
    (tmp_path / "a.json").write_text("{not json")
    assert main(["compare", "--tally", str(tmp_path / "a.json"), "-o", str(tmp_path)]) == 2
    assert "not a JSON file" in capsys.readouterr().err
    (tmp_path / "a.json").write_text(json.dumps({"format": "other", "answers": []}))
    assert main(["compare", "--tally", str(tmp_path / "a.json"), "-o", str(tmp_path)]) == 2
    assert "not an export of listen.html" in capsys.readouterr().err
