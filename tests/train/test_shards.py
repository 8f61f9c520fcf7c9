"""Shard writer/reader round trip and rejection of bad shards."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from train_fixtures import META, make_utterances
from safetensors.numpy import load_file, save_file

from audiopd.errors import ArtifactError
from audiopd.train.shards import Shard, Utterance, find_shards, write_shard


def test_round_trip(tmp_path: Path) -> None:
    utts = make_utterances(7, seed=3)
    path = write_shard(tmp_path / "a.safetensors", utts, META)
    shard = Shard(path)
    assert shard.meta == META
    assert len(shard) == 7
    assert shard.codes.dtype == np.int16 and shard.phonemes.dtype == np.int32
    for i, u in enumerate(utts):
        back = shard.utterance(i)
        assert back.utt_id == u.utt_id and back.speaker == u.speaker
        np.testing.assert_array_equal(back.codes, u.codes)
        np.testing.assert_array_equal(back.phonemes, u.phonemes)
        np.testing.assert_array_equal(back.durations, u.durations)
        assert back.durations.sum() == back.num_frames == shard.num_frames(i)


def _one(**over) -> Utterance:
    u = make_utterances(1, seed=9)[0]
    return dataclasses.replace(u, **over)


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(codes=np.zeros((3, 5), dtype=np.int64)), "codes must be"),
        (dict(codes=np.full((4, 5), 99, dtype=np.int64), durations=np.array([5]), phonemes=np.array([1])),
         "out of range"),
        (dict(durations=np.array([1]), phonemes=np.array([1])), "sum to T"),
        (dict(speaker=5), "not in voices"),
        (dict(phonemes=np.array([], dtype=np.int64), durations=np.array([], dtype=np.int64)), "non-empty"),
    ],
)
def test_writer_rejects_bad_utterances(tmp_path: Path, bad: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        write_shard(tmp_path / "x.safetensors", [_one(**bad)], META)
    assert not (tmp_path / "x.safetensors").exists()


def test_reader_rejects_unknown_version(tmp_path: Path) -> None:
    path = write_shard(tmp_path / "a.safetensors", make_utterances(2, seed=1), META)
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as f:
        md = dict(f.metadata())
    md["format_version"] = "99"
    save_file(load_file(str(path)), str(path), metadata=md)
    with pytest.raises(ArtifactError, match="format_version"):
        Shard(path)


def test_reader_rejects_non_shard(tmp_path: Path) -> None:
    p = tmp_path / "junk.safetensors"
    p.write_bytes(b"not a safetensors file")
    with pytest.raises(ArtifactError, match="not a readable shard"):
        Shard(p)


def test_metadata_is_json_lists(tmp_path: Path) -> None:
    path = write_shard(tmp_path / "a.safetensors", make_utterances(3, seed=2), META)
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as f:
        md = f.metadata()
    assert json.loads(md["voices"]) == list(META.voices)
    assert len(json.loads(md["utt_ids"])) == 3
    assert md["format_version"] == "1"


def test_find_shards(tmp_path: Path) -> None:
    write_shard(tmp_path / "b.safetensors", make_utterances(1, seed=1), META)
    write_shard(tmp_path / "a.safetensors", make_utterances(1, seed=2), META)
    assert [p.name for p in find_shards(tmp_path)] == ["a.safetensors", "b.safetensors"]
    with pytest.raises(ArtifactError):
        find_shards(tmp_path / "nope")
