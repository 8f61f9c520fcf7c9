"""Fixtures of the compare tests: the tiny fixture voice with a fake checker, a small configuration."""

from __future__ import annotations

import pytest
import torch
from compare_fixtures import fake_checker
from voice_fixtures import install_voices

import audiopd
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.compare.run import CompareConfig


@pytest.fixture
def tts(tmp_path, monkeypatch):
    install_voices(tmp_path / "art", monkeypatch, {DEFAULT_VOICE: ("slt", "rms")})
    torch.set_num_threads(1)
    synth = audiopd.load()
    synth.checker = fake_checker
    return synth


@pytest.fixture
def small_cfg() -> CompareConfig:
    return CompareConfig(voices=("slt", "rms"), modes=("parallel", "serial"), steps=(1, 4), seeds=(0, 1),
                         spectrograms=2, bench=False)
