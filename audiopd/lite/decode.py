"""Parallel (masked) decoding in NumPy for one item: ``audiopd.decoding.parallel.decode_parallel`` without torch.

Level 0 is filled by confidence-based iterative unmasking (MaskGIT, Chang et al. 2022): each step predicts every
still-masked frame in one pass, commits the most confident draws and keeps the rest masked, following the cosine
schedule over at most ``steps`` passes, with the temperature annealed over the steps (MaskGCT) and, when
``adaptive``, confident tokens committed at once and an early stop once predictions have converged (parallel.py
says why). The fine levels then take one pass per group, greedy as in SoundStorm (Borsos et al. 2023, §3.3).

The whole grid is decoded (no span repair, which stays in torch), batch 1, and the settings the torch decoder has
but this port lacks (re-masking, repetition-aware sampling at level 0) raise NotImplementedError so the caller can
fall back to torch. Randomness comes from a NumPy Generator: reproducible for a seed, but not torch's stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from audiopd.decoding.config import EXP_FLOOR, ParallelConfig, SamplingConfig
from audiopd.decoding.schedules import annealed_temperature, fine_level_groups, masked_after_step

Array = np.ndarray

# Rows are first cut to their best tokens before the nucleus is taken (as sampling._nucleus / _draw_filtered do):
# sorting whole 1024-way rows dominates sampling cost, and a peaked row's nucleus lies within its few best tokens.
NUCLEUS_CUT = 64


class MaskedModel(Protocol):
    """What the decoder needs of the masked codec transformer (the NumPy voice, or an adapter over torch)."""

    num_codebooks: int
    cardinality: int
    mask_id: int

    def logits(self, codes: Array, frames: Array, levels: list[int], window: int = 0,
               rows: Array | None = None) -> Array:
        """codes [Q, T] int64 (``mask_id`` = masked), frames [T, D] -> logits [len(levels), T, C]; with ``rows``
        (bool [T]) only those frames' logits, [N, len(levels), C] in frame order."""
        ...

    def greedy(self, codes: Array, frames: Array, levels: list[int], window: int = 0) -> Array:
        """The argmax of ``logits(codes, frames, levels, window)``: [len(levels), T] int64."""
        ...


@dataclass
class LiteDecodeResult:
    codes: Array  # [Q, T] int64
    confidence: Array  # [T] float32, probability of each level-0 token when committed
    forward_passes: int
    steps: int  # level-0 passes run
    stopped_early: bool
    level0_trace: list[float] = field(default_factory=list)  # fraction still masked or low-confidence per step


def _gumbel(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    # The same clamp as sampling._draw: u never 0 or 1, so the noise stays finite.
    u = np.clip(rng.random(shape, dtype=np.float32), 1e-10, 1.0 - 1e-7)
    return -np.log(-np.log(u))


def _nucleus_draw(scaled: Array, top_p: float, rng: np.random.Generator, cut: int = NUCLEUS_CUT) -> Array:
    """One draw per row from softmax(scaled) restricted to its nucleus (the smallest set of best tokens with mass
    >= top_p; the best token always), as ``_draw(filter_logits(scaled, top_p=top_p))``.

    Only values are sorted (NumPy sorts values several times faster than it argsorts): each row's nucleus is cut
    at a threshold value, found among the row's ``cut`` best values (partition, then a sort of those) or, for rows
    whose nucleus reaches past them, a full sort. A tie with the threshold keeps every tied token, where a sort
    would keep some of them in arbitrary order.
    """
    n, c = scaled.shape
    lse = _logsumexp(scaled)
    threshold = np.empty(n, dtype=scaled.dtype)
    rest = np.arange(n)
    for width in (min(cut, c), c):
        sub = scaled[rest]
        best = np.partition(sub, c - width, axis=-1)[:, c - width:] if width < c else sub
        vals = np.sort(best, axis=-1)[:, ::-1]  # descending
        p = np.exp(vals - lse[rest, None])
        size = ((np.cumsum(p, axis=-1) - p) < top_p).sum(-1)  # the nucleus is a prefix of the sorted row
        resolved = (p.sum(-1) >= top_p) | (width == c)
        threshold[rest[resolved]] = vals[resolved, np.maximum(size[resolved], 1) - 1]
        rest = rest[~resolved]
        if not rest.size:
            break
    return _draw_among(scaled, scaled >= threshold[:, None], rng)


def _draw_among(scaled: Array, keep: Array, rng: np.random.Generator) -> Array:
    """Gumbel-max draw per row among its ``keep`` entries only: a nucleus is usually a few tokens of the row, so
    noise for the rest would be wasted. Every row keeps at least one entry."""
    r, col = np.nonzero(keep)  # row-major: each row's entries form one run
    v = scaled[r, col] + _gumbel(rng, r.shape)
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
    row_max = np.maximum.reduceat(v, starts)
    hits = np.flatnonzero(v == np.repeat(row_max, np.diff(np.r_[starts, r.size])))
    first = hits[np.r_[True, r[hits][1:] != r[hits][:-1]]]  # one winner per row, should noise ever tie
    return col[first].astype(np.int64)


def _logsumexp(x: Array) -> Array:
    m = x.max(-1)
    m = np.where(np.isfinite(m), m, 0.0).astype(x.dtype)
    # floored as in sampling.logsumexp: terms below EXP_FLOOR cannot change a sum that holds an exact 1
    return m + np.log(np.exp(np.maximum(x - m[:, None], np.float32(EXP_FLOOR))).sum(-1))


def sample_rows(logits: Array, cfg: SamplingConfig, rng: np.random.Generator,
                temperature: float | None = None) -> Array:
    """One token per row of ``logits`` [..., C] with ``sampling.sample``'s semantics (without RAS): argmax at
    temperature 0, else a draw from softmax(logits / temperature) after the top-k and top-p filters."""
    temp = cfg.temperature if temperature is None else temperature
    shape = logits.shape[:-1]
    flat = logits.reshape(-1, logits.shape[-1]).astype(np.float32, copy=False)
    if temp <= 0:
        return flat.argmax(-1).reshape(shape)
    scaled = flat / np.float32(temp)
    c = scaled.shape[-1]
    if 0 < cfg.top_k < c:
        # Ties with the k-th value survive, as filter_logits' ``out < kth`` keeps them.
        kth = np.partition(scaled, c - cfg.top_k, axis=-1)[:, c - cfg.top_k]
        scaled = np.where(scaled < kth[:, None], np.float32(-np.inf), scaled)
    if cfg.top_p < 1.0:
        tokens = _nucleus_draw(scaled, cfg.top_p, rng)
    else:
        tokens = np.argmax(scaled + _gumbel(rng, scaled.shape), axis=-1)
    return tokens.reshape(shape)


def confidence_of(logits: Array, tokens: Array) -> Array:
    """Probability of ``tokens`` under softmax(logits) at temperature 1 (refine.confidence_of), float32."""
    x = logits.astype(np.float32, copy=False)
    e = np.exp(x - x.max(-1, keepdims=True))
    return (np.take_along_axis(e, tokens[:, None], axis=-1)[:, 0] / e.sum(-1)).astype(np.float32)


def check_supported(cfg: ParallelConfig) -> None:
    """Raise NotImplementedError for the settings only the torch decoder has."""
    if cfg.remask:
        raise NotImplementedError("audiopd.lite decodes without re-masking (remask=True): use the torch decoder")
    if cfg.sampling.ras_window > 0:
        raise NotImplementedError("audiopd.lite has no repetition-aware sampling at level 0 (sampling.ras_window > 0): "
                                  "use the torch decoder")


def decode_level0(model: MaskedModel, frames: Array, codes: Array, cfg: ParallelConfig,
                  rng: np.random.Generator, result: LiteDecodeResult) -> None:
    """Fill level 0 of ``codes`` [Q, T] in place (parallel.decode_level0 for one item and the whole grid)."""
    mask_id = model.mask_id
    t = codes.shape[1]
    inp = codes.copy()
    inp[:] = mask_id  # finer levels stay masked while level 0 is predicted (as in training)
    still = np.ones(t, dtype=bool)  # masked level-0 frames
    confidence = result.confidence
    n, k_max = t, cfg.steps
    f32 = np.float32
    # The thresholds and the convergence test's arithmetic are float32, as the torch decoder's: a committed
    # fraction that lands on converge_context, or a confidence on confident_prob, must compare the same in both.
    n32, context = f32(max(n, 1)), f32(cfg.converge_context)
    delta, stable, sure = f32(cfg.converge_delta), f32(cfg.stable_fraction), f32(cfg.confident_prob)
    anchor: tuple[Array, np.float32, np.float32] | None = None  # (argmax, frac, done) at the last anchor step
    t0 = cfg.sampling.temperature
    for k in range(1, k_max + 1):
        if not still.any():
            break
        result.forward_passes += 1
        result.steps += 1
        # Anneal down only: temperature 0 (greedy) stays greedy whatever final_temperature says.
        temp = annealed_temperature(k, k_max, t0, min(t0, cfg.final_temperature))
        # Heads and sampling on the still-masked rows only: nothing reads a committed frame's logits.
        rows = model.logits(inp, frames, [0], cfg.attention_window, rows=still)[:, 0]  # [N, C]
        drawn = sample_rows(rows, cfg.sampling, rng, temperature=temp)
        cand = inp[0].copy()
        cand[still] = drawn
        cand_conf = confidence.copy()
        cand_conf[still] = confidence_of(rows, drawn)
        # Ranking score: log-confidence + Gumbel noise annealed to 0 (MaskGIT's choice temperature); committed
        # tokens rank last, so they are never masked again.
        score = np.log(np.maximum(cand_conf, f32(1e-12)))
        if cfg.choice_noise > 0:
            score = score + f32(cfg.choice_noise * (1.0 - k / k_max)) * _gumbel(rng, (t,))
        score[~still] = np.inf
        target = masked_after_step(k, k_max, n)
        low = cand_conf < sure
        converged = False
        if cfg.adaptive:
            # Confident tokens are committed now: the masked count never exceeds the low-confidence count.
            target = min(target, int(low.sum()))
            frac = f32((still | low).sum()) / n32
            argmax = np.full(t, -1, dtype=np.int64)
            argmax[still] = rows.argmax(-1)
            done = f32(1.0) - f32(still.sum()) / n32  # committed fraction before this step
            # Compare against an anchor at least converge_context of the tokens back: predictions that did not move
            # after one more committed token are no evidence of convergence.
            if anchor is None:
                anchor = (argmax, frac, done)
            elif done - anchor[2] >= context or not still.any():
                if k >= cfg.min_steps:
                    changed = f32(((argmax != anchor[0]) & still).sum()) / f32(max(int(still.sum()), 1))
                    converged = bool(abs(frac - anchor[1]) < delta and changed < stable)
                anchor = (argmax, frac, done)
        if converged:
            target = 0
        new_still = np.zeros(t, dtype=bool)
        new_still[np.argsort(score, kind="stable")[:target]] = True  # the target least confident stay masked
        newly = still & ~new_still
        inp[0] = np.where(new_still, mask_id, cand)
        confidence[newly] = cand_conf[newly]
        still = new_still
        result.level0_trace.append(float((still | (confidence < sure)).sum()) / max(1, n))
        if converged or not still.any():
            result.stopped_early = result.stopped_early or k < k_max
            break
    codes[0] = inp[0]


def refine_fine_levels(model: MaskedModel, frames: Array, codes: Array, cfg: ParallelConfig,
                       rng: np.random.Generator, result: LiteDecodeResult) -> None:
    """Fill levels 1..Q-1 of ``codes`` in place, coarse to fine, one pass per group (refine.refine_fine_levels).

    The input for a group starting at level g matches training: levels < g clean, g and every finer level masked.
    """
    sampling = cfg.fine_sampling
    for group in fine_level_groups(codes.shape[0], cfg.fine_passes):
        inp = codes.copy()
        inp[group[0]:] = model.mask_id
        result.forward_passes += 1
        # The torch sampler has no token history here, so fine_sampling.ras_window changes nothing there either.
        if sampling.temperature == 0:
            tokens = model.greedy(inp, frames, group, cfg.attention_window)  # [n, T], argmax without the logits
        else:
            tokens = sample_rows(model.logits(inp, frames, group, cfg.attention_window), sampling, rng)
        codes[group] = tokens


def decode_parallel(model: MaskedModel, frames: Array, cfg: ParallelConfig,
                    rng: np.random.Generator) -> LiteDecodeResult:
    """Decode codes [Q, T] for one item's conditioning ``frames`` [T, D] with the masked model.

    Deterministic for a seeded ``rng``. Raises NotImplementedError for settings not ported (``check_supported``).
    """
    cfg.validate()
    check_supported(cfg)
    t = int(frames.shape[0])
    codes = np.zeros((model.num_codebooks, t), dtype=np.int64)
    result = LiteDecodeResult(codes=codes, confidence=np.ones(t, dtype=np.float32), forward_passes=0, steps=0,
                              stopped_early=False)
    if t == 0:
        return result
    decode_level0(model, frames, codes, cfg, rng, result)
    refine_fine_levels(model, frames, codes, cfg, rng, result)
    return result
