"""Tiny deterministic mel-codec artifacts built in code: seeded codebooks, a 2-block fast vocoder, no fitting.

Importable from any test module (pytest puts ``tests/`` on ``sys.path`` for its conftest.py), like world_fixtures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from audiopd.codec.mel_config import FastVocoderConfig, MelCodecConfig
from audiopd.codec.world_fit import write_codec_artifact

LEVELS, CARD = 4, 16
TINY_FAST = FastVocoderConfig(dim=16, intermediate=32, layers=2, kernel=3, weights_file="fast.safetensors")


def codebooks(levels: int = LEVELS, card: int = CARD, n_mels: int = 80, seed: int = 0) -> np.ndarray:
    """Level l's codewords are scaled by 10^-l around a log-mel mean, so greedy RVQ recovers any sum exactly."""
    rng = np.random.default_rng(seed)
    books = rng.standard_normal((levels, card, n_mels)).astype(np.float32)
    for level in range(levels):
        books[level] *= 10.0 ** -level
    books[0] += -5.0
    return books


def write_mel_artifact(directory: Path, *, fast: bool = True, default: str = "hq", head: str = "linear",
                       fast_changes: dict | None = None, **changes) -> Path:
    """A mel codec artifact in ``directory``; with ``fast``, a seeded (untrained) fast vocoder's weights too,
    with a ``head`` of that kind and ``fast_changes`` to its config (e.g. ``phase_iters``, ``sharpen``)."""
    from dataclasses import replace

    from safetensors.torch import save_file

    from audiopd.codec.mel_vocoders import new_fast

    fast_cfg = replace(TINY_FAST, head=head, **(fast_changes or {})) if fast else FastVocoderConfig()
    cfg = MelCodecConfig(name="mel-fx", num_codebooks=LEVELS, cardinality=CARD, default_decoder=default,
                         fast=fast_cfg, **changes)
    directory.mkdir(parents=True, exist_ok=True)
    if fast:
        torch.manual_seed(0)
        save_file(new_fast(cfg).state_dict(), str(directory / TINY_FAST.weights_file))
    write_codec_artifact(directory, cfg, codebooks(), "# mel-fx\n\nA test fixture.\n")
    return directory


def chirp(seconds: float, sr: int = 22050) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    return (0.3 * np.sin(2 * np.pi * (150 + 200 * t) * t)).astype(np.float32)


def mel_voice(codec):
    """A tiny random voice speaking ``codec``'s tokens, 3 frames per phoneme token."""
    import math

    from audiopd.model.config import ModelConfig
    from audiopd.model.voice import VoiceInfo, VoiceModel
    from audiopd.text import INVENTORY_VERSION, NUM_SYMBOLS

    torch.manual_seed(0)
    cfg = ModelConfig(num_symbols=NUM_SYMBOLS, num_codebooks=LEVELS, cardinality=CARD, num_speakers=1, d_model=32,
                      n_heads=2, ff_mult=2, dropout=0.0, encoder_layers=1, duration_channels=16, masked_layers=2,
                      serial_layers=2, max_frames=256)
    info = VoiceInfo(codec=codec.name, sample_rate=codec.sample_rate, frame_rate=codec.frame_rate,
                     num_codebooks=LEVELS, cardinality=CARD, inventory_version=str(INVENTORY_VERSION),
                     voices=("one",), codec_fingerprint=codec.token_fingerprint)
    model = VoiceModel(cfg, info).eval()
    with torch.no_grad():
        model.conditioner.duration.proj.weight.zero_()
        model.conditioner.duration.proj.bias.fill_(math.log(1 + 3))
    return model
