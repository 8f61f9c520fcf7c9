"""A small CTC phone recogniser: the checker's fast listener (its torch-free half).

It hears the delivered audio itself (log-mel at 16 kHz, 100 frames/s), so it judges exactly what the user will
hear, teacher recordings and injected faults included, and costs a few MFLOP per second of audio: a pass of a
0.86 M-parameter convolutional encoder (depthwise-separable, QuartzNet/Conformer-style blocks) at 50 frames/s,
far below the decoder's own cost (the issue's budget: checker RTF <= 0.01 at 2 threads). Its output is per-frame
log-posteriors over the 39 ARPAbet base phones plus the CTC blank; ``audiopd.checker.ctc`` turns them into an
alignment against the intended phones and into the checker's findings.

This module holds what both implementations share and none of them needs torch for: the phone set and labels,
the log-mel features (NumPy), the artifact checks and the weight shapes a config implies. The network runs in
NumPy for inference (``audiopd.lite.recognizer``, what the checker uses) and in torch for training
(``audiopd.checker.phones_torch``: ``PhoneRecognizer``, ``save_recognizer``, ``load_recognizer``).

Artifacts live under ``checkers/<name>/`` (config.yaml, model.safetensors, SHA256SUMS), rebuilt by
``recipes/checker``; the loaders verify checksums and reject unknown versions or keys.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

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
FRAME_S = 2 * HOP / SAMPLE_RATE  # the encoder's stride-2 input convolution: 50 output frames/s
_FRAMES_PER_SLICE = 128  # log_mel's FFT batch: [128, 257] complex64 stays in L2


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
def mel_matrix(n_mels: int) -> np.ndarray:
    """HTK-style triangular mel filters, 20 Hz-8 kHz, [n_fft/2+1, n_mels] float32 (read-only: it is shared)."""
    def hz_to_mel(f: Any) -> np.ndarray:
        return 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)

    def mel_to_hz(m: Any) -> np.ndarray:
        return 700.0 * (10 ** (np.asarray(m) / 2595.0) - 1.0)

    freqs = np.linspace(0, SAMPLE_RATE / 2, N_FFT // 2 + 1)
    edges = mel_to_hz(np.linspace(hz_to_mel(20.0), hz_to_mel(SAMPLE_RATE / 2), n_mels + 2))
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    fb = np.maximum(0.0, np.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)))
    out = np.ascontiguousarray(fb.T, dtype=np.float32)
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=1)
def _window() -> np.ndarray:
    """torch.stft's window: a periodic Hann of WIN samples, zero-padded on both sides to N_FFT."""
    hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(WIN) / WIN)).astype(np.float32)
    left = (N_FFT - WIN) // 2
    out = np.pad(hann, (left, N_FFT - WIN - left))
    out.flags.writeable = False
    return out


def to_16k(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Mono float32 at 16 kHz (polyphase resampling when needed)."""
    return resample(np.asarray(audio, dtype=np.float32).reshape(-1), int(sample_rate), SAMPLE_RATE)


def log_mel(audio16k: np.ndarray, n_mels: int = 80) -> np.ndarray:
    """[T, n_mels] float32 log-mel, 100 frames/s, mean-normalised per bin so the level does not matter.

    The features the recogniser was trained on: ``torch.stft(center=True)`` (reflect padding, periodic Hann of 25 ms
    in a 512-point FFT), power through ``mel_matrix``, log with a 1e-6 floor; computed here in NumPy, equal to the
    torch definition to float32 rounding (tests/checker/test_phones_numpy.py).
    """
    x = np.ascontiguousarray(audio16k, dtype=np.float32).reshape(-1)
    if x.size < WIN:
        x = np.pad(x, (0, WIN - x.size))
    padded = np.pad(x, N_FFT // 2, mode="reflect")
    n_frames = 1 + x.size // HOP
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP][:n_frames]  # a view, no copy
    window, mel = _window(), mel_matrix(n_mels)
    feats = np.empty((n_frames, n_mels), dtype=np.float32)
    # A slice of frames at a time: the whole spectrum of 20 s is 4 MB, and streaming it through memory made the
    # FFT twice as slow as torch.stft's; a slice's stays in cache.
    for s in range(0, n_frames, _FRAMES_PER_SLICE):
        spec = np.fft.rfft(frames[s: s + _FRAMES_PER_SLICE] * window, axis=-1)
        power = np.square(spec.real)
        power += np.square(spec.imag)
        np.matmul(power, mel, out=feats[s: s + _FRAMES_PER_SLICE])
    feats += np.float32(1e-6)
    np.log(feats, out=feats)
    feats -= feats.mean(axis=0, keepdims=True)
    return feats


def weight_shapes(cfg: RecognizerConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor of the recogniser's state dict and its shape, as torch names them: what a NumPy loader must
    find, no more and no less (torch's ``load_state_dict(strict=True)``)."""
    d, f = cfg.d_model, cfg.ffn
    shapes: dict[str, tuple[int, ...]] = {"inp.weight": (d, cfg.n_mels, 5), "inp.bias": (d,)}
    for i in range(cfg.layers):
        p = f"blocks.{i}."
        shapes.update({
            p + "norm1.weight": (d,), p + "norm1.bias": (d,),
            p + "dw.weight": (d, 1, cfg.kernel), p + "dw.bias": (d,),
            p + "pw.weight": (d, d), p + "pw.bias": (d,),
            p + "norm2.weight": (d,), p + "norm2.bias": (d,),
            p + "ff.0.weight": (f, d), p + "ff.0.bias": (f,),
            p + "ff.2.weight": (d, f), p + "ff.2.bias": (d,),
        })
    shapes.update({"norm.weight": (d,), "norm.bias": (d,), "out.weight": (NUM_CLASSES, d), "out.bias": (NUM_CLASSES,)})
    return shapes


def open_artifact(name: str | Path = DEFAULT_RECOGNIZER) -> tuple[Path, RecognizerConfig]:
    """A recogniser artifact's directory and model config, once its checksums, kind, format version, sample rate
    and phone set are verified; ``ArtifactError`` otherwise. Both loaders start here."""
    d = artifacts.find_artifact("checkers", name)
    artifacts.verify_checksums(d)
    cfg = yaml.safe_load((d / "config.yaml").read_text())
    if not isinstance(cfg, dict) or cfg.get("kind") != "ctc_phones":
        raise ArtifactError(f"{d}/config.yaml: not a ctc_phones recogniser")
    artifacts.require_format_version(cfg.get("format_version"), FORMAT_VERSION, what="recogniser", where=str(d))
    if cfg.get("sample_rate") != SAMPLE_RATE or tuple(cfg.get("phones", ())) != PHONES:
        raise ArtifactError(f"{d}: recogniser rate or phone set differs from this version's")
    return d, from_dict(RecognizerConfig, cfg.get("model") or {}, where=f"{d}/config.yaml:model")
