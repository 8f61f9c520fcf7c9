"""Dataset over shards, collate padding/masks, frame-bucketed batching (incl. DDP rank split)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from train_fixtures import META, Q, make_utterances

from audiopd.errors import ArtifactError
from audiopd.train.data import FrameBucketSampler, ShardDataset, collate
from audiopd.train.shards import ShardMeta, write_shard


def test_dataset_spans_shards(shard_dir: Path) -> None:
    ds = ShardDataset(shard_dir)
    assert len(ds) == 40
    assert ds.lengths.tolist() == [ds[i].num_frames for i in range(len(ds))]


def test_dataset_length_filter(shard_dir: Path) -> None:
    full = ShardDataset(shard_dir)
    cut = int(np.median(full.lengths))
    ds = ShardDataset(shard_dir, max_frames=cut)
    assert len(ds) == int((full.lengths <= cut).sum())
    assert ds.lengths.max() <= cut


def test_dataset_rejects_mixed_metadata(tmp_path: Path) -> None:
    write_shard(tmp_path / "a.safetensors", make_utterances(2, 0), META)
    other = ShardMeta(**{**META.__dict__, "codec": "other"})
    write_shard(tmp_path / "b.safetensors", make_utterances(2, 1), other)
    with pytest.raises(ArtifactError, match="metadata differs"):
        ShardDataset(tmp_path)


def test_collate_pads_and_masks() -> None:
    utts = make_utterances(3, seed=5)
    b = collate(utts)
    assert b.codes.shape == (3, Q, max(u.num_frames for u in utts))
    for i, u in enumerate(utts):
        t, n = u.num_frames, len(u.phonemes)
        assert b.frame_mask[i].sum() == t and b.phone_mask[i].sum() == n
        assert torch.equal(b.codes[i, :, :t], torch.from_numpy(u.codes))
        assert b.durations[i].sum() == t
        assert (b.phonemes[i, n:] == 0).all() and (b.codes[i, :, t:] == 0).all()


def test_bucket_sampler_covers_everything_within_budget() -> None:
    lengths = np.random.default_rng(0).integers(5, 100, 200)
    s = FrameBucketSampler(lengths, max_frames=400, seed=1)
    batches = s.batches()
    seen = sorted(i for b in batches for i in b)
    assert seen == list(range(200))
    for b in batches:
        assert max(lengths[b]) * len(b) <= 400
    # Bucketing: padding waste is small compared with random batching.
    waste = sum(max(lengths[b]) * len(b) - lengths[b].sum() for b in batches) / lengths.sum()
    assert waste < 0.2
    assert s.batches() == batches  # deterministic for (seed, epoch)
    s.set_epoch(1)
    assert s.batches() != batches


def test_bucket_sampler_rank_split_is_disjoint_and_equal() -> None:
    lengths = np.random.default_rng(0).integers(5, 100, 101)
    parts = [FrameBucketSampler(lengths, 300, seed=2, rank=r, world_size=3).batches() for r in range(3)]
    assert len({len(p) for p in parts}) == 1
    flat = [i for p in parts for b in p for i in b]
    assert len(flat) == len(set(flat))


def test_bucket_sampler_rejects_too_small_budget() -> None:
    with pytest.raises(ValueError, match="longest"):
        FrameBucketSampler([10, 50], max_frames=20)
