"""audiopd.eval.bench and `audiopd bench`: structure, lengths and interleaving on a tiny fixture voice.

The voice is a randomly initialised VoiceModel (speakers "slt" and "rms") with the fixture codec,
saved into tmp_path and found through $AUDIOPD_VOICES_PATH / $AUDIOPD_CODECS_PATH. Its duration
predictor is pinned to 5 frames per token (100 frames/s), so lengths are predictable. No speed
figure is asserted anywhere: only what was measured, how, and that the arithmetic is consistent.
"""

from __future__ import annotations

import json
import statistics

import pytest
import torch
from voice_fixtures import FRAMES_PER_TOKEN, install_voices

import audiopd
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.cli import main
from audiopd.eval import bench, bench_cli
from audiopd.eval.bench import (
    BENCH_SENTENCES,
    BenchConfig,
    BenchOptionError,
    build_text,
    predicted_seconds,
    run_bench,
)
from audiopd.pipeline import SynthesisConfig
from audiopd.text import phonemize


@pytest.fixture
def artifacts(tmp_path, monkeypatch):
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("slt", "rms")})
    torch.set_num_threads(1)
    return tmp_path


@pytest.fixture
def tts(artifacts):
    return audiopd.load()


def test_bench_sentences_are_plain_and_distinct() -> None:
    assert len(set(BENCH_SENTENCES)) == len(BENCH_SENTENCES) == 40  # build_text's 7-step offsets rely on 40
    for s in BENCH_SENTENCES:
        assert s[0].isupper() and s[-1] in ".?!" and not any(ch.isdigit() for ch in s)
        assert phonemize(s).text  # the frontend takes every one as is


@pytest.mark.parametrize("target", [0.5, 1.0, 3.0, 12.0])
def test_build_text_lands_on_the_voices_predicted_length(tts, target: float) -> None:
    text = build_text(tts, target)
    # The closest word boundary: within about half a word (a word is a few tokens of 50 ms here).
    assert abs(predicted_seconds(tts, text) - target) <= 0.3
    assert text.endswith(".") and text.split()[0] == BENCH_SENTENCES[0].split()[0]


def test_predicted_seconds_is_what_the_facade_delivers(artifacts) -> None:
    # Small chunks force the facade's chunking and joining pauses into play.
    tts = audiopd.load(config=SynthesisConfig(max_chunk_chars=60))
    text = build_text(tts, 6.0, offset=3)
    res = tts.synthesize(text, mode="parallel", steps=2, seed=0)
    assert res.report["chunks"] >= 2
    assert res.duration_s == pytest.approx(predicted_seconds(tts, text), abs=1e-6)


def test_bench_structure_medians_and_interleaving(tts) -> None:
    codec = tts.codec
    cfg = BenchConfig(lengths=(0.5, 1.5), batches=(1, 3), repeats=2, steps=4)
    report = run_bench(tts, cfg, speaker="rms")
    assert tts.codec is codec  # the timing wrapper is removed again
    assert report["speaker"] == "rms" and report["codec"] == "fx" and report["torch_threads"] == 1
    cells = report["cells"]
    assert [(c["target_s"], c["batch"]) for c in cells] == [(0.5, 1), (0.5, 3), (1.5, 1), (1.5, 3)]
    for c in cells:
        assert len(c["texts"]) == c["batch"] == len(set(c["texts"]))
        assert abs(c["audio_s"] - c["target_s"]) <= 0.3
        assert c["audio_s_total"] == pytest.approx(c["audio_s"] * c["batch"], abs=0.01)
        par, ser = c["modes"]["parallel"], c["modes"]["serial"]
        assert set(c["modes"]) == {"parallel", "serial"}
        for m in (par, ser):
            assert len(m["wall_s"]) == 2 and m["median_s"] == pytest.approx(statistics.median(m["wall_s"]), abs=1e-4)
            assert m["rtf"] == pytest.approx(m["median_s"] / c["audio_s_total"], rel=0.01, abs=1e-4)
            assert 0 <= m["rtf_model"] <= m["rtf"] + 1e-4 and 0 < m["codec_share"] < 1
            assert m["forward_passes"] >= m["steps"] >= 1
        assert c["serial_over_parallel"] == pytest.approx(ser["median_s"] / par["median_s"], rel=0.01)
        # Serial: one level-0 step per frame of the longest text; parallel: at most K = 4 steps.
        longest = max(len(phonemize(t).ids) for t in c["texts"]) * FRAMES_PER_TOKEN
        assert ser["steps"] == longest and 1 <= par["steps"] <= 4
    # Batch 1 speaks the first text of the larger batch (same start sentence, same target).
    assert cells[0]["texts"][0] == cells[1]["texts"][0]
    # Interleaved per repeat: P S P S in every cell, in cell order.
    seq = [(o["target_s"], o["batch"], o["repeat"], o["mode"]) for o in report["order"]]
    assert seq == [(c["target_s"], c["batch"], r, m) for c in cells for r in range(2) for m in ("parallel", "serial")]
    table = bench_cli.markdown_table(report).splitlines()
    assert len(table) == 2 + len(cells) and "auto s" not in table[0]
    assert table[2].startswith(f"| 0.5 | {cells[0]['audio_s']:.2f} | 1 | ")


def test_auto_column_only_at_batch_1(tts) -> None:
    calls = []

    def checker(audio, sample_rate, text, **kw):
        calls.append(text)
        return {"passed": True, "score": 1.0, "reasons": [], "bad_spans": []}

    tts.checker = checker  # the real checker's cost is not what this test is about
    report = run_bench(tts, BenchConfig(lengths=(0.5,), batches=(1, 2), repeats=1, auto=True, warmup=False))
    one, two = report["cells"]
    assert set(one["modes"]) == {"parallel", "serial", "auto"} and set(two["modes"]) == {"parallel", "serial"}
    assert one["modes"]["auto"]["attempts"] == 1 and one["modes"]["auto"]["passed"] == 1.0
    assert [o["mode"] for o in report["order"]] == ["parallel", "serial", "auto", "parallel", "serial"]
    assert calls == one["texts"]  # only auto checked, once
    rows = bench_cli.markdown_table(report).splitlines()
    assert rows[0].endswith("| auto s | auto attempts |") and rows[3].endswith("| - | - |")


def test_cli_bench_prints_the_table_and_writes_json(artifacts, capsys) -> None:
    out = artifacts / "res" / "bench.json"
    argv = ["--voice", "slt", "--lengths", "0.5", "--batch", "1,2", "--repeats", "1", "--steps", "2",
            "--json", str(out)]
    assert main(["bench", *argv]) == 0
    report = json.loads(out.read_text())
    assert report["voice"] == DEFAULT_VOICE and report["speaker"] == "slt" and len(report["cells"]) == 2
    assert bench_cli.markdown_table(report) in capsys.readouterr().out


@pytest.mark.parametrize("argv, needle", [
    (["--lengths", "0"], "lengths must be seconds in (0, 120]"),
    (["--lengths", "one,two"], "--lengths must be comma-separated numbers"),
    (["--batch", "0,8"], "batch sizes must lie in 1..64"),
    (["--repeats", "0"], "repeats must be >= 1"),
    (["--steps", "0"], "steps must lie in 1..256"),
    (["--threads", "0"], "--threads must be >= 1"),
    (["--voice", "carol"], "unknown voice 'carol'"),
    (["--json", "{d}"], "is a directory"),
])
def test_cli_bench_bad_input_exits_2_and_writes_nothing(artifacts, capsys, argv, needle) -> None:
    before = sorted(p.name for p in artifacts.iterdir())
    rc = main(["bench", "--lengths", "0.5", "--batch", "1", "--repeats", "1",
               *[a.format(d=artifacts) for a in argv]])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("audiopd: error: ") and err.count("\n") == 1 and needle in err, err
    assert sorted(p.name for p in artifacts.iterdir()) == before


def test_config_rejects_bad_values_directly() -> None:
    with pytest.raises(BenchOptionError, match="seed must be >= 0"):
        BenchConfig(seed=-1).validate()


def test_timed_codec_counts_overlapping_decodes_once(monkeypatch) -> None:
    """codec seconds = wall time during which any decode ran (a fake clock; nested = overlapping calls)."""
    import numpy as np

    from audiopd.codec.fixture import make_fixture_codec

    clock = [0.0]
    monkeypatch.setattr(bench.time, "perf_counter", lambda: clock[0])

    class Inner:
        name, sample_rate, frame_rate, num_codebooks, cardinality = "fx", 16000, 100, 4, 64
        concurrent_decode = True

        def __init__(self) -> None:
            self.depth = 0

        def decode(self, codes):
            self.depth += 1
            clock[0] += 1.0
            if self.depth == 1:  # a second decode starts while the first runs and ends before it
                timer.decode(codes)
            clock[0] += 1.0
            self.depth -= 1
            return np.zeros((1, 160), np.float32)

    timer = bench.TimedCodec(Inner())
    assert timer.concurrent_decode is True
    timer.decode(np.zeros((4, 1), np.int64))
    assert timer.seconds == 4.0  # the outer call's 4 s; the inner call's 2 s lie inside them
    clock[0] += 10.0  # idle time is not codec time
    timer.decode(np.zeros((4, 1), np.int64))
    assert timer.seconds == 8.0
    assert bench.TimedCodec(make_fixture_codec()).concurrent_decode is True
