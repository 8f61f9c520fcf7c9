"""The phone recogniser in torch: what ``recipes/checker`` trains and exports, and the reference the NumPy
inference network (``audiopd.lite.recognizer``, the checker's) is tested against.

Features, labels, the artifact checks and the constants live in ``audiopd.checker.phones`` (torch-free); the
names here are also importable from there, lazily, so the recipes' ``from audiopd.checker.phones import
PhoneRecognizer`` keeps working.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import torch
import yaml
from torch import nn

from audiopd import artifacts
from audiopd.checker.phones import (
    DEFAULT_RECOGNIZER,
    FORMAT_VERSION,
    FRAME_S,
    NUM_CLASSES,
    PHONES,
    SAMPLE_RATE,
    RecognizerConfig,
    log_mel,
    open_artifact,
    to_16k,
)
from audiopd.errors import ArtifactError


class _Block(nn.Module):
    """Pre-norm depthwise convolution (local context) then a feed-forward layer, each residual."""

    def __init__(self, cfg: RecognizerConfig) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.dw = nn.Conv1d(cfg.d_model, cfg.d_model, cfg.kernel, padding=cfg.kernel // 2, groups=cfg.d_model)
        self.pw = nn.Linear(cfg.d_model, cfg.d_model)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.ff = nn.Sequential(nn.Linear(cfg.d_model, cfg.ffn), nn.GELU(), nn.Linear(cfg.ffn, cfg.d_model))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, T, D]
        h = self.dw(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        x = x + self.drop(self.pw(nn.functional.gelu(h)))
        return x + self.drop(self.ff(self.norm2(x)))


class PhoneRecognizer(nn.Module):
    """log-mel [B, T, n_mels] at 100 frames/s -> CTC log-posteriors [B, ceil(T/2), NUM_CLASSES]."""

    frame_s = FRAME_S

    def __init__(self, cfg: RecognizerConfig = RecognizerConfig()) -> None:
        super().__init__()
        self.cfg = cfg
        self.inp = nn.Conv1d(cfg.n_mels, cfg.d_model, 5, stride=2, padding=2)
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.out = nn.Linear(cfg.d_model, NUM_CLASSES)

    @staticmethod
    def out_lengths(lengths: torch.Tensor) -> torch.Tensor:
        return (lengths + 1) // 2

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        x = nn.functional.gelu(self.inp(feats.transpose(1, 2))).transpose(1, 2)
        for block in self.blocks:
            x = block(x)
        return torch.log_softmax(self.out(self.norm(x)), dim=-1)

    @torch.inference_mode()
    def posteriors(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        """Log-posteriors [T', NUM_CLASSES] (float32) of one clip; one frame per ``frame_s`` seconds."""
        feats = log_mel(to_16k(audio, sample_rate), self.cfg.n_mels)
        return self(torch.from_numpy(feats)[None])[0].numpy()


def save_recognizer(model: PhoneRecognizer, directory: str | Path, *, info: dict | None = None) -> Path:
    """Write a recogniser artifact (config.yaml, model.safetensors, SHA256SUMS) into ``directory``."""
    from safetensors.torch import save_file

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(d / "model.safetensors"))
    cfg = {"format_version": FORMAT_VERSION, "kind": "ctc_phones", "sample_rate": SAMPLE_RATE,
           "phones": list(PHONES), "model": dataclasses.asdict(model.cfg), "info": dict(info or {})}
    (d / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    artifacts.write_checksums(d)
    return d


@functools.lru_cache(maxsize=4)
def load_recognizer(name: str | Path = DEFAULT_RECOGNIZER) -> PhoneRecognizer:
    """Load a recogniser by name (``checkers/<name>``) or directory into torch; verified, cached, eval mode.
    The checker itself loads the NumPy one (``audiopd.lite.recognizer.load_recognizer``)."""
    from safetensors.torch import load_file

    d, cfg = open_artifact(name)
    model = PhoneRecognizer(cfg)
    try:
        model.load_state_dict(load_file(str(d / "model.safetensors")))
    except RuntimeError as exc:
        raise ArtifactError(f"{d}: weights do not fit the recogniser config: {exc}") from None
    return model.eval()
