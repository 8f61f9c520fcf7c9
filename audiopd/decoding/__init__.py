"""audiopd.decoding: mask schedules, the shared sampler, parallel (masked) and serial decoders."""

from audiopd.decoding.api import build_condition, decode, pad_ids, phone_span_to_frames
from audiopd.decoding.parallel import ParallelConfig, decode_parallel
from audiopd.decoding.refine import DecodeResult, DecodeStats, fine_level_groups, region_mask
from audiopd.decoding.sampling import SamplingConfig, filter_logits, sample, token_probs
from audiopd.decoding.schedules import annealed_temperature, cosine_counts, mask_ratio, masked_after_step
from audiopd.decoding.serial import SerialConfig, decode_serial

__all__ = [
    "DecodeResult",
    "DecodeStats",
    "ParallelConfig",
    "SamplingConfig",
    "SerialConfig",
    "annealed_temperature",
    "build_condition",
    "decode",
    "cosine_counts",
    "decode_parallel",
    "decode_serial",
    "filter_logits",
    "fine_level_groups",
    "mask_ratio",
    "pad_ids",
    "phone_span_to_frames",
    "masked_after_step",
    "region_mask",
    "sample",
    "token_probs",
]
