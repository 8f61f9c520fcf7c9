"""The natural corpus recipe (recipes/natural): text stage, sentence-major resumable rendering, alignment logic.

Rendering runs with fake peers (a tone per word), alignment on a flite clip; no teacher is needed here (the
peers' own tests cover real Kokoro and Piper synthesis).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from recipe_loader import load_stage


def _load(filename: str, name: str):
    return load_stage("natural", filename, name)


text_stage = _load("01_text.py", "natural_stage01")
render_stage = _load("02_render.py", "natural_stage02")
align_stage = _load("03_align.py", "natural_stage03")
tokens_stage = _load("04_tokens.py", "natural_stage04")
nc = sys.modules["natural_common"]
na = sys.modules["natural_align"]
sources = sys.modules["text_sources"]

FORTUNES = [f"The {w} cat sat on the {v} mat today." for w in ("old", "red", "big", "shy", "odd", "wet")
            for v in ("blue", "torn", "warm", "dusty")] + ["A yawn is a silent shout.", "Never odd or even."]
SMALL = {"fortune": 10, "long": 4, "question": 5, "exclamation": 4, "number": 6, "name": 4, "short": 4}


def test_text_build_is_deterministic_normalised_and_split():
    rows = text_stage.build(FORTUNES, SMALL, seed=3)
    assert rows == text_stage.build(FORTUNES, SMALL, seed=3)
    assert [r.id for r in rows] == sorted(r.id for r in rows) and len({r.id for r in rows}) == len(rows)
    kinds = {k: sum(r.kind == k for r in rows) for k in SMALL}
    assert kinds["fortune"] == 10 and all(kinds[k] == SMALL[k] for k in ("question", "exclamation", "number"))
    assert kinds["long"] >= 1
    from audiopd.text.frontend import phonemize

    for r in rows:
        assert not any(c.isdigit() for c in r.text) and "$" not in r.text and r.text[0].isupper()
        assert phonemize(r.text).tokens[0] == "^"
        assert r.split == (text_stage.split_of(text_stage.key_of(r.text)) if r.kind != "long" else r.split)
    numbers = [r for r in rows if r.kind == "number"]
    assert any(any(c.isdigit() for c in r.written) for r in numbers)  # written with digits, spoken in words
    longs = [r for r in rows if r.kind == "long"]
    assert all(31 <= len(r.written.split()) <= 55 for r in longs)


def test_split_is_a_fixed_hash_with_test_and_dev_shares():
    keys = [f"sentence number {i}" for i in range(4000)]
    splits = [text_stage.split_of(k) for k in keys]
    assert 0.03 < splits.count("test") / 4000 < 0.07 and 0.03 < splits.count("dev") / 4000 < 0.07
    assert text_stage.split_of("the moon may be smaller than earth") == text_stage.split_of(
        text_stage.key_of("The moon may be smaller than Earth!"))


def test_long_sentences_never_mix_splits():
    pool = [f"Sentence {w} has exactly six words." for w in ("one", "two", "three", "four", "five", "six")]
    joined = sources.join_long(pool * 3, 31, 55, seed=0)
    assert joined and all(31 <= len(j.split()) <= 55 for j in joined)
    rows = text_stage.build(FORTUNES * 1, {**SMALL, "fortune": 2, "long": 20}, seed=0)
    fortunes_by_split = {}
    for r in text_stage.make_rows("fortune", FORTUNES, set()):
        fortunes_by_split[r.text] = r.split
    for r in (r for r in rows if r.kind == "long"):
        parts = [p if p.endswith(".") else p + "." for p in r.text.split(". ")]
        assert {fortunes_by_split[p] for p in parts if p in fortunes_by_split} == {r.split}


def test_text_stage_main_writes_table_and_marker(tmp_path):
    fort = tmp_path / "fortunes"
    fort.mkdir()
    (fort / "misc").write_text("\n%\n".join(FORTUNES) + "\n")
    data = tmp_path / "nat"
    args = ["--data", str(data), "--fortune-dir", str(fort)] + [f"--{k}={v}" for k, v in SMALL.items()]
    assert text_stage.main(args) == 0
    rows = nc.read_text_table(data)
    assert len(rows) > 30 and nc.is_done(data, "01")
    table = (data / "text.tsv").read_bytes()
    assert text_stage.main(args) == 0 and (data / "text.tsv").read_bytes() == table  # done: a no-op


class TonePeer:
    """Fake peer: 0.25 s of tone per word; optional phone durations; can fail on a chosen text."""

    def __init__(self, name, calls, rate=16000, phones=False, fail_on=None):
        self.name, self.calls, self.sample_rate, self.phones, self.fail_on = name, calls, rate, phones, fail_on

    def synthesize(self, text):
        self.calls.append((text, self.name))
        if text == self.fail_on:
            raise RuntimeError("boom")
        n = int(0.25 * len(text.split()) * self.sample_rate)
        audio = (0.3 * np.sin(np.arange(n) * 0.05)).astype(np.float32)
        durations = [("^", 0.05), ("a", n / self.sample_rate - 0.1), ("$", 0.05)] if self.phones else None
        return audio, self.sample_rate, durations


def _rows(n):
    return [nc.TextRow(f"n{i:03d}", "train", "fortune", f"Sentence number {i} is here.", "w") for i in range(n)]


def test_render_is_sentence_major_resumable_and_capped(tmp_path):
    calls = []
    peers = {"kokoro:af_heart": TonePeer("a", calls), "piper:joe": TonePeer("p", calls, 22050, phones=True)}
    rows = _rows(4)
    info = render_stage.render(tmp_path, rows[:2], peers, manifest_every=1, log=lambda s: None)
    assert info["made"] == 4 and info["failed"] == 0
    assert [c[1] for c in calls] == ["a", "p", "a", "p"]  # every voice of a sentence before the next
    manifest = list(nc.read_jsonl(tmp_path / "manifest.jsonl"))
    assert len(manifest) == 4
    joe = [m for m in manifest if m["voice"] == "piper:joe"][0]
    assert joe["sample_rate"] == 22050 and joe["teacher_phones"][0] == ["^", 0.05]
    import soundfile as sf

    audio, rate = sf.read(str(tmp_path / joe["wav"]))
    assert rate == 22050 and audio.size / rate == pytest.approx(joe["seconds"], abs=1e-3)
    calls.clear()
    info = render_stage.render(tmp_path, rows, peers, log=lambda s: None)  # resume: only the new sentences
    assert info["made"] == 4 and info["skipped"] == 4 and [c[0] for c in calls][0] == rows[2].text
    assert len(list(nc.read_jsonl(tmp_path / "manifest.jsonl"))) == 8
    assert not list(tmp_path.rglob(".*.tmp")) and not list(tmp_path.rglob(".*.wav"))
    # A cap per voice stops both voices at the same sentence (each holds 1.25 s per sentence here).
    capped = tmp_path / "capped"
    calls.clear()
    info = render_stage.render(capped, _rows(6), peers, hours_per_voice=2.4 / 3600, log=lambda s: None)
    assert info["made"] == 4 and [c[1] for c in calls] == ["a", "p", "a", "p"]


def test_render_only_what_another_corpus_lacks_in_parts(tmp_path):
    """``--skip-manifest``: a sentence that corpus holds for every asked voice is not rendered again; ``--part K/N``
    splits what is left between N processes without overlap."""
    rows = _rows(6)
    held = [{"id": rows[0].id, "voice": "kokoro:af_heart"}, {"id": rows[1].id, "voice": "kokoro:af_heart"},
            {"id": rows[1].id, "voice": "kokoro:am_adam"}]
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in held), encoding="utf-8")
    heart = render_stage.lacking(rows, manifest, ["kokoro:af_heart"])
    assert [r.id for r in heart] == [r.id for r in rows[2:]]
    both = render_stage.lacking(rows, manifest, ["kokoro:af_heart", "kokoro:am_adam"])
    assert [r.id for r in both] == [r.id for r in rows if r is not rows[1]]  # row 0 lacks am_adam
    assert render_stage.parse_part("1/3") == (1, 3)
    parts = [heart[k::n] for k, n in (render_stage.parse_part("0/2"), render_stage.parse_part("1/2"))]
    assert sorted(r.id for part in parts for r in part) == [r.id for r in heart]
    for bad in ("2/2", "1", "a/b", "-1/2"):
        with pytest.raises(SystemExit, match="--part"):
            render_stage.parse_part(bad)


def test_render_keeps_going_after_a_failed_utterance(tmp_path):
    calls, lines = [], []
    rows = _rows(3)
    peers = {"kokoro:af_heart": TonePeer("a", calls, fail_on=rows[1].text)}
    info = render_stage.render(tmp_path, rows, peers, log=lines.append)
    assert info["made"] == 2 and info["failed"] == 1 and any("FAILED" in s and rows[1].id in s for s in lines)


def test_render_and_align_stages_are_done_per_voice(tmp_path, monkeypatch):
    # Piper joe renders in minutes, Kokoro in hours: `--voices piper:joe` first must not mark the whole corpus
    # rendered, nor may stage 03 then call itself done while another voice is still to be aligned.
    calls = []
    monkeypatch.setattr("audiopd.eval.peers.load_peer", lambda name, threads=1: TonePeer(name, calls))
    monkeypatch.setattr(align_stage, "run", lambda data, voices, log: {"voices": sorted(voices or [])})
    nc.write_text_table(tmp_path / "text.tsv", _rows(2))
    args = ["--data", str(tmp_path), "--manifest-every", "1"]
    assert render_stage.main(args + ["--voices", "piper:joe"]) == 0
    assert nc.done_voices(tmp_path, "02") == {"piper:joe"} and len(calls) == 2
    assert render_stage.main(args + ["--voices", "piper:joe"]) == 0 and len(calls) == 2  # done: a no-op
    assert align_stage.main(["--data", str(tmp_path), "--voices", "piper:joe"]) == 0
    assert not nc.is_done(tmp_path, "03")  # only some voices aligned
    # Another voice's render under way (one of its utterances in the manifest), not finished:
    render_stage.render(tmp_path, _rows(1), {"kokoro:af_heart": TonePeer("a", calls)}, log=lambda s: None)
    assert align_stage.main(["--data", str(tmp_path)]) == 0 and not nc.is_done(tmp_path, "03")
    assert render_stage.main(args + ["--voices", "kokoro:af_heart,piper:joe"]) == 0  # renders the rest
    assert nc.done_voices(tmp_path, "02") == {"kokoro:af_heart", "piper:joe"}
    assert align_stage.main(["--data", str(tmp_path)]) == 0 and nc.is_done(tmp_path, "03")


def test_piper_segments_merge_marks_diphthongs_and_spaces():
    durs = [("^", 0.05), ("h", 0.04), ("ə", 0.03), ("l", 0.05), ("ˈ", 0.02), ("o", 0.06), ("ʊ", 0.04),
            (" ", 0.03), ("w", 0.05), ("ˈ", 0.02), ("ɜ", 0.05), ("ː", 0.03), ("l", 0.04), ("d", 0.04),
            (".", 0.1), ("$", 0.05)]
    segs = na.piper_segments(durs)
    assert [s[0] for s in segs] == ["pau", "hh", "ah", "l", "ow", "w", "er", "l", "d", "pau"]
    ow = segs[4]
    assert ow[1] == pytest.approx(0.17) and ow[2] == pytest.approx(0.32)  # stress before + o + ʊ + space
    er = segs[6]
    assert er[1] == pytest.approx(0.37) and er[2] == pytest.approx(0.47)  # stress + ɜ + length mark
    assert segs[-1] == ("pau", pytest.approx(0.55), pytest.approx(0.70))  # "." and "$" merged
    assert all(a[2] == pytest.approx(b[1]) for a, b in zip(segs, segs[1:]))


def test_sphinx_segments_fill_gaps_with_pauses_and_agreement_arithmetic():
    ph = lambda p, s, e: SimpleNamespace(phone=p, start=s, end=e)  # noqa: E731
    words = [SimpleNamespace(phones=(ph("HH", 0.1, 0.2), ph("AY", 0.2, 0.4))),
             SimpleNamespace(phones=(ph("SIL", 0.4, 0.5), ph("B", 0.5, 0.6)))]
    segs = na.sphinx_segments(SimpleNamespace(words=words), 0.8)
    assert segs == [("pau", 0.0, 0.1), ("hh", 0.1, 0.2), ("ay", 0.2, 0.4), ("pau", 0.4, 0.5), ("b", 0.5, 0.6),
                    ("pau", 0.6, 0.8)]
    got = na.agreement([0.1, 0.2, 0.3], [0.12, 0.2, 0.28])
    assert got["boundaries"] == 2 and got["median_ms"] == pytest.approx(20.0) and got["within_20ms"] == 1.0
    with pytest.raises(ValueError):
        na.agreement([0.1], [0.1, 0.2])


@pytest.mark.skipif(shutil.which("flite") is None, reason="Debian flite is not installed (make deps)")
def test_align_stage_on_a_flite_clip_with_a_teacher_cross_check(tmp_path):
    text = "Hello world."
    wav = tmp_path / "wav" / "piper_joe" / "n1.wav"
    wav.parent.mkdir(parents=True)
    subprocess.run(["flite", "-voice", "slt", "-t", text, "-o", str(wav)], check=True)
    import soundfile as sf

    seconds = sf.info(str(wav)).duration
    teacher = [("^", 0.1), ("h", 0.08), ("ə", 0.06), ("l", 0.07), ("ˈ", 0.02), ("o", 0.1), ("ʊ", 0.08), (" ", 0.02),
               ("w", 0.08), ("ˈ", 0.02), ("ɜ", 0.1), ("ː", 0.05), ("l", 0.07), ("d", 0.06), (".", 0.0)]
    teacher.append(("$", max(0.0, seconds - sum(d for _, d in teacher))))
    row = {"id": "n1", "voice": "piper:joe", "split": "train", "text": text, "wav": "wav/piper_joe/n1.wav",
           "teacher_phones": teacher}
    nc.write_jsonl(tmp_path / "manifest.jsonl", [row])
    info = align_stage.run(tmp_path, None, log=lambda s: None)
    out = json.loads((tmp_path / "align" / "piper_joe" / "n1.json").read_text())
    assert "failed" not in out and out["tokens"][:3] == ["^", "HH", "AH0"]
    assert sum(out["durations_s"]) == pytest.approx(seconds, abs=2e-3)
    assert out["match_rate"] >= 0.75 and len(out["boundary_diff_ms"]) == len(out["tokens"]) - 1
    check = info["voices"]["piper:joe"]["cross_check"]
    assert check["boundaries"] == len(out["tokens"]) - 1 and check["teacher_phone_match_rate"] == 1.0
    again = align_stage.run(tmp_path, None, log=lambda s: None)
    assert again["aligned_this_run"] == 0 and (tmp_path / "durations.jsonl").is_file()


TOKENS = ["^", "HH", "AY1", "DH", "EH1", "R", "$"]


def _natural_data(root):
    """A natural DATA: Kokoro rows at 24 kHz, Piper rows at 22.05 kHz, one bad row of each kind, durations.jsonl."""
    from mel_fixtures import chirp

    from audiopd.audio import write_audio

    manifest, durations = [], []
    utts = [("n001", "kokoro:af_heart", "train", 24000, 0.6), ("n001", "piper:joe", "train", 22050, 0.5),
            ("n002", "kokoro:am_adam", "dev", 24000, 0.4), ("n003", "piper:joe", "test", 22050, 0.45),
            ("n004", "kokoro:af_heart", "train", 24000, 0.3), ("n005", "piper:joe", "train", 22050, 0.3),
            ("n006", "kokoro:bf_emma", "train", 24000, 0.3), ("n007", "kokoro:bf_emma", "train", 24000, 0.35)]
    for uid, voice, split, rate, seconds in utts:
        wav = f"wav/{nc.voice_dir_name(voice)}/{uid}.wav"
        if uid != "n005":  # n005's wav is missing
            (root / wav).parent.mkdir(parents=True, exist_ok=True)
            write_audio(root / wav, chirp(seconds, rate), rate)
        manifest.append({"id": uid, "voice": voice, "split": split, "kind": "fortune", "text": "Hi there.",
                         "wav": wav, "seconds": seconds, "sample_rate": rate})
        share = [0.1] + [(seconds - 0.15) / 5] * 5 + [0.05]
        durations.append({"id": uid, "voice": voice, "split": split, "tokens": TOKENS, "durations_s": share,
                          "match_rate": 1.0})
    durations[4]["tokens"] = TOKENS[:-1]  # n004: tokens and durations of different lengths
    durations[6]["durations_s"] = [2 * d for d in durations[6]["durations_s"]]  # n006: not this audio's
    nc.write_jsonl(root / "manifest.jsonl", manifest)
    nc.write_jsonl(root / "durations.jsonl", durations[:-1])  # n007: not aligned yet
    return root, durations[-1]


def _shards(out):
    """Every shard's metadata and tensors (safetensors orders its header's keys by chance, so not its bytes)."""
    from audiopd.train.shards import Shard

    def content(path):
        s = Shard(path)
        return s.meta, s.utt_ids, [a.tolist() for a in (s.codes, s.phonemes, s.durations, s.speakers)]
    return {p.name: content(p) for p in sorted(out.glob("*.safetensors"))}


@pytest.fixture(scope="module")
def mel_codec(tmp_path_factory):
    from mel_fixtures import write_mel_artifact

    return write_mel_artifact(tmp_path_factory.mktemp("codecs") / "mel-fx", fast=False)


def test_tokens_stage_writes_trainable_shards_per_split(tmp_path, mel_codec, capsys):
    from audiopd.train.data import ShardDataset
    from audiopd.train.shards import Shard, find_shards

    data, _ = _natural_data(tmp_path / "nat")
    assert tokens_stage.main(["--data", str(data), "--codec", str(mel_codec)]) == 0
    out = data / "tokens" / "mel-fx"
    assert sorted(p.name for p in out.glob("*.safetensors")) == ["dev-000.safetensors", "test-000.safetensors",
                                                                 "train-000.safetensors"]
    ids = {}
    for split in nc.SPLITS:
        shard = Shard(out / f"{split}-000.safetensors")
        assert shard.meta.voices == nc.DEFAULT_VOICES and shard.meta.sample_rate == 22050
        assert shard.meta.frame_rate == pytest.approx(22050 / 256) and shard.meta.codec == "mel-fx"
        ids[split] = shard.utt_ids
        for i in range(len(shard)):
            u = shard.utterance(i)
            assert int(u.durations.sum()) == u.num_frames and list(u.durations) != [0] * len(TOKENS)
            assert nc.DEFAULT_VOICES[u.speaker] == u.utt_id.split("/")[0]
    # Sentence-major, speakers by DEFAULT_VOICES's index (af_heart 0, am_adam 3, joe 8); 24 kHz resampled.
    assert ids == {"train": ["kokoro:af_heart/n001", "piper:joe/n001"], "dev": ["kokoro:am_adam/n002"],
                   "test": ["piper:joe/n003"]}
    train = Shard(out / "train-000.safetensors")
    assert train.speakers.tolist() == [0, 8] and train.frame_lengths().tolist() == [int(0.6 * 22050) // 256 + 1,
                                                                                   int(0.5 * 22050) // 256 + 1]
    printed = capsys.readouterr().out
    assert all(f"SKIPPED {v} {i}" in printed for v, i in (("kokoro:af_heart", "n004"), ("piper:joe", "n005"),
                                                           ("kokoro:bf_emma", "n006")))
    dataset = ShardDataset(find_shards([out / "train-000.safetensors"]))
    assert len(dataset) == 2 and dataset.meta.num_codebooks == 4
    assert not nc.is_done(data, "04")  # stage 03 is not done


def test_tokens_stage_rerun_is_consistent_resumes_and_marks_done(tmp_path, mel_codec):
    from audiopd.codec import load_codec
    from audiopd.train.shards import Shard

    data, later = _natural_data(tmp_path / "nat")
    cfg = tokens_stage.TokenConfig(codec=str(mel_codec))
    codec = load_codec(mel_codec)
    first = tokens_stage.run(data, cfg, codec, log=lambda s: None)
    assert first["encoded_this_run"] == 4
    assert first["skipped"] == {"bad tokens": 1, "bad audio": 1, "durations off the audio": 1}
    out = data / "tokens" / "mel-fx"
    assert first["out"] == str(out)
    again = tokens_stage.run(data, cfg, codec, log=lambda s: None)  # codes from the cache, same shards
    assert again["encoded_this_run"] == 0 and again["splits"] == first["splits"]
    # Stage 03 aligns one more: only it is encoded, and it joins the train shard; cached codes that no longer
    # span their durations (a wav rendered again) are encoded again.
    nc.write_jsonl(data / "durations.jsonl", [*nc.read_jsonl(data / "durations.jsonl"), later])
    cached = Path(first["cache"]) / "piper_joe" / "n003.npy"
    np.save(cached, np.load(cached)[:, :5])
    grown = tokens_stage.run(data, cfg, codec, log=lambda s: None)
    assert grown["encoded_this_run"] == 2 and grown["splits"]["train"]["utterances"] == 3
    assert "kokoro:bf_emma/n007" in Shard(out / "train-000.safetensors").utt_ids
    before = _shards(out)
    assert tokens_stage.run(data, cfg, codec, log=lambda s: None)["encoded_this_run"] == 0
    assert _shards(out) == before
    # One utterance per shard, then back: the extra shard files of the first are removed.
    small = tokens_stage.run(data, tokens_stage.TokenConfig(codec=str(mel_codec), per_shard=1), codec,
                             log=lambda s: None)
    assert small["splits"]["train"]["shards"] == 3 and (out / "train-002.safetensors").is_file()
    back = tokens_stage.run(data, cfg, codec, log=lambda s: None)
    assert back["removed_stale"] == ["train-001.safetensors", "train-002.safetensors"]
    assert _shards(out) == before
    # Stage 03 done: this stage marks itself done and a rerun is a no-op; another speaker list is not done.
    nc.mark_done(data, "03", {})
    args = ["--data", str(data), "--codec", str(mel_codec)]
    assert tokens_stage.main(args) == 0 and nc.is_done(data, "04")
    stamp = {p.name: p.stat().st_mtime_ns for p in out.glob("*.safetensors")}
    assert tokens_stage.main(args) == 0
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.safetensors")} == stamp
    assert tokens_stage.main(args + ["--voices", "piper:joe,kokoro:af_heart"]) == 0
    subset = Shard(out / "train-000.safetensors")
    assert subset.meta.voices == ("kokoro:af_heart", "piper:joe") and subset.speakers.tolist() == [0, 1]
    assert not (out / "dev-000.safetensors").exists()  # am_adam's only utterance left with its speaker


def test_tokens_stage_speaker_order_is_default_voices_then_the_rest():
    assert tokens_stage.speaker_order("") == nc.DEFAULT_VOICES
    assert tokens_stage.speaker_order("piper:joe, kokoro:af_sarah,kokoro:af_heart") == (
        "kokoro:af_heart", "piper:joe", "kokoro:af_sarah")
