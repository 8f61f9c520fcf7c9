"""`audiopd render` end to end on the tiny fixture voice: files, manifest, exit codes, resume (audiopd.batch.driver).

The fixture voice's duration predictor is pinned (voice_fixtures.FRAMES_PER_TOKEN), so every row's length is
known in advance; parallel mode keeps the checker (pocketsphinx) out of the fast tier, and one test injects a
checker through the facade to exercise check verdicts.
"""

from __future__ import annotations

import json
import os

import pytest
import soundfile as sf
import torch
from voice_fixtures import expected_samples, install_voices, tiny_voice

import audiopd
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.batch.driver import RenderOptions, render
from audiopd.batch.inputs import read_rows
from audiopd.batch.manifest import read_manifest, sha256_file
from audiopd.batch.worker import Settings, plan
from audiopd.cli import main

TEXTS = ["Hello there.", "The cat sat on the mat.", "A much longer sentence that goes on for a while.",
         "Short one.", "Birds sing in the early morning light."]


@pytest.fixture
def artifacts(tmp_path, monkeypatch):
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("slt", "rms")})
    torch.set_num_threads(1)
    return tmp_path


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def by_id(outdir):
    return {e["id"]: e for e in read_manifest(outdir / "manifest.jsonl")}


def test_txt_renders_every_row_with_a_complete_manifest(artifacts, capsys):
    src = artifacts / "in.txt"
    src.write_text("\n".join(TEXTS) + "\n")
    out = artifacts / "out"
    assert main(["render", str(src), "-o", str(out), "--mode", "parallel", "--seed", "5"]) == 0
    entries = by_id(out)
    assert list(sorted(entries)) == [f"{i:06d}" for i in range(1, 6)]
    for i, text in enumerate(TEXTS, 1):
        e = entries[f"{i:06d}"]
        audio, rate = sf.read(out / e["path"])
        assert e["status"] == "ok" and e["text"] == text and e["mode"] == "parallel" and e["seed"] == 5
        assert audio.size == e["samples"] == expected_samples(text) and rate == e["sample_rate"] == 16000
        assert e["seconds"] == pytest.approx(audio.size / rate, abs=1e-3)
        assert e["sha256"] == sha256_file(out / e["path"]) and e["voice"] == "slt" and e["decoder"] == "default"
        assert set(e["timings"]) == {"call_s", "rows_in_call", "share_s"}
    assert sorted(p.name for p in out.iterdir() if p.name.endswith(".tmp")) == []
    err = capsys.readouterr().err
    assert "rows 5: 5 rendered" in err and "RTF" in err and "failed checks 0" in err


def test_bad_rows_get_error_lines_the_run_goes_on_and_exit_is_1(artifacts):
    src = jsonl(artifacts / "in.jsonl", [{"id": "good", "text": "Hello there."},
                                         {"id": "../escape", "text": "Hello."}, {"id": "sym", "text": "***"},
                                         {"id": "who", "text": "Hello.", "voice": "nobody"},
                                         {"id": "fast", "text": "Hello.", "speed": 99}])
    out = artifacts / "out"
    assert main(["render", src, "-o", str(out), "--mode", "parallel"]) == 1
    e = by_id(out)
    assert e["good"]["status"] == "ok"
    for bad in ("../escape", "sym", "who", "fast"):
        assert e[bad]["status"] == "error" and e[bad]["error"] and e[bad]["path"] is None
    assert "nobody" in e["who"]["error"]
    assert not (artifacts / "escape.wav").exists() and not (artifacts / "escape").exists()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["good.wav", "manifest.jsonl"]


def test_duplicate_ids_and_bad_options_exit_2_before_writing(artifacts, capsys):
    src = artifacts / "in.csv"
    src.write_text("id,text\na,Hello.\na,Again.\n")
    out = artifacts / "out"
    assert main(["render", str(src), "-o", str(out), "--mode", "parallel"]) == 2
    assert "appears twice" in capsys.readouterr().err and not out.exists()
    ok = jsonl(artifacts / "ok.jsonl", [{"id": "a", "text": "Hi."}])
    for extra in (["--decoder", "fancy"], ["--speed", "9"], ["--shard", "2/2"], ["--workers", "0"],
                  ["--voice", "no-such-voice"]):
        assert main(["render", ok, "-o", str(out), *extra]) == 2
        assert not out.exists(), extra
    assert main(["render", ok, "-o", str(out), "--mode", "parallel", "--decoder", "default"]) == 0


def test_rerun_skips_done_rows_and_rerenders_changed_or_damaged_ones(artifacts, capsys):
    rows = [{"id": f"r{i}", "text": t} for i, t in enumerate(TEXTS)]
    src = jsonl(artifacts / "in.jsonl", rows)
    out = artifacts / "out"
    assert main(["render", src, "-o", str(out), "--mode", "parallel"]) == 0
    stamp = {p.name: p.stat().st_mtime_ns for p in out.glob("*.wav")}
    capsys.readouterr()
    assert main(["render", src, "-o", str(out), "--mode", "parallel"]) == 0
    assert "0 rendered, 5 already done" in capsys.readouterr().err
    assert stamp == {p.name: p.stat().st_mtime_ns for p in out.glob("*.wav")}
    # A changed text, a damaged file and a torn manifest tail: exactly those rows again, one line per id.
    rows[1]["text"] = "A different sentence now."
    src = jsonl(artifacts / "in.jsonl", rows)
    (out / "r3.wav").write_bytes(b"garbage")
    with open(out / "manifest.jsonl", "ab") as f:
        f.write(b'{"id": "r4", "sta')
    assert main(["render", src, "-o", str(out), "--mode", "parallel"]) == 0
    assert "2 rendered, 3 already done" in capsys.readouterr().err
    lines = read_manifest(out / "manifest.jsonl")
    assert sorted(e["id"] for e in lines) == [f"r{i}" for i in range(5)]
    assert by_id(out)["r1"]["text"] == "A different sentence now."
    assert all(e["sha256"] == sha256_file(out / e["path"]) for e in lines)


def test_flac_csv_fields_and_speakers(artifacts):
    src = artifacts / "in.csv"
    src.write_text("id,text,voice,seed\na,Hello there.,rms,3\nb,Hello there.,,\n")
    out = artifacts / "out"
    assert main(["render", str(src), "-o", str(out), "--mode", "serial", "--format", "flac"]) == 0
    e = by_id(out)
    assert (e["a"]["voice"], e["a"]["seed"], e["b"]["voice"], e["b"]["seed"]) == ("rms", 3, "slt", 0)
    audio, rate = sf.read(out / "a.flac")
    assert e["a"]["path"] == "a.flac" and audio.size == expected_samples("Hello there.") and e["a"]["mode"] == "serial"


def test_shards_write_their_own_manifests_and_together_cover_the_input(artifacts):
    src = jsonl(artifacts / "in.jsonl", [{"id": f"r{i}", "text": t} for i, t in enumerate(TEXTS)])
    out = artifacts / "out"
    for i in range(2):
        assert main(["render", src, "-o", str(out), "--mode", "parallel", "--shard", f"{i}/2"]) == 0
    ids = [[e["id"] for e in read_manifest(out / f"manifest.shard-{i}-of-2.jsonl")] for i in range(2)]
    assert sorted(ids[0]) == ["r0", "r2", "r4"] and sorted(ids[1]) == ["r1", "r3"]


def test_plan_groups_by_settings_and_length_deterministically(tmp_path):
    src = jsonl(tmp_path / "in.jsonl", [{"id": f"r{i}", "text": "word " * (i % 7 + 1), "seed": i % 2}
                                        for i in range(40)])
    rows = read_rows(src)
    defaults = Settings(voice=None, mode="parallel", steps=None, seed=0, speed=1.0)
    batches = plan(rows, defaults, rows_per_call=8)
    assert batches == plan(rows, defaults, rows_per_call=8)
    assert sorted(r.index for b in batches for r in b.rows) == list(range(40))
    for b in batches:
        assert len(b.rows) <= 8 and len({r.seed for r in b.rows}) == 1
        lengths = [len(r.text) for r in b.rows]
        assert lengths == sorted(lengths, reverse=True)


def test_check_verdicts_reach_the_manifest_and_summary(artifacts, tmp_path):
    from audiopd.codec import load_codec
    from audiopd.pipeline import Synthesizer

    def checker(audio, rate, text, **_):  # fails any text with "fail" in it, at every attempt
        return {"passed": "fail" not in text, "score": 0.2 if "fail" in text else 0.9, "reasons": ["said wrong"]}

    def loader():
        return Synthesizer(tiny_voice(), load_codec("fx"), checker=checker), None

    rows = read_rows(jsonl(tmp_path / "in.jsonl", [{"id": "p", "text": "All is well."},
                                                   {"id": "f", "text": "This will fail."}]))
    summary = render(rows, tmp_path / "out", loader, RenderOptions(mode="auto", seed=1))
    e = by_id(tmp_path / "out")
    assert e["p"]["check"]["passed"] is True and e["f"]["check"]["passed"] is False
    assert e["f"]["status"] == "ok" and "said wrong" in e["f"]["check"]["reasons"]
    assert (summary.rendered, summary.failed_checks, summary.errors) == (2, 1, 0)


def test_stdin_input(artifacts, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("Hello there.\nGood night.\n"))
    out = artifacts / "out"
    assert main(["render", "-", "-o", str(out), "--mode", "parallel"]) == 0
    assert sorted(by_id(out)) == ["000001", "000002"]
    assert os.path.isfile(out / "000002.wav")


def test_a_row_that_breaks_its_call_is_isolated(artifacts, tmp_path):
    tts = audiopd.load()
    real = tts.synthesize_batch

    def flaky(texts, **kw):  # a bug that only one text triggers
        if any("boom" in t for t in texts):
            raise RuntimeError("kaboom")
        return real(texts, **kw)

    tts.synthesize_batch = flaky
    rows = read_rows(jsonl(tmp_path / "in.jsonl", [{"id": f"r{i}", "text": t} for i, t in
                                                   enumerate(["Hello there.", "It goes boom.", "Good night."])]))
    summary = render(rows, tmp_path / "out", lambda: (tts, None), RenderOptions(mode="parallel"))
    e = by_id(tmp_path / "out")
    assert (summary.rendered, summary.errors) == (2, 1)
    assert e["r1"]["status"] == "error" and "internal error RuntimeError: kaboom" in e["r1"]["error"]


def test_progress_plain_lines_off_a_terminal_and_a_bar_on_one(artifacts, tmp_path):
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    rows = read_rows(jsonl(tmp_path / "in.jsonl", [{"id": f"r{i}", "text": t} for i, t in enumerate(TEXTS)]))
    for log, expect in ((io.StringIO(), "render: 5/5 rows"), (Tty(), "render: 100%")):
        render(rows, tmp_path / f"out{expect[-1]}", lambda: (audiopd.load(), None),
               RenderOptions(mode="parallel", rows_per_call=1, progress_interval_s=0.0), log=log)
        assert expect in log.getvalue()


def test_local_worker_processes_match_in_process_rendering(artifacts):
    src = jsonl(artifacts / "in.jsonl", [{"id": f"r{i}", "text": t} for i, t in enumerate(TEXTS)])
    for out, extra in (("one", []), ("two", ["--workers", "2", "--threads", "1"])):
        assert main(["render", src, "-o", str(artifacts / out), "--mode", "parallel", "--batch-rows", "2",
                     *extra]) == 0
    one, two = by_id(artifacts / "one"), by_id(artifacts / "two")
    assert {k: e["sha256"] for k, e in one.items()} == {k: e["sha256"] for k, e in two.items()}


def test_ray_engine_without_ray_is_a_usage_error(artifacts, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    src = jsonl(artifacts / "in.jsonl", [{"id": "a", "text": "Hi."}])
    assert main(["render", src, "-o", str(artifacts / "out"), "--engine", "ray"]) == 2
    assert "audiopd[ray]" in capsys.readouterr().err and not (artifacts / "out").exists()


def test_an_empty_input_is_a_usage_error(artifacts, capsys):
    src = artifacts / "in.txt"
    src.write_text("\n\n")
    assert main(["render", str(src), "-o", str(artifacts / "out")]) == 2
    assert "no rows" in capsys.readouterr().err and not (artifacts / "out").exists()
