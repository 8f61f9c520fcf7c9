"""Phoneme encoder, duration predictor and length regulator (FastSpeech 2, Ren et al. 2021).

Both decoding paths (parallel masked and serial) are conditioned on the same frame-level states:
phoneme encoder output upsampled by durations. Durations fix the alignment, so neither path has to
learn attention-based alignment, which is what makes masked parallel decoding of the coarse level
tractable without a prompt (MaskGCT, Wang et al. 2024, also fixes the target length up front).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from audiopd.model.config import ModelConfig
from audiopd.model.layers import Transformer, sinusoid


@dataclass
class FrameCondition:
    """Frame-level conditioning shared by every decoder.

    frames: [B, T, D] upsampled phoneme states (+ speaker, + within-phoneme progress);
    frame_mask: [B, T] bool, True on real frames; durations: [B, L] frames per phoneme token;
    lengths: [B] frames per item.
    """

    frames: Tensor
    frame_mask: Tensor
    durations: Tensor
    lengths: Tensor

    @property
    def batch(self) -> int:
        return self.frames.shape[0]

    @property
    def num_frames(self) -> int:
        return self.frames.shape[1]


class PhonemeEncoder(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.num_symbols, cfg.d_model, padding_idx=0)
        self.speaker = nn.Embedding(cfg.num_speakers, cfg.d_model)
        self.layers = Transformer(cfg.d_model, cfg.n_heads, cfg.encoder_layers, cfg.ff_mult, cfg.dropout,
                                  causal=False, max_len=1024)

    def forward(self, phonemes: Tensor, phone_mask: Tensor, speakers: Tensor) -> Tensor:
        """phonemes [B, L] int, phone_mask [B, L] bool, speakers [B] -> states [B, L, D]."""
        x = self.embed(phonemes) + self.speaker(speakers)[:, None, :]
        x = self.layers(x, phone_mask)
        return x * phone_mask[..., None]


class DurationPredictor(nn.Module):
    """Conv1d x2 + ReLU + LayerNorm + dropout, then a linear to log(1 + frames) (FastSpeech 2 §2.3)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        c, k = cfg.duration_channels, cfg.duration_kernel
        self.conv1 = nn.Conv1d(cfg.d_model, c, k, padding=k // 2)
        self.ln1 = nn.LayerNorm(c)
        self.conv2 = nn.Conv1d(c, c, k, padding=k // 2)
        self.ln2 = nn.LayerNorm(c)
        self.drop = nn.Dropout(cfg.dropout)
        self.proj = nn.Linear(c, 1)

    def forward(self, states: Tensor, phone_mask: Tensor) -> Tensor:
        """states [B, L, D] -> predicted log(1 + duration) [B, L] (0 at padding)."""
        m = phone_mask[..., None].to(states.dtype)
        x = self.conv1((states * m).transpose(1, 2)).transpose(1, 2)
        x = self.drop(self.ln1(torch.relu(x)))
        x = self.conv2((x * m).transpose(1, 2)).transpose(1, 2)
        x = self.drop(self.ln2(torch.relu(x)))
        return self.proj(x).squeeze(-1) * phone_mask


def durations_from_log(log_dur: Tensor, phone_mask: Tensor, speed: float | Tensor = 1.0) -> Tensor:
    """Predicted log(1 + d) -> integer frames; ``speed`` > 1 speaks faster (durations / speed), one number or a
    float32 tensor [B] of one per item.

    Rounding can give 0 frames for very short tokens (as in FastSpeech 2); an item whose total would
    be 0 gets one frame on its first token so every item has something to decode.
    """
    if isinstance(speed, Tensor):
        if speed.shape != log_dur.shape[:1] or bool((speed <= 0).any()):
            raise ValueError(f"speed must be > 0 for each of {log_dur.shape[0]} item(s), got {speed.tolist()}")
        speed = speed.to(torch.float32)[:, None]
    elif speed <= 0:
        raise ValueError(f"speed must be > 0, got {speed}")
    frames = (torch.expm1(log_dur.float()).clamp(min=0.0) / speed).round().long()
    frames = frames * phone_mask.long()
    empty = frames.sum(-1) == 0
    if empty.any():
        frames[empty, 0] = 1
    return frames


def length_regulate(states: Tensor, durations: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Upsample phoneme states [B, L, D] by integer durations [B, L].

    Returns frame states [B, T, D] (T = max total), the frame mask [B, T], and each frame's progress
    through its phoneme in [0, 1) [B, T]. Vectorised with searchsorted over cumulative durations, so
    the cost is one gather rather than a Python loop over phonemes.
    """
    b = states.shape[0]
    ends = durations.long().cumsum(-1)  # [B, L]
    lengths = ends[:, -1] if ends.shape[1] else torch.zeros(b, dtype=torch.long, device=states.device)
    t = int(lengths.max().item()) if b else 0
    frames = torch.arange(t, device=states.device).expand(b, t).contiguous()
    idx = torch.searchsorted(ends, frames, right=True).clamp(max=max(durations.shape[1] - 1, 0))
    out = torch.gather(states, 1, idx[..., None].expand(b, t, states.shape[-1]))
    mask = frames < lengths[:, None]
    starts = ends - durations.long()
    start = torch.gather(starts, 1, idx)
    dur = torch.gather(durations.long(), 1, idx).clamp(min=1)
    progress = (frames - start).float() / dur.float()
    out = out * mask[..., None]
    return out, mask, progress


class FrameConditioner(nn.Module):
    """Encoder + duration predictor + length regulator: the part both decoding paths share."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.d_model = cfg.d_model
        self.encoder = PhonemeEncoder(cfg)
        self.duration = DurationPredictor(cfg)
        self.progress = nn.Linear(32, cfg.d_model)
        self.speaker = nn.Embedding(cfg.num_speakers, cfg.d_model)

    def encode(self, phonemes: Tensor, phone_mask: Tensor, speakers: Tensor) -> tuple[Tensor, Tensor]:
        """-> (phoneme states [B, L, D], predicted log(1 + duration) [B, L])."""
        states = self.encoder(phonemes, phone_mask, speakers)
        return states, self.duration(states, phone_mask)

    def frames(self, states: Tensor, durations: Tensor, speakers: Tensor) -> FrameCondition:
        up, mask, progress = length_regulate(states, durations)
        # Within-phoneme progress tells a frame where it sits in its phoneme: without it every frame
        # of a phoneme has the same conditioning and the model must infer position from context.
        x = up + self.progress(sinusoid(progress, 32)) + self.speaker(speakers)[:, None, :]
        x = x * mask[..., None]
        return FrameCondition(frames=x, frame_mask=mask, durations=durations.long(), lengths=mask.sum(-1))

    def forward(self, phonemes: Tensor, phone_mask: Tensor, speakers: Tensor, durations: Tensor | None = None,
                speed: float | Tensor = 1.0) -> tuple[FrameCondition, Tensor]:
        """Condition for decoding; predicted durations are used when ``durations`` is None.

        Returns (condition, predicted log-durations) so training can score the duration predictor
        while conditioning on ground-truth durations (teacher forcing).
        """
        states, log_dur = self.encode(phonemes, phone_mask, speakers)
        if durations is None:
            durations = durations_from_log(log_dur, phone_mask, speed)
        return self.frames(states, durations, speakers), log_dur
