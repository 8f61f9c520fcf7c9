"""Parallel decoding with the masked codec transformer (SoundStorm / MaskGCT).

Level 0 is decoded by confidence-based iterative unmasking (MaskGIT, Chang et al. 2022): each step
predicts every masked frame in one forward pass, commits the most confident predictions and keeps
the rest masked, following the cosine schedule over at most ``steps`` passes. Temperature is annealed
over the steps (MaskGCT) and optional re-masking puts low-confidence committed tokens back.

Adaptive step count (ParallelBench: a decoder that cannot adapt its step count loses either speed
or quality): tokens whose probability reaches ``confident_prob`` are committed at once, beyond what
the schedule asks, so a confident model finishes in one or two passes; and decoding stops early
when the fraction of still-masked-or-low-confidence tokens has converged (changes by less than
``converge_delta``) while the predictions for the remaining masked frames have stopped changing
(argmax changes on fewer than ``stable_fraction`` of them): more passes would then commit the same
tokens, only later. Both are measured against an anchor step at least ``converge_context`` of the
tokens ago: the cosine schedule commits very few tokens in its first steps, and predictions that
did not move after one more committed token are no evidence of convergence.
Then the fine levels are filled by ``refine_fine_levels``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from audiopd import timing
from audiopd.decoding.config import ParallelConfig  # noqa: F401  (re-exported)
from audiopd.decoding.refine import (
    DecodeResult,
    DecodeStats,
    SpanLike,
    check_codes,
    confidence_of,
    finish,
    refine_fine_levels,
    region_mask,
)
from audiopd.decoding.sampling import sample
from audiopd.decoding.schedules import annealed_temperature, masked_after_step
from audiopd.model.encoder import FrameCondition


def _history(tokens: Tensor, known: Tensor, window: int) -> Tensor:
    """For every frame t, the tokens at frames t-window..t-1 ([B, T, W], -1 where masked/absent)."""
    h = tokens.masked_fill(~known, -1)
    h = F.pad(h, (window, 0), value=-1)
    return h.unfold(1, window, 1)[:, : tokens.shape[1]]


@torch.no_grad()
def decode_level0(model, cond: FrameCondition, codes: Tensor, region: Tensor, cfg: ParallelConfig,
                  generator: torch.Generator | None, stats: DecodeStats,
                  confidence: Tensor) -> tuple[Tensor, Tensor]:
    """Iteratively fill level 0 of ``codes`` inside ``region``; returns (codes, confidence)."""
    mask_id = model.mask_id
    inp = codes.clone()
    inp[:, 1:] = mask_id  # finer levels are masked while level 0 is predicted (as in training)
    inp[:, 0] = inp[:, 0].masked_fill(region, mask_id)
    still = region.clone()  # masked level-0 positions
    n = region.sum(-1)  # per item
    k_max = cfg.steps
    anchor_argmax: Tensor | None = None  # predictions / fraction at the last convergence anchor
    anchor_frac: Tensor | None = None
    anchor_done = torch.zeros(n.shape, device=n.device)
    steps = 0
    for k in range(1, k_max + 1):
        if not bool(still.any()):
            break
        stats.forward_passes += 1
        steps += 1
        # Anneal down only: temperature 0 (greedy) stays greedy whatever final_temperature says.
        t0 = cfg.sampling.temperature
        temp = annealed_temperature(k, k_max, t0, min(t0, cfg.final_temperature))
        # The level-0 head ([D x C] per frame) and the sampling run on the still-masked rows only: late
        # steps have few left, and nothing reads the logits of committed frames (the convergence check
        # compares predictions on still-masked frames). With re-masking a committed frame may be masked
        # again and compared with its anchor prediction, so then every frame of the region gets logits.
        scored = region if cfg.remask else still
        row_logits = model.masked(inp, cond, [0], cfg.attention_window, frames=scored)[:, 0]  # [M, C]
        rows = row_logits if not cfg.remask else row_logits[still[scored]]  # [N, C]
        history = None
        if cfg.sampling.ras_window > 0:
            history = _history(inp[:, 0], ~still & cond.frame_mask, cfg.sampling.ras_window)[still]
        drawn = sample(rows, cfg.sampling, generator, history=history, temperature=temp)
        cand = inp[:, 0].masked_scatter(still, drawn)
        cand_conf = confidence.masked_scatter(still, confidence_of(rows, drawn))
        # Ranking score: log-confidence + annealed Gumbel noise (MaskGIT); committed tokens are kept
        # unless re-masking is on and they are below remask_below.
        score = cand_conf.clamp(min=1e-12).log()
        if cfg.choice_noise > 0:
            u = torch.rand(score.shape, generator=generator).to(score.device).clamp(1e-9, 1 - 1e-9)
            score = score + cfg.choice_noise * (1.0 - k / k_max) * -torch.log(-torch.log(u))
        keep_fixed = ~still if not cfg.remask or k == k_max else (~still & (confidence >= cfg.remask_below))
        score = score.masked_fill(keep_fixed | ~region, float("inf"))
        target = torch.tensor([masked_after_step(k, k_max, int(x)) for x in n.tolist()], device=n.device)
        low = (cand_conf < cfg.confident_prob) & region
        converged = False
        if cfg.adaptive:
            # Confident tokens are committed now: masked count never exceeds the low-confidence count.
            target = torch.minimum(target, low.sum(-1))
            frac = ((still | low) & region).sum(-1).float() / n.clamp(min=1)
            argmax = torch.full_like(inp[:, 0], -1).masked_scatter(scored, row_logits.argmax(-1))
            done = 1.0 - still.sum(-1).float() / n.clamp(min=1)  # committed fraction before this step
            if anchor_argmax is None or anchor_frac is None:
                anchor_argmax, anchor_frac, anchor_done = argmax, frac, done
            elif bool(((done - anchor_done >= cfg.converge_context) | ~still.any(-1)).all()):
                if k >= cfg.min_steps:
                    changed = ((argmax != anchor_argmax) & still).sum(-1).float() / still.sum(-1).clamp(min=1)
                    converged = bool(((frac - anchor_frac).abs() < cfg.converge_delta).all()
                                     and (changed < cfg.stable_fraction).all())
                anchor_argmax, anchor_frac, anchor_done = argmax, frac, done
        if converged:
            target = torch.zeros_like(target)
        ranks = score.argsort(-1).argsort(-1)
        new_still = (ranks < target[:, None]) & region
        commit = region & ~new_still
        newly = commit & still
        inp[:, 0] = torch.where(new_still, torch.full_like(cand, mask_id), torch.where(commit, cand, inp[:, 0]))
        confidence = torch.where(newly, cand_conf, confidence)
        still = new_still
        stats.level0_trace.append(float(((still | (confidence < cfg.confident_prob)) & region).sum())
                                  / max(1, int(n.sum())))
        if converged or not bool(still.any()):
            stats.stopped_early = stats.stopped_early or k < k_max
            break
    codes[:, 0] = torch.where(region, inp[:, 0], codes[:, 0])
    if len(stats.steps_per_level) < codes.shape[1]:
        stats.steps_per_level.extend([0] * (codes.shape[1] - len(stats.steps_per_level)))
    stats.steps_per_level[0] += steps
    return codes, confidence


@torch.no_grad()
def decode_parallel(model, cond: FrameCondition, cfg: ParallelConfig | None = None, *,
                    generator: torch.Generator | None = None, codes: Tensor | None = None,
                    span: SpanLike = None, confidence: Tensor | None = None) -> DecodeResult:
    """Decode codes [B, Q, T] for ``cond`` with the masked model.

    With ``span`` (and the previous ``codes``), only frames inside the span are re-masked and
    re-predicted on every level; frames outside keep their tokens exactly (the checker's span repair).
    ``confidence`` [B, T] carries earlier level-0 confidences for frames outside the span.
    Deterministic for a seeded ``generator``.
    """
    cfg = cfg or ParallelConfig()
    cfg.validate()
    q, card = model.num_codebooks, model.cardinality
    if span is not None and codes is None:
        raise ValueError("span repair needs the previous codes")
    if codes is None:
        work = torch.zeros(cond.batch, q, cond.num_frames, dtype=torch.long, device=cond.frames.device)
    else:
        work = check_codes(codes, cond, q, card)
    region = region_mask(span, cond)
    conf = torch.ones(cond.batch, cond.num_frames, device=cond.frames.device)
    if confidence is not None:
        conf = confidence.to(conf).reshape(conf.shape).clone()
    stats = DecodeStats(steps_per_level=[0] * q)
    if bool(region.any()):
        # Timed here, not inside: the passes stay free of anything but decoding (audiopd.timing).
        with timing.span(timing.LEVEL0):
            work, conf = decode_level0(model, cond, work, region, cfg, generator, stats, conf)
        with timing.span(timing.FINE):
            work = refine_fine_levels(model, cond, work, region, fine_passes=cfg.fine_passes,
                                      sampling=cfg.fine_sampling, generator=generator, stats=stats,
                                      window=cfg.attention_window)
    return finish(work, conf, cond, stats)
