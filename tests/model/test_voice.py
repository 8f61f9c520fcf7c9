"""Voice artifacts: save/load round trip, lookup by name, version/kind/weights checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from model_fixtures import tiny_voice

from audiopd.errors import ArtifactError
from audiopd.model.voice import VoiceInfo, VoiceModel, load_voice, save_voice


def _saved(tmp_path: Path) -> tuple[VoiceModel, Path]:
    model = tiny_voice(7)
    model.info = VoiceInfo(codec="fixture", sample_rate=16000, frame_rate=100.0, num_codebooks=4, cardinality=32,
                           inventory_version="1", voices=("slt", "rms", "awb"))
    return model, save_voice(model, tmp_path / "myvoice")


def test_round_trip_and_lookup_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, d = _saved(tmp_path)
    back = load_voice(d)
    assert back.info == model.info and back.cfg == model.cfg
    for k, v in model.state_dict().items():
        assert torch.equal(v, back.state_dict()[k]), k
    monkeypatch.setenv("AUDIOPD_VOICES_PATH", str(tmp_path))
    assert load_voice("myvoice").info.speaker_id("rms") == 1


@pytest.mark.parametrize("key, value, match", [("format_version", 7, "format_version"), ("kind", "codec", "kind")])
def test_rejects_bad_config(tmp_path: Path, key: str, value, match: str) -> None:
    _, d = _saved(tmp_path)
    cfg = yaml.safe_load((d / "config.yaml").read_text())
    cfg[key] = value
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(ArtifactError, match=match):
        load_voice(d)


@pytest.mark.parametrize("key, value", [("masked_layers", 3), ("cardinality", 64)])
def test_rejects_weights_of_another_shape(tmp_path: Path, key: str, value: int) -> None:
    _, d = _saved(tmp_path)
    cfg = yaml.safe_load((d / "config.yaml").read_text())
    cfg["model"][key] = value
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    from audiopd.artifacts import write_checksums

    write_checksums(d)
    with pytest.raises(ArtifactError, match="do not match"):
        load_voice(d)


def test_missing_voice(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="no voice"):
        load_voice(str(tmp_path / "nothing-here"))
