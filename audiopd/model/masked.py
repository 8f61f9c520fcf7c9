"""The masked codec transformer (SoundStorm, Borsos et al. 2023) and the serial level-0 model.

Masked model: a bidirectional transformer over frames. Each frame's input is the sum of one
embedding per codebook level (id ``cardinality`` = [MASK] on every level), the frame condition and a
"target level" embedding. It predicts one level at a time given coarser levels clean and finer ones
masked, with one output head per level (SoundStorm §3.2). Heads are computed only for the levels a
caller asks for, so a decoding pass pays for one [D x C] projection per level it actually fills.

Serial model: a causal transformer for level 0 only, frame-synchronous with the durations (input at
frame t = condition[t] + embedding of code0[t-1]); a KV cache makes each decoding step one token's
work (VALL-E style AR stage, but with alignment fixed by durations instead of learned attention).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from audiopd.model.config import ModelConfig
from audiopd.model.encoder import FrameCondition
from audiopd.model.layers import KVCache, Transformer


class MaskedCodecTransformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.num_codebooks = q = cfg.num_codebooks
        self.cardinality = c = cfg.cardinality
        self.mask_id = c
        # One table with per-level offsets: a single gather embeds all levels at once.
        self.code_embed = nn.Embedding(q * (c + 1), cfg.d_model)
        self.register_buffer("level_offsets", torch.arange(q).mul(c + 1)[None, :, None], persistent=False)
        self.target_level = nn.Embedding(q, cfg.d_model)
        self.cond_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.body = Transformer(cfg.d_model, cfg.n_heads, cfg.masked_layers, cfg.ff_mult, cfg.dropout,
                                causal=False, max_len=cfg.max_frames)
        self.head_weight = nn.Parameter(torch.randn(q, c, cfg.d_model) * cfg.d_model**-0.5)
        self.head_bias = nn.Parameter(torch.zeros(q, c))

    def hidden(self, codes: Tensor, cond: FrameCondition, target_level: Tensor | int, window: int = 0) -> Tensor:
        """codes [B, Q, T] with ``mask_id`` at masked positions -> hidden states [B, T, D].

        ``window`` > 0 attends block-locally (layers.block_local_attention): an inference choice.
        """
        b, q, t = codes.shape
        if q != self.num_codebooks:
            raise ValueError(f"expected {self.num_codebooks} levels, got {q}")
        # One bag of Q rows per frame, summed in the gather: the same sums as embedding(...).sum(1) without the
        # [B, Q, T, D] intermediate (49 against 136 us at 85 frames, 161 against 758 at 430; CHANGELOG 2026-12-07).
        bags = (codes.long() + self.level_offsets).transpose(1, 2).reshape(b * t, q)
        x = F.embedding_bag(bags, self.code_embed.weight, mode="sum").view(b, t, -1)  # [B, T, D]
        if isinstance(target_level, int):
            target_level = torch.full((b,), target_level, dtype=torch.long, device=codes.device)
        # The condition is float32; a bfloat16 copy of this model (model.precision) computes in its own dtype.
        x = x + self.cond_proj(cond.frames.to(x.dtype)) + self.target_level(target_level)[:, None, :]
        return self.body(x, cond.frame_mask, window)

    def _heads(self, levels: Sequence[int]) -> tuple[Tensor, Tensor]:
        """The heads' weights [n, C, D] and biases [n, C] of ``levels``, in that order."""
        levels = list(levels)
        n = len(levels)
        if levels == list(range(levels[0], levels[0] + n)):  # consecutive levels (every decoder's case): a view
            return self.head_weight[levels[0] : levels[0] + n], self.head_bias[levels[0] : levels[0] + n]
        idx = torch.as_tensor(levels, dtype=torch.long, device=self.head_weight.device)
        return self.head_weight.index_select(0, idx), self.head_bias.index_select(0, idx)

    def level_logits(self, h: Tensor, levels: Sequence[int]) -> Tensor:
        """Hidden [B, T, D] -> logits [B, len(levels), T, C] for the requested heads only."""
        n, c = len(levels), self.cardinality
        w, bias = self._heads(levels)
        # One GEMM with the bias fused (addmm) over all requested heads; measured faster on CPU than an
        # einsum followed by a separate bias add over [B, n, T, C].
        out = F.linear(h, w.reshape(n * c, -1), bias.reshape(n * c))  # [B, T, n * C]
        return out.view(*h.shape[:-1], n, c).transpose(-3, -2)

    def greedy(self, codes: Tensor, cond: FrameCondition, levels: Sequence[int], window: int = 0,
               chunk: int | None = None) -> Tensor:
        """``forward(...).argmax(-1)`` [B, len(levels), T], without ever holding the whole logits.

        A greedy fine pass needs only each row's best token, but its logits are B x T x n x C floats (57 MB for
        20 s and 7 levels) written out and read back. In float32 each level's [T x C] logits go to one buffer
        reused level after level, which stays in cache (15 fine levels of voices/natural, 2 threads, paired
        against 512-frame chunks of all levels at once: 1.03-1.06x at 85 frames, 1.06-1.18x at 426, 1.15-1.34x at
        799). Other dtypes take ``chunk`` frames of all levels at a time (default 128): bfloat16 logits are
        widened before the argmax (torch's argmax over bfloat16 rows is ~2.5x slower than over float32 here),
        and 128-frame chunks measured 19.9 / 35.5 ms at 427 / 861 frames against 20.3 / 44.8 with 512.
        """
        h = self.hidden(codes, cond, min(levels), window)
        b, t, d = h.shape
        n, c = len(levels), self.cardinality
        w, bias = self._heads(levels)
        flat = h.reshape(b * t, d)
        if h.dtype == torch.float32 and chunk is None:
            out = torch.empty(n, b * t, dtype=torch.long, device=h.device)
            logits = h.new_empty(b * t, c)
            for i in range(n):
                torch.addmm(bias[i], flat, w[i].t(), out=logits)
                torch.argmax(logits, -1, out=out[i])
            return out.view(n, b, t).transpose(0, 1)
        chunk = chunk or 128
        w, bias = w.reshape(n * c, d), bias.reshape(n * c)
        out = torch.empty(b * t, n, dtype=torch.long, device=h.device)
        for s in range(0, b * t, chunk):
            # each chunk is one [chunk x D] by [D x n C] product whose rows are frames: contiguous rows to argmax
            logits = F.linear(flat[s : s + chunk], w, bias).view(-1, n, c)
            out[s : s + chunk] = logits.float().argmax(-1)
        return out.view(b, t, n).permute(0, 2, 1)

    def item_logits(self, h: Tensor, levels: Tensor) -> Tensor:
        """Per-item head: hidden [B, T, D], levels [B] -> logits [B, T, C] (training: one level per item)."""
        w = self.head_weight.index_select(0, levels)  # [B, C, D]
        return torch.einsum("btd,bcd->btc", h, w) + self.head_bias.index_select(0, levels)[:, None, :]

    def forward(self, codes: Tensor, cond: FrameCondition, levels: Sequence[int], window: int = 0,
                frames: Tensor | None = None) -> Tensor:
        """One decoding pass: logits [B, len(levels), T, C]; the target level is the coarsest requested.

        ``frames`` [B, T] bool: the heads run on those frames only, and the result is their logits
        [N, len(levels), C] in the mask's row-major order (the full result's ``.transpose(1, 2)[frames]``).
        A head is [D x C] per frame, so an iterative decoder that needs a few frames' logits skips the rest.
        """
        h = self.hidden(codes, cond, min(levels), window)
        if frames is None:
            return self.level_logits(h, levels).float()  # sampling and softmax always see float32
        return self.level_logits(h[frames][None], levels)[0].transpose(0, 1).float()


@dataclass
class SerialState:
    """Decoding state of the serial model: projected condition for all frames + the KV cache."""

    cond: Tensor  # [B, T, D], projected once at start
    cache: KVCache
    position: int = 0


class SerialLevel0(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cardinality = cfg.cardinality
        self.bos_id = cfg.cardinality
        self.token = nn.Embedding(cfg.cardinality + 1, cfg.d_model)
        self.cond_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.body = Transformer(cfg.d_model, cfg.n_heads, cfg.serial_layers, cfg.ff_mult, cfg.dropout,
                                causal=True, max_len=cfg.max_frames)
        self.head = nn.Linear(cfg.d_model, cfg.cardinality)

    def forward(self, code0: Tensor, cond: FrameCondition) -> Tensor:
        """Teacher-forced pass: code0 [B, T] -> logits [B, T, C] for code0 itself (inputs shifted by one)."""
        prev = torch.cat((torch.full_like(code0[:, :1], self.bos_id), code0[:, :-1]), dim=1)
        x = self.cond_proj(cond.frames) + self.token(prev.long())
        return self.head(self.body(x, cond.frame_mask))

    def start(self, cond: FrameCondition) -> SerialState:
        """Prepare incremental decoding of ``cond.num_frames`` frames."""
        c = self.cond_proj(cond.frames)
        cache = self.body.new_cache(cond.batch, cond.num_frames, c.device, c.dtype)
        return SerialState(cond=c, cache=cache)

    def step(self, state: SerialState, prev: Tensor | None) -> Tensor:
        """Logits [B, C] for frame ``state.position`` given the previous frame's tokens [B] (None at t=0).

        Padded items simply run past their end; causality means their extra frames can never affect
        their real ones, and the caller discards them.
        """
        t = state.position
        if t >= state.cond.shape[1]:
            raise RuntimeError("serial decoding ran past the last frame")
        if prev is None:
            prev = torch.full((state.cond.shape[0],), self.bos_id, dtype=torch.long, device=state.cond.device)
        x = state.cond[:, t : t + 1] + self.token(prev.long())[:, None, :]
        h = self.body.step(x, state.cache)
        state.position += 1
        return self.head(h[:, 0])
