"""audiopd.decoding: mask schedules, the shared sampler, parallel (masked) and serial decoders.

Names load lazily (PEP 562): the decoders import torch, while config.py and schedules.py do not, so the torch-free
inference path (``audiopd.lite``) can import those without paying for torch.
"""

from audiopd.lazy import lazy_getattr

_HOME = {
    "build_condition": "api", "decode": "api", "pad_ids": "api", "phone_span_to_frames": "api",
    "ParallelConfig": "config", "SamplingConfig": "config", "SerialConfig": "config",
    "decode_parallel": "parallel", "decode_serial": "serial",
    "DecodeResult": "refine", "DecodeStats": "refine", "region_mask": "refine",
    "filter_logits": "sampling", "sample": "sampling", "token_probs": "sampling",
    "annealed_temperature": "schedules", "cosine_counts": "schedules", "mask_ratio": "schedules",
    "masked_after_step": "schedules", "fine_level_groups": "schedules",
}

__all__ = sorted(_HOME)


__getattr__ = lazy_getattr(__name__, {name: f"audiopd.decoding.{home}" for name, home in _HOME.items()})
