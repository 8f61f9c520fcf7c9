"""The mel refiner: identity at birth, strict config and loader, trained and shipped by ``audiopd.train.refiner``
into a voice directory, and applied by each speaker's codec view."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from mel_fixtures import CARD, LEVELS, chirp, write_mel_artifact
from train_fixtures import META, make_utterances

from audiopd import artifacts
from audiopd.codec import load_codec
from audiopd.codec.mel import smooth_time
from audiopd.config import from_dict
from audiopd.errors import ArtifactError
from audiopd.model.config import ModelConfig
from audiopd.model.refiner import REFINER_CONFIG, MelRefiner, RefinerConfig, save_refiner
from audiopd.model.voice import VoiceInfo, VoiceModel, load_voice, save_voice
from audiopd.text import NUM_SYMBOLS
from audiopd.train.refiner import main as refiner_main
from audiopd.train.refiner import with_speakers
from audiopd.train.shards import write_shard

VOICES = ("a", "b")


def _cfg(**over) -> RefinerConfig:
    return RefinerConfig(**{"dim": 16, "layers": 2, "kernel": 3, "voices": VOICES, **over})


def _voice(tmp_path: Path) -> Path:
    """A tiny untrained voice on a tiny mel codec (4 levels x 16), saved as an artifact."""
    codec_dir = write_mel_artifact(tmp_path / "mel", default="fast")
    torch.manual_seed(0)
    cfg = ModelConfig(num_symbols=NUM_SYMBOLS, num_codebooks=LEVELS, cardinality=CARD, num_speakers=2, d_model=16,
                      n_heads=2, ff_mult=2, dropout=0.0, encoder_layers=1, duration_channels=16, masked_layers=1,
                      serial_layers=1, max_frames=128)
    info = VoiceInfo(codec=str(codec_dir), num_codebooks=LEVELS, cardinality=CARD, voices=VOICES)
    return save_voice(VoiceModel(cfg, info), tmp_path / "voice")


def test_a_new_refiner_changes_nothing_and_checks_its_input() -> None:
    r = MelRefiner(_cfg()).eval()
    mel = np.random.default_rng(0).standard_normal((30, 80)).astype(np.float32)
    np.testing.assert_array_equal(r.refine(mel, 1), mel)
    assert r.refine(np.zeros((0, 80), np.float32), 0).shape == (0, 80)
    with pytest.raises(ValueError, match=r"log-mel \[T, 80\]"):
        r.refine(mel[:, :40], 0)
    with pytest.raises(ValueError, match="speaker 2 out of range"):
        r.refine(mel, 2)


@pytest.mark.parametrize("over, needle", [({"kernel": 4}, "kernel"), ({"voices": ()}, "voices"),
                                          ({"kind": "vocos"}, "kind"), ({"format_version": 9}, "format_version")])
def test_refiner_config_is_strict(over: dict, needle: str) -> None:
    with pytest.raises(ArtifactError, match=needle):
        _cfg(**over)
    with pytest.raises(ArtifactError, match="unknown key"):
        from_dict(RefinerConfig, {"voices": list(VOICES), "width": 3})


def test_train_ships_a_refiner_that_loads_and_resumes(tmp_path: Path, capsys) -> None:
    voice = _voice(tmp_path)
    tokens = tmp_path / "tokens"
    meta = dataclasses.replace(META, voices=VOICES)
    write_shard(tokens / "train-000.safetensors", make_utterances(16, 0), meta)
    write_shard(tokens / "dev-000.safetensors", make_utterances(6, 1), meta)
    args = ["--voice", str(voice), "--tokens", str(tokens), "--threads", "1", "--dim", "16", "--layers", "1",
            "--kernel", "3", "--batch", "4"]
    assert refiner_main([*args, "--steps", "40"]) == 0  # nothing shipped before: the first result ships
    model = load_voice(voice)
    assert model.refiner is not None and model.refiner.cfg.voices == VOICES
    rec = yaml.safe_load((voice / REFINER_CONFIG).read_text())["training"]
    assert rec["steps"] == 40 and rec["init"] == "fresh" and rec["train_pairs"] == 16 and rec["dev_pairs"] == 6
    assert set(rec["dev_l1"]) == {"identity", "codec blur 0", "after"}
    assert refiner_main([*args, "--steps", "5", "--force"]) == 0  # resumes from the shipped refiner
    rec = yaml.safe_load((voice / REFINER_CONFIG).read_text())["training"]
    assert rec["steps"] == 45 and rec["this_run_steps"] == 5 and rec["init"].startswith("the refiner in")
    assert "shipped refiner" in rec["dev_l1"]
    assert refiner_main(["--voice", str(voice), "--tokens", str(tmp_path / "none")]) == 2
    assert "need train-" in capsys.readouterr().err
    # A retrained voice (no refiner of its own yet) starts from the one it replaces: --init-from.
    import shutil

    other = shutil.copytree(voice, tmp_path / "retrained")
    for name in ("refiner.yaml", "refiner.safetensors"):
        (other / name).unlink()
    artifacts.write_checksums(other)
    args[1] = str(other)
    assert refiner_main([*args, "--steps", "5", "--init-from", str(voice)]) == 0
    rec = yaml.safe_load((other / REFINER_CONFIG).read_text())["training"]
    assert rec["steps"] == 50 and rec["init"].startswith(f"the refiner of {voice}")
    assert "initial refiner" in rec["dev_l1"] and load_voice(other).refiner is not None
    # A run that ends worse than where it started (a learning rate far too high) ships the initial weights.
    from safetensors.torch import load_file

    for name in ("refiner.yaml", "refiner.safetensors"):
        (other / name).unlink()
    artifacts.write_checksums(other)
    assert refiner_main([*args, "--steps", "5", "--lr", "50", "--init-from", str(voice)]) == 0
    assert "the initial weights ship" in capsys.readouterr().out
    rec = yaml.safe_load((other / REFINER_CONFIG).read_text())["training"]
    assert rec["this_run_steps"] == 0 and rec["dev_l1"]["after"] == rec["dev_l1"]["initial refiner"]
    got, want = load_file(str(other / "refiner.safetensors")), load_file(str(voice / "refiner.safetensors"))
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in got)
    for name in ("refiner.yaml", "refiner.safetensors"):
        (other / name).unlink()
    artifacts.write_checksums(other)
    assert refiner_main([*args, "--steps", "5", "--init-from", str(tmp_path / "mel")]) == 2
    assert "no refiner.yaml there" in capsys.readouterr().err


def test_a_grown_speaker_table_keeps_the_learnt_rows_and_starts_new_ones_from_their_mean() -> None:
    torch.manual_seed(1)
    refiner = MelRefiner(_cfg()).eval()
    for p in refiner.parameters():
        torch.nn.init.normal_(p, std=0.1)  # a trained-looking refiner: every correction differs
    grown = with_speakers(refiner, ("b", "new", "a"))
    assert grown.cfg.voices == ("b", "new", "a") and refiner.cfg.voices == VOICES  # the source is untouched
    mel = np.random.default_rng(0).standard_normal((20, 80)).astype(np.float32)
    np.testing.assert_allclose(grown.refine(mel, 0), refiner.refine(mel, 1), atol=1e-6)  # b keeps b's row
    np.testing.assert_allclose(grown.refine(mel, 2), refiner.refine(mel, 0), atol=1e-6)  # a keeps a's row
    torch.testing.assert_close(grown.speaker.weight[1], refiner.speaker.weight.mean(dim=0))
    assert with_speakers(refiner, VOICES) is refiner


def test_the_loader_rejects_a_refiner_it_cannot_vouch_for(tmp_path: Path) -> None:
    voice = _voice(tmp_path)
    refiner = MelRefiner(_cfg(voice_sha256=artifacts.sha256_file(voice / "model.safetensors")))
    save_refiner(refiner, voice)
    with pytest.raises(ArtifactError, match="not listed in SHA256SUMS"):
        load_voice(voice)
    artifacts.write_checksums(voice)
    assert load_voice(voice).refiner is not None
    save_refiner(MelRefiner(_cfg(voice_sha256="0" * 64)), voice)
    artifacts.write_checksums(voice)
    with pytest.raises(ArtifactError, match="mistakes of other weights"):
        load_voice(voice)
    save_refiner(MelRefiner(_cfg(voices=("a", "c"), voice_sha256=refiner.cfg.voice_sha256)), voice)
    artifacts.write_checksums(voice)
    with pytest.raises(ArtifactError, match="refiner speakers"):
        load_voice(voice)


def test_each_speaker_decodes_through_its_refiner_without_the_codec_blur(tmp_path: Path) -> None:
    import audiopd

    codec = load_codec(write_mel_artifact(tmp_path / "mel", default="fast", smooth_frames=0.7))
    refiner = MelRefiner(_cfg()).eval()
    with torch.no_grad():
        refiner.out.bias.fill_(0.25)  # a correction the test can see: +0.25 on every bin
        refiner.speaker.weight[1].fill_(0.0)
    model = load_voice(_voice(tmp_path))
    model.attach_refiner(refiner)
    tts = audiopd.load(model, codec=codec)
    codes = codec.encode(chirp(0.2))
    mel = codec.decode_mel(codes[0])
    for sp in (0, 1):
        view = tts.codec_for(sp)
        assert view.cfg.smooth_frames == 0.0 and codec.cfg.smooth_frames == 0.7  # the refiner replaces the blur
        want = codec.vocode(refiner.refine(mel, sp)[None])
        np.testing.assert_allclose(view.decode(codes), want, atol=1e-5)
    assert not np.allclose(tts.codec_for(0).decode(codes), codec.vocode(smooth_time(mel, 0.7)[None]), atol=1e-3)
    with pytest.raises(ArtifactError, match="refiner speakers"):
        load_voice(_voice(tmp_path / "x")).attach_refiner(MelRefiner(_cfg(voices=("a",))))
