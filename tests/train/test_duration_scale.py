"""A voice's duration calibration: VoiceInfo.duration_scale's checks, its effect on predicted durations in both
runtimes (the same frames), and audiopd.train.duration_scale measuring it on shards and writing it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from train_fixtures import META, make_utterances

from audiopd import artifacts
from audiopd.errors import ArtifactError
from audiopd.lite.voice import LiteVoice
from audiopd.model.config import ModelConfig
from audiopd.model.encoder import durations_from_log
from audiopd.model.info import VoiceInfo
from audiopd.model.voice import VoiceModel, load_voice, save_voice
from audiopd.train.duration_scale import main, measure, write_scale
from audiopd.train.shards import write_shard

CFG = ModelConfig(num_symbols=12, num_codebooks=4, cardinality=16, num_speakers=2, d_model=32, n_heads=2, ff_mult=2,
                  dropout=0.0, encoder_layers=1, duration_channels=16, masked_layers=1, serial_layers=1, max_frames=64)
INFO = VoiceInfo(codec="fixture", sample_rate=16000, frame_rate=100.0, num_codebooks=4, cardinality=16,
                 voices=("a", "b"))


def _voice(directory: Path, scale: tuple[float, ...] = ()) -> Path:
    torch.manual_seed(0)
    model = VoiceModel(CFG, dataclasses.replace(INFO, duration_scale=scale)).eval()
    with torch.no_grad():  # several frames a token, so that a few percent moves the rounded totals
        model.conditioner.duration.proj.bias.fill_(2.5)
    save_voice(model, directory)
    artifacts.write_checksums(directory)
    return directory


@pytest.mark.parametrize("scale, match", [((1.0,), "gives 1 value"), ((1.0, 1.3), "must lie in"),
                                          ((0.7, 1.0), "must lie in")])
def test_bad_scales_are_refused(scale, match) -> None:
    with pytest.raises(ArtifactError, match=match):
        dataclasses.replace(INFO, duration_scale=scale)
    assert dataclasses.replace(INFO, duration_scale=(1.0, 1.1)).duration_factor("b") == 1.1
    assert INFO.duration_factor("b") == 1.0


def test_the_scale_lengthens_that_speaker_alone_and_both_runtimes_agree(tmp_path: Path) -> None:
    plain = load_voice(_voice(tmp_path / "plain"))
    scaled_dir = _voice(tmp_path / "scaled", (1.0, 1.2))
    scaled, lite = load_voice(scaled_dir), LiteVoice.load(scaled_dir)
    ids = torch.tensor([[3, 5, 7, 2, 9, 11, 4, 1]])
    with torch.no_grad():
        _, log_dur = plain.conditioner.encode(ids, ids != 0, torch.tensor([1]))
    for speed in (0.8, 1.0, 1.5):
        # speaker a: unchanged; speaker b: as if spoken at speed / 1.2
        for spk, factor in ((0, 1.0), (1, 1.2)):
            with torch.no_grad():
                got = scaled.condition(ids, torch.tensor([spk]), speed=speed).durations[0]
                ref = plain.condition(ids, torch.tensor([spk]), speed=speed).durations[0]
            _, lite_dur = lite.condition(ids[0].numpy(), spk, speed)
            assert np.array_equal(lite_dur, got.numpy())
            if factor == 1.0:
                assert torch.equal(got, ref)
        with torch.no_grad():
            b_plain = plain.condition(ids, torch.tensor([1]), speed=speed).durations.sum()
            b_scaled = scaled.condition(ids, torch.tensor([1]), speed=speed).durations.sum()
        assert abs(float(b_scaled) / float(b_plain) - 1.2) < 0.08
    # a batch of both speakers: each item takes its own factor
    both = torch.cat([ids, ids])
    with torch.no_grad():
        batch = scaled.condition(both, torch.tensor([0, 1])).durations
        one = [scaled.condition(ids, torch.tensor([s])).durations[0] for s in (0, 1)]
    assert torch.equal(batch[0], one[0]) and torch.equal(batch[1], one[1])
    assert torch.equal(durations_from_log(log_dur.expand(2, -1), both != 0, torch.tensor([1.0, 1.0])),
                       durations_from_log(log_dur.expand(2, -1), both != 0))
    with pytest.raises(ValueError, match="speed must be > 0"):
        durations_from_log(log_dur, ids != 0, torch.tensor([0.0]))


def test_measure_and_write(tmp_path: Path, capsys) -> None:
    directory = _voice(tmp_path / "v")
    shard = write_shard(tmp_path / "dev.safetensors", make_utterances(30, 3), META)
    rows = measure(load_voice(directory), [shard])
    assert set(rows) == {"a", "b"} and sum(r["utterances"] for r in rows.values()) == 30
    for r in rows.values():
        assert r["scale"] == round(r["true_frames"] / r["predicted_frames"], 4)
    # the fixture's durations (1-5 frames) lie well below what this voice predicts: out of range, refused
    assert main(["--voice", str(directory), "--min-utterances", "1", "--write", str(shard)]) == 2
    assert "outside" in capsys.readouterr().err
    write_scale(directory, {"b": 1.05})
    assert yaml.safe_load((directory / "config.yaml").read_text())["duration_scale"] == [1.0, 1.05]
    assert load_voice(directory).info.duration_factor("b") == 1.05  # checksums rewritten: it loads
    write_scale(directory, {"a": 0.95})  # another speaker measured later: b keeps its factor
    assert load_voice(directory).info.duration_scale == (0.95, 1.05)
    with pytest.raises(ArtifactError, match="no speaker"):
        write_scale(directory, {"z": 1.0})
    assert main(["--voice", str(directory), "--min-utterances", "100", str(shard)]) == 2
    assert "kept 1.0" in capsys.readouterr().out
