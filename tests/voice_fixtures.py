"""A tiny, randomly initialised voice for facade-level tests (eval, checker, serve), built in code.

Importable from any test module (pytest puts ``tests/`` on ``sys.path`` for its conftest.py). The
duration predictor is pinned to ``FRAMES_PER_TOKEN`` frames per phoneme token, so lengths and serial
step counts are predictable; the codec is the fixture codec ``fx``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from audiopd.codec.fixture import write_fixture_artifact
from audiopd.model.config import ModelConfig
from audiopd.model.voice import VoiceInfo, VoiceModel, save_voice
from audiopd.text import INVENTORY_VERSION, NUM_SYMBOLS, phonemize

FRAMES_PER_TOKEN = 5
HOP = 160  # samples per frame of the fixture codec at 16 kHz, 100 frames/s


def tiny_voice(voices: tuple[str, ...] = ("slt", "rms")) -> VoiceModel:
    """d 32, 2 layers, 4 levels x 64 tokens; speakers ``voices``; every token lasts 5 frames."""
    torch.manual_seed(0)
    cfg = ModelConfig(num_symbols=NUM_SYMBOLS, num_codebooks=4, cardinality=64, num_speakers=len(voices),
                      d_model=32, n_heads=2, ff_mult=2, dropout=0.0, encoder_layers=1, duration_channels=16,
                      masked_layers=2, serial_layers=2, max_frames=256)
    info = VoiceInfo(codec="fx", sample_rate=16000, frame_rate=100.0, num_codebooks=4, cardinality=64,
                     inventory_version=str(INVENTORY_VERSION), voices=tuple(voices))
    model = VoiceModel(cfg, info).eval()
    with torch.no_grad():  # the duration head predicts log(1 + d)
        model.conditioner.duration.proj.weight.zero_()
        model.conditioner.duration.proj.bias.fill_(math.log(1 + FRAMES_PER_TOKEN))
    return model


def expected_samples(text: str) -> int:
    """Samples the tiny voice produces for ``text`` (one chunk): tokens x frames per token x hop."""
    return len(phonemize(text).ids) * FRAMES_PER_TOKEN * HOP


def install_voices(root: Path, monkeypatch: pytest.MonkeyPatch, voices: dict[str, tuple[str, ...]]) -> dict[str, Path]:
    """Save one tiny voice per name under ``root/voices`` (+ the fixture codec) and point audiopd at them."""
    write_fixture_artifact(root / "codecs" / "fx")
    dirs = {name: save_voice(tiny_voice(speakers), root / "voices" / name) for name, speakers in voices.items()}
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(root / "codecs"))
    monkeypatch.setenv("AUDIOPD_VOICES_PATH", str(root / "voices"))
    return dirs
