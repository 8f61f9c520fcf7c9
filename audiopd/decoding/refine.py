"""What both decoders share: results/stats, region (span) masks, and the fine-level refinement passes.

Fine levels (1..Q-1) are filled by the masked model given everything coarser. SoundStorm (Borsos et
al. 2023, §3.3) found one greedy pass per fine level as good as iterative sampling; ``fine_passes`` <
Q-1 goes further and fills several consecutive levels in one pass (the model is trained for it with
the finer-level auxiliary loss), trading some quality for fewer forward passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from audiopd.decoding.sampling import SamplingConfig, sample, token_probs
from audiopd.decoding.schedules import fine_level_groups  # noqa: F401  (re-exported)
from audiopd.model.encoder import FrameCondition

SpanLike = Tensor | Sequence[tuple[int, int]] | None


@dataclass
class DecodeStats:
    forward_passes: int = 0
    steps_per_level: list[int] = field(default_factory=list)  # passes each level took part in
    level0_trace: list[float] = field(default_factory=list)  # fraction still masked or low-confidence per step
    stopped_early: bool = False


@dataclass
class DecodeResult:
    codes: Tensor  # [B, Q, T] int64, 0 at padding frames
    confidence: Tensor  # [B, T] probability of each level-0 token when committed (1 outside the region)
    frame_mask: Tensor  # [B, T] bool
    stats: DecodeStats

    @property
    def lengths(self) -> Tensor:
        return self.frame_mask.sum(-1)


def region_mask(span: SpanLike, cond: FrameCondition) -> Tensor:
    """Frames to (re)generate [B, T]: all real frames, or only those in ``span``.

    ``span`` is a bool tensor [B, T] / [T], or a list of half-open frame ranges (start, end) applied to
    every item of the batch.
    """
    b, t = cond.frame_mask.shape
    if span is None:
        return cond.frame_mask.clone()
    if isinstance(span, Tensor):
        m = span.to(dtype=torch.bool, device=cond.frame_mask.device)
        if m.ndim == 1:
            m = m[None].expand(b, -1)
        if m.shape != (b, t):
            raise ValueError(f"span mask must be [B, T] = {(b, t)}, got {tuple(m.shape)}")
        return m & cond.frame_mask
    m = torch.zeros(b, t, dtype=torch.bool, device=cond.frame_mask.device)
    for start, end in span:
        if not 0 <= start < end <= t:
            raise ValueError(f"span ({start}, {end}) is empty or outside 0..{t}")
        m[:, start:end] = True
    return m & cond.frame_mask


def check_codes(codes: Tensor, cond: FrameCondition, q: int, card: int) -> Tensor:
    if codes.ndim == 2:
        codes = codes[None]
    if codes.shape != (cond.batch, q, cond.num_frames):
        raise ValueError(f"codes must be [B, Q, T] = {(cond.batch, q, cond.num_frames)}, got {tuple(codes.shape)}")
    valid = codes[cond.frame_mask[:, None, :].expand_as(codes)]
    if valid.numel() and (int(valid.min()) < 0 or int(valid.max()) >= card):
        raise ValueError(f"codes out of range [0, {card})")
    return codes.long().clone()


@torch.no_grad()
def refine_fine_levels(model, cond: FrameCondition, codes: Tensor, region: Tensor, *,
                       fine_passes: int | None, sampling: SamplingConfig,
                       generator: torch.Generator | None, stats: DecodeStats, window: int = 0) -> Tensor:
    """Fill levels 1..Q-1 of ``codes`` inside ``region``, coarse to fine, one pass per group.

    ``window`` > 0: block-local attention in every pass (the decoder config's ``attention_window``).
    Input for a group starting at level g matches training (objective.level_mask with target g):
    levels < g clean, level g masked in the region only, every finer level masked everywhere.
    """
    q = codes.shape[1]
    mask_id = model.mask_id
    lv = torch.arange(q, device=codes.device)[None, :, None]
    while len(stats.steps_per_level) < q:
        stats.steps_per_level.append(0)
    for group in fine_level_groups(q, fine_passes):
        g0 = group[0]
        masked = (lv > g0) | ((lv == g0) & region[:, None, :])
        inp = codes.masked_fill(masked, mask_id)
        stats.forward_passes += 1
        greedy = getattr(model.masked, "greedy", None)
        if sampling.temperature == 0 and sampling.ras_window == 0 and greedy is not None:
            tokens = greedy(inp, cond, group, window)  # the same argmax, without materialising the logits
        else:
            tokens = sample(model.masked(inp, cond, group, window), sampling, generator)  # logits [B, n, T, C]
        for i, level in enumerate(group):
            codes[:, level] = torch.where(region, tokens[:, i], codes[:, level])
            stats.steps_per_level[level] += 1
    return codes


def finish(codes: Tensor, confidence: Tensor, cond: FrameCondition, stats: DecodeStats) -> DecodeResult:
    fm = cond.frame_mask
    codes = codes.masked_fill(~fm[:, None, :], 0)
    return DecodeResult(codes=codes, confidence=confidence.masked_fill(~fm, 0.0), frame_mask=fm, stats=stats)


def confidence_of(logits: Tensor, tokens: Tensor) -> Tensor:
    """Model probability of ``tokens`` (temperature 1): the confidence the checker sees."""
    return token_probs(logits, tokens, 1.0)
