"""Slow end-to-end check: train a tiny voice on structured shards, export, load, decode both ways.

The fixture's codes are a function of (phoneme, speaker, level, position in phoneme) plus 5% noise,
so chance accuracy is 1/16; a voice that learned anything decodes far above it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from train_fixtures import META, make_utterances, tiny_train_config

from audiopd.decoding.parallel import ParallelConfig, decode_parallel
from audiopd.decoding.serial import decode_serial
from audiopd.model.voice import load_voice
from audiopd.train.export import export_voice
from audiopd.train.loop import train
from audiopd.train.shards import write_shard


@pytest.mark.slow
def test_trained_voice_decodes_its_structure(tmp_path: Path) -> None:
    write_shard(tmp_path / "s" / "a.safetensors", make_utterances(64, 0), META)
    cfg = tiny_train_config(max_steps=300, lr=3e-3, warmup_steps=20, batch_frames=200, log_every=50,
                            ckpt_every=1000)
    train(cfg, tmp_path / "s", tmp_path / "run")
    model = load_voice(export_voice(tmp_path / "run", tmp_path / "voice"))
    par_acc, ser_acc = [], []
    for u in make_utterances(6, 99):
        cond = model.condition(torch.tensor(u.phonemes)[None], torch.tensor([u.speaker]),
                               durations=torch.tensor(u.durations)[None])
        gold = torch.tensor(u.codes)
        par = decode_parallel(model, cond, ParallelConfig(adaptive=False), generator=torch.Generator().manual_seed(0))
        ser = decode_serial(model, cond, generator=torch.Generator().manual_seed(0))
        par_acc.append((par.codes[0] == gold).float().mean().item())
        ser_acc.append((ser.codes[0] == gold).float().mean().item())
    assert sum(ser_acc) / len(ser_acc) > 0.5
    assert sum(par_acc) / len(par_acc) > 0.3
