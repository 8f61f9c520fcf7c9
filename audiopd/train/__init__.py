"""audiopd.train: shards, data pipeline, training loop, checkpoints and voice export."""

from typing import Any

from audiopd.train.loop import TrainConfig, lr_at, train
from audiopd.train.objective import LossConfig
from audiopd.train.shards import Shard, ShardMeta, Utterance, find_shards, write_shard

__all__ = [
    "LossConfig",
    "Shard",
    "ShardMeta",
    "TrainConfig",
    "Utterance",
    "export_voice",
    "find_shards",
    "lr_at",
    "train",
    "write_shard",
]


def __getattr__(name: str) -> Any:
    # Imported on first use, not here: `python -m audiopd.train.export` would otherwise find the
    # module already imported by this package and warn that it may run twice (runpy).
    if name == "export_voice":
        from audiopd.train.export import export_voice

        return export_voice
    raise AttributeError(f"module 'audiopd.train' has no attribute {name!r}")
