"""Training objective: duration regression + level-wise masked token prediction + serial level 0.

All three share one frame condition per batch (ground-truth durations, teacher forcing), so one
forward of the encoder serves every loss. Wrapped as an ``nn.Module`` so DDP sees one forward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from audiopd.model.voice import VoiceModel
from audiopd.train.data import Batch


@dataclass(frozen=True)
class LossConfig:
    """Loss weights; a weight of 0 skips that part (and its compute) entirely."""

    duration_weight: float = 1.0
    masked_weight: float = 1.0
    serial_weight: float = 1.0
    # SoundStorm samples the target level uniformly. Level 0 (prosody) is the one decoded
    # iteratively and the hardest to get right, so it gets a larger share by default.
    level0_prob: float = 0.25
    # Extra loss on one fully-masked finer level per item: trains each head to predict its level
    # with the levels between still masked, which is what a multi-level fine pass
    # (``fine_passes`` < Q-1) asks of it. Costs one more [D x C] head per item.
    finer_level_weight: float = 0.5


def sample_levels(b: int, q: int, level0_prob: float, gen: torch.Generator) -> Tensor:
    """Target level per item: 0 with ``level0_prob``, else uniform over 1..Q-1."""
    if q == 1:
        return torch.zeros(b, dtype=torch.long)
    is0 = torch.rand(b, generator=gen) < level0_prob
    other = torch.randint(1, q, (b,), generator=gen)
    return torch.where(is0, torch.zeros_like(other), other)


def level_mask(codes: Tensor, frame_mask: Tensor, levels: Tensor, mask_id: int,
               gen: torch.Generator) -> tuple[Tensor, Tensor]:
    """SoundStorm level-wise masking.

    For item b with target level q: levels < q stay clean, level q is masked at a cosine-distributed
    ratio r = cos(pi/2 * u), u ~ U(0, 1) (MaskGIT/SoundStorm), at least one frame; levels > q are fully
    masked. Returns (input codes [B, Q, T], target mask [B, T] of the masked frames of level q).
    """
    b, q, t = codes.shape
    dev = codes.device
    lengths = frame_mask.sum(-1)
    ratio = torch.cos(0.5 * math.pi * torch.rand(b, generator=gen)).to(dev)
    count = torch.ceil(ratio * lengths).long().clamp(min=1)
    scores = torch.rand(b, t, generator=gen).to(dev).masked_fill(~frame_mask, 2.0)
    ranks = scores.argsort(-1).argsort(-1)
    target = (ranks < count[:, None]) & frame_mask
    lv = torch.arange(q, device=dev)[None, :, None]
    tq = levels.to(dev)[:, None, None]
    masked = (lv > tq) | ((lv == tq) & target[:, None, :])
    return codes.masked_fill(masked, mask_id), target


class VoiceObjective(nn.Module):
    def __init__(self, model: VoiceModel, cfg: LossConfig) -> None:
        super().__init__()
        self.model = model
        self.cfg = cfg

    def forward(self, batch: Batch, gen: torch.Generator) -> dict[str, Tensor]:
        m, cfg = self.model, self.cfg
        states, log_dur = m.conditioner.encode(batch.phonemes, batch.phone_mask, batch.speakers)
        cond = m.conditioner.frames(states, batch.durations, batch.speakers)
        out: dict[str, Tensor] = {}
        total = states.new_zeros(())
        if cfg.duration_weight > 0:
            target = torch.log1p(batch.durations.float())
            pm = batch.phone_mask.float()
            dur = ((log_dur - target) ** 2 * pm).sum() / pm.sum().clamp(min=1)
            out["duration"] = dur
            total = total + cfg.duration_weight * dur
        if cfg.masked_weight > 0:
            total = total + cfg.masked_weight * self._masked(batch, cond, gen, out)
        if cfg.serial_weight > 0:
            logits = m.serial(batch.codes[:, 0], cond)
            fm = batch.frame_mask
            ser = F.cross_entropy(logits[fm], batch.codes[:, 0][fm])
            out["serial"] = ser
            out["serial_acc"] = (logits[fm].argmax(-1) == batch.codes[:, 0][fm]).float().mean()
            total = total + cfg.serial_weight * ser
        out["loss"] = total
        return out

    def _masked(self, batch: Batch, cond, gen: torch.Generator, out: dict[str, Tensor]) -> Tensor:
        mm = self.model.masked
        b, q, _ = batch.codes.shape
        levels = sample_levels(b, q, self.cfg.level0_prob, gen).to(batch.codes.device)
        inp, target = level_mask(batch.codes, batch.frame_mask, levels, mm.mask_id, gen)
        h = mm.hidden(inp, cond, levels)
        gold = batch.codes.gather(1, levels[:, None, None].expand(b, 1, batch.codes.shape[2]))[:, 0]
        logits = mm.item_logits(h, levels)
        loss = F.cross_entropy(logits[target], gold[target])
        out["masked"] = loss
        with torch.no_grad():
            hit = (logits[target].argmax(-1) == gold[target]).float()
            l0 = (levels == 0)[:, None].expand_as(target)[target]
            if l0.any():
                out["masked_acc_l0"] = hit[l0].mean()
            if (~l0).any():
                out["masked_acc_fine"] = hit[~l0].mean()
        if self.cfg.finer_level_weight > 0 and q > 2:
            has = levels < q - 1
            if has.any():
                # A finer level strictly above the target one (fully masked in the input).
                span = (q - 1 - levels).clamp(min=1)
                off = (torch.rand(b, generator=gen).to(span.device) * span).long() + 1
                finer = (levels + off).clamp(max=q - 1)
                gold2 = batch.codes.gather(1, finer[:, None, None].expand(b, 1, batch.codes.shape[2]))[:, 0]
                sel = batch.frame_mask & has[:, None]
                logits2 = mm.item_logits(h, finer)
                extra = F.cross_entropy(logits2[sel], gold2[sel])
                out["masked_finer"] = extra
                loss = loss + self.cfg.finer_level_weight * extra
        return loss
