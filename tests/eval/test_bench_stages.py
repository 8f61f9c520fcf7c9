"""``audiopd bench --stages`` (audiopd.eval.bench_stages): rows, columns, arithmetic and the command, on a tiny voice.

The voice is the tiny fixture voice of tests/eval/test_bench.py (5 frames per phoneme token, fixture codec ``fx``).
No speed figure is asserted: only that every stage is there, the rows add up to the totals and the command
prints and writes the same figures.
"""

from __future__ import annotations

import json

import pytest
import torch
from voice_fixtures import install_voices

import audiopd
from audiopd import cli, pipeline, timing
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.cli import main
from audiopd.eval import bench_stages
from audiopd.eval.bench_stages import StagesConfig, markdown_table, run_stages, stage_rows

PIPELINE_ROWS = (timing.FRONTEND, timing.DURATIONS, timing.CONDITION, timing.LEVEL0, timing.FINE, timing.CODEC,
                 timing.CHECKER, timing.JOINS, timing.WRITE, timing.OTHER)


def passing(audio, sample_rate, text, **kw):
    return {"passed": True, "score": 1.0, "reasons": [], "bad_spans": []}


@pytest.fixture
def artifacts(tmp_path, monkeypatch):
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("slt", "rms")})
    torch.set_num_threads(1)
    return tmp_path


@pytest.fixture
def report(artifacts):
    # Chunks of at most 60 characters: the 4 s text is two chunks, so joins take place.
    tts = audiopd.load(config=pipeline.SynthesisConfig(max_chunk_chars=60))
    tts.checker = passing  # the checker's own cost is not what these tests are about
    return run_stages(tts, StagesConfig(lengths=(0.5, 4.0), repeats=3), speaker="rms", voice_name="joe")


def test_every_mode_and_length_is_measured(report) -> None:
    assert set(report["modes"]) == {"parallel", "auto", "serial"} and report["speaker"] == "rms"
    assert set(report["first_call_ms"]) == {"parallel", "auto", "serial"}
    for mode, cells in report["modes"].items():
        assert [c["target_s"] for c in cells] == [0.5, 4.0]
        assert abs(cells[0]["audio_s"] - 0.5) <= 0.3 and abs(cells[1]["audio_s"] - 4.0) <= 0.3
        assert cells[1]["chunks"] == 2 and len(cells[1]["runs"]) == 3
        for c in cells:
            assert c["rtf"] == pytest.approx(c["total_ms"] / 1000 / c["audio_s"], rel=0.01)
            assert c["stages_ms"][timing.JOINS] >= 0 and c["stages_ms"][timing.WRITE] > 0
            assert (timing.LEVEL0 in c["stages_ms"]) == (mode != "serial")
            assert (timing.SERIAL_LEVEL0 in c["stages_ms"]) == (mode == "serial")
            assert (timing.CHECKER in c["stages_ms"]) == (mode == "auto")


def test_stage_times_are_non_negative_and_add_up_to_the_total(report) -> None:
    for cells in report["modes"].values():
        for c in cells:
            for run in c["runs"]:  # every run's own rows add up exactly (to the JSON's rounding)
                assert all(v >= 0 for v in run["stages_ms"].values())
                assert sum(run["stages_ms"].values()) == pytest.approx(run["total_ms"], abs=0.01)
            # A column is the median call: the middle total, and that call's own rows.
            assert c["total_ms"] == sorted(r["total_ms"] for r in c["runs"])[1]
            assert c["stages_ms"] == c["runs"][c["median_run"]]["stages_ms"]
            assert sum(c["stages_ms"].values()) == pytest.approx(c["total_ms"], abs=0.01)


def test_the_table_has_every_stage_row_and_every_length_column(report) -> None:
    for mode in ("parallel", "auto"):
        lines = markdown_table(report, mode).splitlines()
        assert lines[0] == "| stage, ms in the median call (share) | 0.5 s | 4 s |"
        rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
        for name in PIPELINE_ROWS:
            assert name in rows, (mode, name)
        assert all(line.count(" | ") == 2 for line in lines[2:])  # a stage name and one cell per length
        cells = report["modes"][mode]
        assert rows["**total**"] == "| **total** | " + " | ".join(f"**{c['total_ms']:.1f}**" for c in cells) + " |"
        assert rows["RTF"] == "| RTF | " + " | ".join(f"{c['rtf']:.3f}" for c in cells) + " |"
        assert rows[timing.CHECKER].endswith("| - | - |") == (mode == "parallel")
        if mode == "auto":  # every chunk passed at its first attempt
            assert rows["attempts / chunks"] == "| attempts / chunks | 1 / 1 | 2 / 2 |"
    assert stage_rows(report)[-1] == timing.OTHER
    assert "serial mode (not in this total)" in markdown_table(report, "parallel")


def test_cli_stages_prints_the_tables_and_writes_the_same_figures(artifacts, capsys, monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "default_checker", lambda config=None, runtime="numpy", lexicon=None: passing)
    out = artifacts / "stages.json"
    argv = ["bench", "--stages", "--voice", "slt", "--lengths", "0.5,1", "--repeats", "1", "--seed", "3",
            "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["lengths"] == [0.5, 1.0] and report["seed"] == 3 and report["speaker"] == "slt"
    assert report["load_s"] >= 0 and set(report["modes"]) == {"parallel", "auto", "serial"}
    for mode in ("parallel", "auto"):
        assert f"\n{mode} mode\n" in printed and markdown_table(report, mode) in printed
    level0 = next(line for line in printed.splitlines() if line.startswith(f"| {timing.LEVEL0} |"))
    first = float(level0.split(" | ")[1].split()[0])
    assert first == round(report["modes"]["parallel"][0]["stages_ms"][timing.LEVEL0], 1)


@pytest.mark.parametrize("argv, needle", [
    (["--lengths", "0"], "lengths must be seconds in (0, 120]"),
    (["--lengths", "-1"], "lengths must be seconds in (0, 120]"),
    (["--lengths=1,-2"], "lengths must be seconds in (0, 120]"),
    (["--lengths", "1,x"], "--lengths must be comma-separated numbers"),
    (["--repeats", "0"], "repeats must be >= 1"),
    (["--seed", "-1"], "seed must be >= 0"),
    (["--threads", "0"], "--threads must be >= 1"),
    (["--batch", "8"], "--stages times batch 1 in parallel, auto and serial mode: drop --batch"),
    (["--no-rewarm"], "--stages times batch 1 in parallel, auto and serial mode: drop --no-rewarm"),
    (["--auto"], "drop --auto"),
])
def test_bad_input_is_one_line_exit_2_before_the_voice_loads(artifacts, capsys, monkeypatch, argv, needle) -> None:
    def not_now(*a, **kw):
        raise AssertionError("the voice was loaded before the options were checked")

    monkeypatch.setattr(cli, "_load_voice", not_now)
    before = sorted(p.name for p in artifacts.iterdir())
    rc = main(["bench", "--stages", "--json", str(artifacts / "s.json"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("audiopd: error: ") and err.count("\n") == 1 and needle in err, err
    assert sorted(p.name for p in artifacts.iterdir()) == before


def test_config_rejects_unknown_modes() -> None:
    with pytest.raises(bench_stages.BenchOptionError, match="modes must be among"):
        StagesConfig(modes=("parallel", "fast")).validate()
