"""Decoding fixtures: a tiny real VoiceModel and scripted "oracle" models with known confidence."""

from __future__ import annotations

import torch
from torch import Tensor

from audiopd.model.config import ModelConfig
from audiopd.model.encoder import FrameCondition
from audiopd.model.voice import VoiceModel

Q, CARD = 4, 32


def tiny_model(seed: int = 0) -> VoiceModel:
    torch.manual_seed(seed)
    cfg = ModelConfig(num_symbols=20, num_codebooks=Q, cardinality=CARD, num_speakers=2, d_model=32, n_heads=2,
                      ff_mult=2, dropout=0.0, encoder_layers=1, duration_channels=32, masked_layers=2,
                      serial_layers=2, max_frames=256)
    return VoiceModel(cfg).eval()


def condition(model: VoiceModel, lengths: tuple[int, ...] = (30,)) -> FrameCondition:
    """A condition whose items have exactly ``lengths`` frames (durations of 3 frames per phoneme)."""
    b = len(lengths)
    lmax = max((n + 2) // 3 for n in lengths)
    ph = torch.zeros(b, lmax, dtype=torch.long)
    dur = torch.zeros(b, lmax, dtype=torch.long)
    gen = torch.Generator().manual_seed(1)
    for i, n in enumerate(lengths):
        k = (n + 2) // 3
        ph[i, :k] = torch.randint(1, 20, (k,), generator=gen)
        dur[i, :k] = 3
        dur[i, k - 1] = n - 3 * (k - 1)
    return model.condition(ph, torch.arange(b) % 2, durations=dur)


class OracleModel:
    """Scripted masked model: level q at frame t "wants" token (7t + 3q) % CARD with a given
    probability; every other token shares the rest. ``sharpness`` sets the confidence."""

    num_codebooks = Q
    cardinality = CARD
    mask_id = CARD

    def __init__(self, sharpness: float) -> None:
        self.sharpness = sharpness
        self.calls = 0
        self.windows: list[int] = []  # the attention window each pass asked for

    def target(self, t: int) -> Tensor:
        return torch.stack([(7 * torch.arange(t) + 3 * q) % CARD for q in range(Q)])  # [Q, T]

    def masked(self, codes: Tensor, cond: FrameCondition, levels: list[int], window: int = 0,
               frames: Tensor | None = None) -> Tensor:
        self.calls += 1
        self.windows.append(window)
        b, _, t = codes.shape
        tgt = self.target(t)[levels]  # [n, T]
        logits = torch.zeros(b, len(levels), t, CARD)
        logits.scatter_(-1, tgt[None, :, :, None].expand(b, -1, -1, 1), self.sharpness)
        # Context dependence: the fraction of known level-0 tokens sharpens predictions.
        known = (codes[:, 0] != CARD).float().mean(-1)[:, None, None, None]
        logits = logits * (1.0 + known)
        return logits if frames is None else logits.transpose(1, 2)[frames]


def pair(model: VoiceModel) -> tuple[FrameCondition, list[FrameCondition]]:
    """Two items (24 and 15 frames) batched with padding, and each on its own."""
    ph = torch.tensor([[3, 7, 1, 9, 4, 2, 8, 5], [6, 2, 11, 5, 0, 0, 0, 0]])
    dur = torch.tensor([[3, 3, 3, 3, 3, 3, 3, 3], [4, 4, 4, 3, 0, 0, 0, 0]])
    spk = torch.tensor([0, 1])
    both = model.condition(ph, spk, durations=dur)
    singles = []
    for i in range(2):
        n = int((ph[i] > 0).sum())
        singles.append(model.condition(ph[i : i + 1, :n], spk[i : i + 1], durations=dur[i : i + 1, :n]))
    return both, singles
