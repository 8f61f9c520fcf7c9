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
                       **changes) -> Path:
    """A mel codec artifact in ``directory``; with ``fast``, a seeded (untrained) fast vocoder's weights too,
    with a ``head`` of that kind."""
    from dataclasses import replace

    from safetensors.torch import save_file

    from audiopd.codec.mel_vocoders import new_fast

    cfg = MelCodecConfig(name="mel-fx", num_codebooks=LEVELS, cardinality=CARD, default_decoder=default,
                         fast=replace(TINY_FAST, head=head) if fast else FastVocoderConfig(), **changes)
    directory.mkdir(parents=True, exist_ok=True)
    if fast:
        torch.manual_seed(0)
        save_file(new_fast(cfg).state_dict(), str(directory / TINY_FAST.weights_file))
    write_codec_artifact(directory, cfg, codebooks(), "# mel-fx\n\nA test fixture.\n")
    return directory


def chirp(seconds: float, sr: int = 22050) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    return (0.3 * np.sin(2 * np.pi * (150 + 200 * t) * t)).astype(np.float32)
