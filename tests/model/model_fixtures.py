"""A tiny in-code voice model (d 32, 2 layers) for model tests."""

from __future__ import annotations

import torch

from audiopd.model.config import ModelConfig
from audiopd.model.voice import VoiceModel

TINY = ModelConfig(num_symbols=20, num_codebooks=4, cardinality=32, num_speakers=3, d_model=32, n_heads=2,
                   ff_mult=2, dropout=0.0, encoder_layers=2, duration_channels=32, masked_layers=2,
                   serial_layers=2, max_frames=64)


def tiny_voice(seed: int = 0) -> VoiceModel:
    torch.manual_seed(seed)
    return VoiceModel(TINY).eval()
