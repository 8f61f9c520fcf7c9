"""A small CTC phone recogniser: the checker's fast listener.

It hears the delivered audio itself (log-mel at 16 kHz, 100 frames/s), so it judges exactly what the user will
hear, teacher recordings and injected faults included, and costs a few MFLOP per second of audio: a pass of a
0.86 M-parameter convolutional encoder (depthwise-separable, QuartzNet/Conformer-style blocks) at 50 frames/s,
far below the decoder's own cost (the issue's budget: checker RTF <= 0.01 at 2 threads). Its output is per-frame
log-posteriors over the 39 ARPAbet base phones plus the CTC blank; ``audiopd.checker.ctc`` turns them into an
alignment against the intended phones and into the checker's findings.

Artifacts live under ``checkers/<name>/`` (config.yaml, model.safetensors, SHA256SUMS), rebuilt by
``recipes/checker``; the loader verifies checksums and rejects unknown versions or keys.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import yaml
from torch import nn

from audiopd import artifacts
from audiopd.audio import resample
from audiopd.config import from_dict
from audiopd.errors import ArtifactError
from audiopd.text.symbols import CONSONANTS, SYMBOLS, VOWELS, base_phone, is_phone

SAMPLE_RATE = 16_000
HOP = 160  # 10 ms
N_FFT = 512
WIN = 400  # 25 ms
BLANK = 0
PHONES: tuple[str, ...] = CONSONANTS + VOWELS  # stress is not heard reliably; the checker needs the phone
PHONE_TO_LABEL = {p: i + 1 for i, p in enumerate(PHONES)}
NUM_CLASSES = len(PHONES) + 1
FORMAT_VERSION = 1
DEFAULT_RECOGNIZER = "phones16k"


@dataclass(frozen=True)
class RecognizerConfig:
    n_mels: int = 80
    d_model: int = 160
    layers: int = 6
    kernel: int = 11
    ffn: int = 320
    dropout: float = 0.1


def labels_of_ids(ids: tuple[int, ...] | list[int]) -> list[tuple[int, int]]:
    """(label, token index) for every phone among frontend token ids; pauses and boundaries are not heard."""
    out = []
    for k, i in enumerate(ids):
        sym = SYMBOLS[i]
        if is_phone(sym):
            out.append((PHONE_TO_LABEL[base_phone(sym)], k))
    return out


@functools.lru_cache(maxsize=4)
def _mel_matrix(n_mels: int) -> torch.Tensor:
    """HTK-style triangular mel filters, 0-8 kHz, [n_fft/2+1, n_mels]."""
    def hz_to_mel(f):
        return 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)

    def mel_to_hz(m):
        return 700.0 * (10 ** (np.asarray(m) / 2595.0) - 1.0)

    freqs = np.linspace(0, SAMPLE_RATE / 2, N_FFT // 2 + 1)
    edges = mel_to_hz(np.linspace(hz_to_mel(20.0), hz_to_mel(SAMPLE_RATE / 2), n_mels + 2))
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    fb = np.maximum(0.0, np.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)))
    return torch.from_numpy(fb.T.astype(np.float32))


def to_16k(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Mono float32 at 16 kHz (polyphase resampling when needed)."""
    return resample(np.asarray(audio, dtype=np.float32).reshape(-1), int(sample_rate), SAMPLE_RATE)


def log_mel(audio16k: np.ndarray, n_mels: int = 80) -> np.ndarray:
    """[T, n_mels] float32 log-mel, 100 frames/s, mean-normalised per bin so the level does not matter."""
    x = torch.from_numpy(np.ascontiguousarray(audio16k, dtype=np.float32))
    if x.numel() < WIN:
        x = torch.nn.functional.pad(x, (0, WIN - x.numel()))
    spec = torch.stft(x, N_FFT, HOP, WIN, window=torch.hann_window(WIN), center=True, return_complex=True)
    mel = (spec.abs() ** 2).T @ _mel_matrix(n_mels)
    feats = torch.log(mel + 1e-6)
    return (feats - feats.mean(dim=0, keepdim=True)).numpy()


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

    frame_s = 2 * HOP / SAMPLE_RATE

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
    """Load a shipped recogniser by name (``checkers/<name>``) or directory; verified, cached, eval mode."""
    from safetensors.torch import load_file

    d = artifacts.find_artifact("checkers", name)
    artifacts.verify_checksums(d)
    cfg = yaml.safe_load((d / "config.yaml").read_text())
    if not isinstance(cfg, dict) or cfg.get("kind") != "ctc_phones":
        raise ArtifactError(f"{d}/config.yaml: not a ctc_phones recogniser")
    artifacts.require_format_version(cfg.get("format_version"), FORMAT_VERSION, what="recogniser", where=str(d))
    if cfg.get("sample_rate") != SAMPLE_RATE or tuple(cfg.get("phones", ())) != PHONES:
        raise ArtifactError(f"{d}: recogniser rate or phone set differs from this version's")
    model = PhoneRecognizer(from_dict(RecognizerConfig, cfg.get("model") or {}, where=f"{d}/config.yaml:model"))
    try:
        model.load_state_dict(load_file(str(d / "model.safetensors")))
    except RuntimeError as exc:
        raise ArtifactError(f"{d}: weights do not fit the recogniser config: {exc}") from None
    return model.eval()
