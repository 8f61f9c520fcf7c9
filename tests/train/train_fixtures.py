"""Tiny in-code helpers for training tests: structured random shards and a small config."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from audiopd.model.config import ModelConfig
from audiopd.text import INVENTORY_VERSION
from audiopd.train.loop import TrainConfig
from audiopd.train.objective import LossConfig
from audiopd.train.shards import ShardMeta, Utterance, write_shard

Q, CARD, NSYM = 4, 16, 12
META = ShardMeta(codec="fixture", sample_rate=16000, frame_rate=100.0, num_codebooks=Q, cardinality=CARD,
                 inventory_version=str(INVENTORY_VERSION), voices=("a", "b"))


def make_utterances(n: int, seed: int, min_phones: int = 3, max_phones: int = 8) -> list[Utterance]:
    """Codes are a learnable function of (phoneme, speaker, level, position in phoneme) plus noise,
    so a working model must lower its loss well below the uniform log(CARD)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        n_ph = int(rng.integers(min_phones, max_phones + 1))
        ph = rng.integers(1, NSYM, n_ph)
        dur = rng.integers(1, 6, n_ph)
        spk = int(rng.integers(0, 2))
        cols = []
        for p, d in zip(ph, dur):
            for j in range(d):
                cols.append([(p * 3 + q * 5 + spk * 7 + min(j, 2)) % CARD for q in range(Q)])
        codes = np.array(cols, dtype=np.int64).T
        noise = rng.random(codes.shape) < 0.05
        codes[noise] = rng.integers(0, CARD, int(noise.sum()))
        out.append(Utterance(f"u{seed}_{i}", spk, ph.astype(np.int64), dur.astype(np.int64), codes))
    return out


def tiny_train_config(**over) -> TrainConfig:
    model = ModelConfig(num_symbols=NSYM, d_model=32, n_heads=2, ff_mult=2, dropout=0.0, encoder_layers=1,
                        duration_channels=32, masked_layers=2, serial_layers=2, max_frames=256)
    base = dict(model=model, loss=LossConfig(), lr=3e-3, warmup_steps=2, max_steps=20, batch_frames=120,
                max_utt_frames=200, log_every=5, ckpt_every=10, seed=0, num_threads=1)
    base.update(over)
    return TrainConfig(**base)
