"""Held-out losses during training: the same objective on utterances the optimizer never sees.

A training loss says the model fits its data; only a held-out loss says whether another step (or another
checkpoint) is better on new sentences. The corpus recipe's ``test`` split is that data (stage 06 writes it
as ``test-*.safetensors``). Every call scores the same utterances with the same masks: a fixed subset of at
most ``val_frames`` frames, and a mask generator re-seeded each time. So two steps of a run, or two runs
with the same config, compare directly; the figures are means weighted by each batch's frames. Scoring draws
only from its own generator (no dropout in eval mode), so it leaves training's random state, and with it exact
resume, untouched.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from audiopd.train.data import FrameBucketSampler, ShardDataset, collate

# Seed of the held-out masks (levels, positions): any fixed value; fixed, so calls are comparable.
VAL_MASK_SEED = 20_261_130


def val_subset(lengths: np.ndarray, max_frames: int) -> list[int]:
    """Indices of a fixed, length-diverse subset holding at most ``max_frames`` frames (0 = all).

    The utterances of a seeded permutation that still fit the budget, in that order: a mix of speakers and
    lengths rather than the first shard's, and the same subset for the same data.
    """
    order = np.random.default_rng(0).permutation(len(lengths))
    if max_frames <= 0:
        return sorted(int(i) for i in order)
    keep, total = [], 0
    for i in order:
        if total + int(lengths[i]) > max_frames:
            continue
        keep.append(int(i))
        total += int(lengths[i])
    if not keep:  # the budget is below the shortest utterance: still score one
        keep = [int(np.argmin(lengths))]
    return sorted(keep)


@torch.no_grad()
def held_out_losses(objective: torch.nn.Module, dataset: ShardDataset, *, batch_frames: int, val_frames: int,
                    device: torch.device) -> dict[str, Any]:
    """Frame-weighted mean of every loss term of ``objective`` over the held-out subset.

    Runs in eval mode (no dropout) and restores the module's previous mode. Returns the losses plus
    ``utterances`` and ``frames`` scored.
    """
    keep = val_subset(dataset.lengths, val_frames)
    lengths = dataset.lengths[keep]
    sampler = FrameBucketSampler(lengths, max(batch_frames, int(lengths.max())), shuffle=False)
    gen = torch.Generator().manual_seed(VAL_MASK_SEED)
    was_training = objective.training
    objective.eval()
    sums: dict[str, float] = {}
    weight = 0
    try:
        for idx in sampler.batches():
            batch = collate([dataset[keep[i]] for i in idx]).to(device)
            out = objective(batch, gen)
            w = int(batch.frame_mask.sum())
            for k, v in out.items():
                sums[k] = sums.get(k, 0.0) + float(v) * w
            weight += w
    finally:
        objective.train(was_training)
    return {**{k: v / max(weight, 1) for k, v in sums.items()}, "utterances": len(keep), "frames": weight}
