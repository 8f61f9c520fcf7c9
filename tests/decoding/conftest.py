"""Decoding test fixtures (helpers live in decoding_fixtures.py)."""

from __future__ import annotations

import pytest
import torch
from decoding_fixtures import tiny_model

from audiopd.model.voice import VoiceModel


# One thread: the machine is shared, and torch's multi-threaded kernels slow down badly (10x seen)
# when cores are oversubscribed. Tiny fixture models gain nothing from threads anyway.
torch.set_num_threads(1)


@pytest.fixture
def model() -> VoiceModel:
    return tiny_model()
