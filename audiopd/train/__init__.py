"""audiopd.train: shards, data pipeline, training loop, checkpoints and voice export."""

from audiopd.train.export import export_voice
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
