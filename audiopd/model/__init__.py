"""audiopd.model: phoneme encoder + duration predictor, masked codec transformer, serial level-0 model.

Names load lazily (PEP 562): the networks import torch, while config.py and info.py do not, so the torch-free
inference path (``audiopd.lite``) can read a voice's configuration without paying for torch.
"""

import importlib

_HOME = {
    "ModelConfig": "config", "VoiceInfo": "info",
    "FrameCondition": "encoder", "FrameConditioner": "encoder", "durations_from_log": "encoder",
    "length_regulate": "encoder",
    "MaskedCodecTransformer": "masked", "SerialLevel0": "masked", "SerialState": "masked",
    "VoiceModel": "voice", "load_voice": "voice", "save_voice": "voice",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name in _HOME:
        value = getattr(importlib.import_module(f"audiopd.model.{_HOME[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'audiopd.model' has no attribute {name!r}")
