"""Dataset over shards, padding collate, and length-bucketed batching by frames.

Bucketing by length keeps padding (wasted attention work, quadratic in T) small; batches hold at most
``max_frames`` padded frames so memory and step time stay roughly constant across batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset, Sampler

from audiopd.errors import ArtifactError
from audiopd.train.shards import Shard, ShardMeta, Utterance, find_shards


class ShardDataset(Dataset):
    """All utterances of one or more shards (which must share codec and inventory metadata)."""

    def __init__(self, source: str | Path | Sequence[str | Path], max_frames: int | None = None) -> None:
        self.shards = [Shard(p) for p in find_shards(source)]
        self.meta: ShardMeta = self.shards[0].meta
        for s in self.shards[1:]:
            if not s.meta.compatible(self.meta):
                raise ArtifactError(f"{s.path}: metadata differs from {self.shards[0].path} ({s.meta} vs {self.meta})")
        index = []
        for si, s in enumerate(self.shards):
            lengths = s.frame_lengths()
            for ui in range(len(s)):
                # Utterances longer than the crop limit are dropped, not cropped: cropping would cut
                # phonemes mid-way and break the duration/phoneme alignment.
                if max_frames is None or lengths[ui] <= max_frames:
                    index.append((si, ui))
        if not index:
            raise ArtifactError("no utterances left after the length filter")
        self.index = index
        self.lengths = np.array([self.shards[si].num_frames(ui) for si, ui in index], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> Utterance:
        si, ui = self.index[i]
        return self.shards[si].utterance(ui)

    def max_phoneme_id(self) -> int:
        return max(int(s.phonemes.max()) for s in self.shards)


@dataclass
class Batch:
    phonemes: Tensor  # [B, L] int64, 0 = padding
    phone_mask: Tensor  # [B, L] bool
    durations: Tensor  # [B, L] int64, 0 at padding
    codes: Tensor  # [B, Q, T] int64, 0 at padding
    frame_mask: Tensor  # [B, T] bool
    speakers: Tensor  # [B] int64

    def to(self, device: torch.device | str) -> Batch:
        return Batch(**{k: v.to(device) for k, v in self.__dict__.items()})

    @property
    def size(self) -> int:
        return self.phonemes.shape[0]


def collate(items: Sequence[Utterance]) -> Batch:
    b = len(items)
    lmax = max(len(u.phonemes) for u in items)
    tmax = max(u.num_frames for u in items)
    q = items[0].codes.shape[0]
    phonemes = torch.zeros(b, lmax, dtype=torch.long)
    durations = torch.zeros(b, lmax, dtype=torch.long)
    phone_mask = torch.zeros(b, lmax, dtype=torch.bool)
    codes = torch.zeros(b, q, tmax, dtype=torch.long)
    frame_mask = torch.zeros(b, tmax, dtype=torch.bool)
    for i, u in enumerate(items):
        n, t = len(u.phonemes), u.num_frames
        phonemes[i, :n] = torch.from_numpy(u.phonemes)
        durations[i, :n] = torch.from_numpy(u.durations)
        phone_mask[i, :n] = True
        codes[i, :, :t] = torch.from_numpy(u.codes)
        frame_mask[i, :t] = True
    speakers = torch.tensor([u.speaker for u in items], dtype=torch.long)
    return Batch(phonemes, phone_mask, durations, codes, frame_mask, speakers)


class FrameBucketSampler(Sampler[list[int]]):
    """Batches of similar-length utterances with at most ``max_frames`` padded frames each.

    Deterministic for (seed, epoch). Under DDP each rank takes every ``world_size``-th batch and all
    ranks get the same number of batches (a rank running out early would hang the others' all-reduce);
    this replaces DistributedSampler, which cannot shard a bucketing batch sampler.
    """

    def __init__(self, lengths: Sequence[int] | np.ndarray, max_frames: int, *, shuffle: bool = True,
                 seed: int = 0, rank: int = 0, world_size: int = 1, bucket_size: int = 64) -> None:
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if max_frames < int(self.lengths.max()):
            raise ValueError(f"max_frames {max_frames} is smaller than the longest utterance ({self.lengths.max()})")
        self.max_frames = max_frames
        self.shuffle = shuffle
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.bucket_size = bucket_size
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def batches(self) -> list[list[int]]:
        rng = np.random.default_rng([self.seed, self.epoch])
        n = len(self.lengths)
        order = rng.permutation(n) if self.shuffle else np.arange(n)
        # Sort within large random pools (not globally) so batches vary between epochs.
        pool = self.bucket_size * 16
        batches: list[list[int]] = []
        for start in range(0, n, pool):
            chunk = order[start : start + pool]
            chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            cur: list[int] = []
            longest = 0
            for i in chunk:
                ln = int(self.lengths[i])
                if cur and max(longest, ln) * (len(cur) + 1) > self.max_frames:
                    batches.append(cur)
                    cur, longest = [], 0
                cur.append(int(i))
                longest = max(longest, ln)
            if cur:
                batches.append(cur)
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        usable = (len(batches) // self.world_size) * self.world_size
        if usable == 0:
            raise ValueError(f"only {len(batches)} batch(es) for {self.world_size} ranks")
        return batches[self.rank : usable : self.world_size]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches())

    def __len__(self) -> int:
        return len(self.batches())
