"""audiopd.model: phoneme encoder + duration predictor, masked codec transformer, serial level-0 model.

Names load lazily (PEP 562): the networks import torch, while config.py and info.py do not, so the torch-free
inference path (``audiopd.lite``) can read a voice's configuration without paying for torch.
"""

from audiopd.lazy import lazy_getattr

_HOME = {
    "ModelConfig": "config", "VoiceInfo": "info",
    "FrameCondition": "encoder", "FrameConditioner": "encoder", "durations_from_log": "encoder",
    "length_regulate": "encoder",
    "MaskedCodecTransformer": "masked", "SerialLevel0": "masked", "SerialState": "masked",
    "VoiceModel": "voice", "load_voice": "voice", "save_voice": "voice",
}

__all__ = sorted(_HOME)


__getattr__ = lazy_getattr(__name__, {name: f"audiopd.model.{home}" for name, home in _HOME.items()})
