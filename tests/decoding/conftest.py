"""Decoding test fixtures (helpers live in decoding_fixtures.py)."""

from __future__ import annotations

import pytest
from decoding_fixtures import tiny_model

from audiopd.model.voice import VoiceModel


@pytest.fixture
def model() -> VoiceModel:
    return tiny_model()
