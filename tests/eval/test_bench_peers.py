"""`audiopd bench --peers`: peers timed in the same rounds, on the same texts, with ratios; CLI errors exit 2."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import torch
from voice_fixtures import install_voices

import audiopd
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.cli import main
from audiopd.eval import bench_peers
from audiopd.eval.bench import BenchConfig, run_bench


class FakePeer:
    """Speaks 0.3 s per word at 16 kHz, takes 20 ms a call (so ratios are measurable), and records its texts."""

    sample_rate = 16000

    def __init__(self) -> None:
        self.texts: list[str] = []

    def synthesize(self, text):
        self.texts.append(text)
        time.sleep(0.02)
        return np.zeros(int(0.3 * len(text.split()) * self.sample_rate), np.float32), self.sample_rate, None


@pytest.fixture
def tts(tmp_path, monkeypatch):
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("slt", "rms")})
    torch.set_num_threads(1)
    return audiopd.load()


@pytest.mark.parametrize("rewarm", [True, False])
def test_peers_run_interleaved_on_the_same_texts(tts, monkeypatch, rewarm):
    a, b = FakePeer(), FakePeer()
    calls: list[str] = []
    real = tts.synthesize_batch
    monkeypatch.setattr(tts, "synthesize_batch", lambda texts, **kw: calls.append(kw["mode"]) or real(texts, **kw))
    cfg = BenchConfig(lengths=(0.5, 1.5), batches=(1, 2), repeats=2, steps=2, rewarm=rewarm)
    report = run_bench(tts, cfg, peers={"fake:a": a, "fake:b": b})
    seq = [(o["target_s"], o["batch"], o["repeat"], o["mode"]) for o in report["order"]]
    modes = ("parallel", "serial", "fake:a", "fake:b")
    assert seq == [(c["target_s"], c["batch"], r, m) for c in report["cells"] for r in range(2) for m in modes]
    # One untimed warm-up, then every repeat of every cell: the batch's own texts, in order; with ``rewarm`` each
    # system's timed call in a round follows an untimed call of its own on the same texts.
    per_repeat = 2 if rewarm else 1
    expected = [report["cells"][0]["texts"][0]] + [t for c in report["cells"] for _ in range(2 * per_repeat)
                                                   for t in c["texts"]]
    assert a.texts == expected and b.texts == expected
    round_calls = (["parallel"] if rewarm else []) + ["parallel", "serial"]
    assert calls == ["parallel", "serial"] + round_calls * 2 * len(report["cells"])
    assert report["rewarm"] is rewarm
    for c in report["cells"]:
        par, ser = c["modes"]["parallel"], c["modes"]["serial"]
        for name in ("fake:a", "fake:b"):
            p = c["peers"][name]
            assert len(p["wall_s"]) == 2
            assert p["audio_s"] == pytest.approx(sum(0.3 * len(t.split()) for t in c["texts"]), abs=1e-3)
            assert p["rtf"] == pytest.approx(p["median_s"] / p["audio_s"], rel=0.01, abs=1e-4)
            assert p["over_parallel"] == pytest.approx(p["median_s"] / par["median_s"], rel=0.02)
            assert p["over_serial"] == pytest.approx(p["median_s"] / ser["median_s"], rel=0.02)
            # each round's peer call over the parallel call of the same round
            assert p["over_parallel_rounds"] == pytest.approx(
                [w / q for w, q in zip(p["wall_s"], par["wall_s"])], rel=0.02)
    report["peers"] = {"load_s": {"fake:a": 0.1, "fake:b": 0.2}, "threads": 1}
    table = bench_peers.markdown_table(report).splitlines()
    assert len(table) == 2 + len(report["cells"]) and "fake:b / parallel" in table[0]
    rounds = report["cells"][0]["peers"]["fake:a"]["over_parallel_rounds"]
    assert f"({min(rounds):.2f}-{max(rounds):.2f})" in table[2]


def test_paired_ratios_need_one_parallel_call_per_round() -> None:
    runs = [{"wall_s": 2.0, "audio_s": 1.0}, {"wall_s": 3.0, "audio_s": 1.0}]
    paired = bench_peers.summarize(runs, 1.0, 4.0, 0.5, [1.0, 2.0])
    assert paired["over_parallel_rounds"] == [2.0, 1.5] and paired["over_parallel"] == 2.5
    assert "over_parallel_rounds" not in bench_peers.summarize(runs, 1.0, 4.0, 0.5)
    assert "over_parallel_rounds" not in bench_peers.summarize(runs, 1.0, 4.0, 0.5, [1.0])


def test_no_peers_no_peer_fields(tts):
    report = run_bench(tts, BenchConfig(lengths=(0.5,), batches=(1,), repeats=1, steps=2, warmup=False))
    assert "peers" not in report["cells"][0] and bench_peers.markdown_table(report) == ""


@pytest.mark.parametrize("peers, needle", [("nobody:x", "unknown peer system"), ("kokoro:zz_none", "unknown Kokoro"),
                                           ("piper:joe,piper:joe", "twice")])
def test_cli_bad_peers_exit_2_one_line(tts, capsys, peers, needle):
    rc = main(["bench", "--lengths", "0.5", "--batch", "1", "--repeats", "1", "--peers", peers])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("audiopd: error: ") and needle in err and err.count("\n") == 1, err


def test_cli_missing_extra_exit_2_names_it(tts, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "piper.voice", None)
    rc = main(["bench", "--lengths", "0.5", "--batch", "1", "--repeats", "1", "--peers", "piper:joe"])
    err = capsys.readouterr().err
    assert rc == 2 and "'teachers' extra" in err and err.count("\n") == 1, err


def test_cli_bench_with_piper(tts, tmp_path, capsys):
    pytest.importorskip("piper", reason="the 'teachers' extra is not installed")
    out = tmp_path / "b.json"
    rc = main(["bench", "--lengths", "1", "--batch", "1", "--repeats", "1", "--threads", "1", "--steps", "2",
               "--peers", "piper:joe", "--json", str(out)])
    assert rc == 0
    report = json.loads(out.read_text())
    cell = report["cells"][0]["peers"]["piper:joe"]
    assert report["peers"]["threads"] == 1 and report["peers"]["load_s"]["piper:joe"] > 0
    assert 0.3 < cell["audio_s"] < 3.0 and cell["rtf"] > 0
    assert "piper:joe / parallel" in capsys.readouterr().out


def test_cli_missing_kokoro_pack_exit_2_names_the_step(tts, tmp_path, capsys, monkeypatch):
    pytest.importorskip("kokoro_onnx", reason="the 'teachers' extra is not installed")
    monkeypatch.setenv("AUDIOPD_TEACHERS", str(tmp_path / "empty"))
    rc = main(["bench", "--lengths", "0.5", "--batch", "1", "--repeats", "1", "--peers", "kokoro:af_heart"])
    err = capsys.readouterr().err
    assert rc == 2 and "recipes/teachers/install.sh" in err and err.count("\n") == 1, err


def test_cli_bench_times_the_numpy_runtime_beside_torch(tmp_path, capsys):
    """``--peers audiopd:numpy``: the benched voice itself on the torch-free path, in the same rounds."""
    out = tmp_path / "b.json"
    rc = main(["bench", "--voice", "natural", "--lengths", "1", "--batch", "1", "--repeats", "1", "--threads", "1",
               "--peers", "audiopd:numpy", "--json", str(out)])
    assert rc == 0
    report = json.loads(out.read_text())
    cell = report["cells"][0]
    mine = cell["peers"]["audiopd:numpy"]
    # The same text and durations on both runtimes: the same audio length, to the sample.
    assert abs(mine["audio_s"] - cell["audio_s"]) < 1e-3 and mine["rtf"] > 0 and mine["over_parallel"] > 0
    assert "audiopd:numpy / parallel" in capsys.readouterr().out


def test_cli_bench_refuses_an_unknown_runtime(tts, capsys):
    rc = main(["bench", "--lengths", "0.5", "--batch", "1", "--repeats", "1", "--peers", "audiopd:gpu"])
    err = capsys.readouterr().err
    assert rc == 2 and "audiopd:numpy, audiopd:torch, audiopd:float32, audiopd:bfloat16" in err, err
    assert err.count("\n") == 1, err


def test_cli_bench_times_the_other_precision_as_a_peer(tts, tmp_path, capsys):
    out = tmp_path / "b.json"
    rc = main(["bench", "--lengths", "0.5", "--batch", "1", "--repeats", "1", "--threads", "1",
               "--precision", "bfloat16", "--peers", "audiopd:float32", "--json", str(out)])
    assert rc == 0
    mine = json.loads(out.read_text())["cells"][0]["peers"]["audiopd:float32"]
    assert mine["rtf"] > 0 and mine["over_parallel"] > 0
    assert "audiopd:float32 / parallel" in capsys.readouterr().out
