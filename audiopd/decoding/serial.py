"""Serial (autoregressive) decoding: the fallback path when parallel decoding fails the checker.

Level 0 is generated frame by frame by the causal serial model with a KV cache (one token's work per
step), sampled with the same shared sampler as the parallel path, with repetition-aware sampling on
by default (VALL-E 2, §3.3: it is what keeps AR codec decoding out of loops). The durations fix the
number of frames, so there is no stop token to miss. Fine levels are then filled by the same
refinement passes as the parallel decoder.
"""

from __future__ import annotations

import torch

from audiopd import timing
from audiopd.decoding.config import SerialConfig  # noqa: F401  (re-exported)
from audiopd.decoding.refine import DecodeResult, DecodeStats, confidence_of, finish, refine_fine_levels
from audiopd.decoding.sampling import sample
from audiopd.model.encoder import FrameCondition


@torch.no_grad()
def decode_serial(model, cond: FrameCondition, cfg: SerialConfig | None = None, *,
                  generator: torch.Generator | None = None) -> DecodeResult:
    """Decode codes [B, Q, T]: level 0 autoregressively (T forward steps), then the fine levels.

    Items shorter than the batch's longest run past their end on padding frames; causality keeps
    that from touching their real frames, and ``finish`` zeroes the padding.
    """
    cfg = cfg or SerialConfig()
    cfg.validate()
    q, t_max = model.num_codebooks, cond.num_frames
    dev = cond.frames.device
    stats = DecodeStats(steps_per_level=[0] * q)
    tokens = torch.zeros(cond.batch, t_max, dtype=torch.long, device=dev)
    conf = torch.ones(cond.batch, t_max, device=dev)
    window = cfg.sampling.ras_window
    prev = None
    with timing.span(timing.SERIAL_LEVEL0):  # the cache's start is level 0's prefill, so it counts there
        state = model.serial.start(cond)
        for t in range(t_max):
            logits = model.serial.step(state, prev)  # [B, C]
            stats.forward_passes += 1
            history = tokens[:, max(0, t - window) : t] if window > 0 else None
            tok = sample(logits, cfg.sampling, generator, history=history)
            tokens[:, t] = tok
            conf[:, t] = confidence_of(logits, tok)
            prev = tok
    stats.steps_per_level[0] = t_max
    codes = torch.zeros(cond.batch, q, t_max, dtype=torch.long, device=dev)
    codes[:, 0] = tokens
    with timing.span(timing.FINE):
        codes = refine_fine_levels(model, cond, codes, cond.frame_mask.clone(), fine_passes=cfg.fine_passes,
                                   sampling=cfg.fine_sampling, generator=generator, stats=stats,
                                   window=cfg.attention_window)
    return finish(codes, conf, cond, stats)
