"""One call from phoneme ids to codes, for the renderer and the checker.

Pads a batch of phoneme-id lists, builds the frame condition (predicted or given durations, speed),
and runs the parallel or serial decoder with a seeded generator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from audiopd.decoding.parallel import ParallelConfig, decode_parallel
from audiopd.decoding.refine import DecodeResult
from audiopd.decoding.serial import SerialConfig, decode_serial
from audiopd.model.encoder import FrameCondition


def pad_ids(seqs: Sequence[Sequence[int]], pad: int = 0) -> Tensor:
    """Lists of ids -> [B, L_max] int64 padded with ``pad``; rejects empty lists."""
    if not seqs or any(len(s) == 0 for s in seqs):
        raise ValueError("every item needs at least one phoneme id")
    out = torch.full((len(seqs), max(len(s) for s in seqs)), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    return out


def build_condition(model, phonemes: Sequence[Sequence[int]] | Tensor, speakers: int | Sequence[int] | Tensor,
                    *, durations: Sequence[Sequence[int]] | Tensor | None = None,
                    speed: float = 1.0) -> FrameCondition:
    ph = phonemes if isinstance(phonemes, Tensor) else pad_ids(phonemes)
    if ph.ndim == 1:
        ph = ph[None]
    spk = torch.as_tensor(speakers, dtype=torch.long).reshape(-1)
    if spk.numel() == 1:
        spk = spk.expand(ph.shape[0])
    if spk.numel() != ph.shape[0]:
        raise ValueError(f"{spk.numel()} speakers for {ph.shape[0]} items")
    dur = None
    if durations is not None:
        dur = durations if isinstance(durations, Tensor) else pad_ids(durations)
        dur = dur.reshape(ph.shape)
    return model.condition(ph, spk, durations=dur, speed=speed)


def decode(model, phonemes: Sequence[Sequence[int]] | Tensor, speakers: int | Sequence[int] | Tensor = 0, *,
           method: Literal["parallel", "serial"] = "parallel", seed: int = 0, speed: float = 1.0,
           durations: Sequence[Sequence[int]] | Tensor | None = None,
           config: ParallelConfig | SerialConfig | None = None) -> tuple[DecodeResult, FrameCondition]:
    """Phoneme ids (one list per item, 0 = padding) -> (codes and stats, the condition used).

    The condition is returned so a caller can re-run ``decode_parallel(..., span=...)`` on it for
    span repair, or ``decode_serial`` as the fallback, with identical durations.
    """
    cond = build_condition(model, phonemes, speakers, durations=durations, speed=speed)
    gen = torch.Generator().manual_seed(seed)
    if method == "parallel":
        if config is not None and not isinstance(config, ParallelConfig):
            raise TypeError("parallel decoding needs a ParallelConfig")
        return decode_parallel(model, cond, config, generator=gen), cond
    if method == "serial":
        if config is not None and not isinstance(config, SerialConfig):
            raise TypeError("serial decoding needs a SerialConfig")
        return decode_serial(model, cond, config, generator=gen), cond
    raise ValueError(f"unknown decoding method {method!r} (parallel or serial)")


def phone_span_to_frames(durations: Tensor, start: int, end: int) -> tuple[int, int]:
    """Phoneme tokens [start, end) of one item (durations [L]) -> half-open frame range."""
    d = durations.reshape(-1).long()
    if not 0 <= start < end <= d.numel():
        raise ValueError(f"phoneme span ({start}, {end}) outside 0..{d.numel()}")
    edges = torch.cat([d.new_zeros(1), d.cumsum(0)])
    return int(edges[start]), int(edges[end])
