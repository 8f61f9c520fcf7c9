"""Training test fixtures (helpers live in train_fixtures.py: conftest modules cannot be imported by name)."""

from __future__ import annotations

from pathlib import Path

import pytest
from train_fixtures import META, make_utterances

from audiopd.train.shards import write_shard


@pytest.fixture
def shard_dir(tmp_path: Path) -> Path:
    d = tmp_path / "shards"
    write_shard(d / "s0.safetensors", make_utterances(24, 0), META)
    write_shard(d / "s1.safetensors", make_utterances(16, 1), META)
    return d
