"""audiopd.model: phoneme encoder + duration predictor, masked codec transformer, serial level-0 model."""

from audiopd.model.config import ModelConfig
from audiopd.model.encoder import FrameCondition, FrameConditioner, durations_from_log, length_regulate
from audiopd.model.masked import MaskedCodecTransformer, SerialLevel0, SerialState
from audiopd.model.voice import VoiceInfo, VoiceModel, load_voice, save_voice

__all__ = [
    "FrameCondition",
    "FrameConditioner",
    "MaskedCodecTransformer",
    "ModelConfig",
    "SerialLevel0",
    "SerialState",
    "VoiceInfo",
    "VoiceModel",
    "durations_from_log",
    "length_regulate",
    "load_voice",
    "save_voice",
]
