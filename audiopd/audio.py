"""Reading and writing audio files with clear errors and no partial outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from audiopd.errors import AudioInputError
from audiopd.fileio import atomic_path


def read_audio(path: str | Path, *, expect_rate: int | None = None) -> tuple[np.ndarray, int]:
    """Read a mono float32 signal. Multi-channel input is averaged to mono (documented normalisation).

    Raises ``AudioInputError`` for a missing, unreadable, empty or non-audio file, and for a sample
    rate other than ``expect_rate`` (we never resample silently: the codec was fitted at one rate).
    """
    path = Path(path)
    if not path.is_file():
        raise AudioInputError(f"{path}: no such file")
    try:
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises several types for non-audio input
        raise AudioInputError(f"{path}: not a readable audio file ({exc.__class__.__name__})") from None
    if data.shape[0] == 0:
        raise AudioInputError(f"{path}: the file holds no audio samples")
    audio = data.mean(axis=1).astype(np.float32)
    if not np.all(np.isfinite(audio)):
        raise AudioInputError(f"{path}: the audio holds NaN or infinite samples")
    if expect_rate is not None and rate != expect_rate:
        raise AudioInputError(f"{path}: sample rate {rate} Hz, but this codec needs {expect_rate} Hz")
    return audio, int(rate)


def write_audio(path: str | Path, audio: np.ndarray, sample_rate: int) -> Path:
    """Write 16-bit PCM WAV atomically (temp file + rename): a failure never leaves a partial file."""
    path = Path(path)
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if audio.size == 0:
        raise AudioInputError(f"refusing to write an empty audio file to {path}")
    with atomic_path(path) as tmp:
        sf.write(str(tmp), np.clip(audio, -1.0, 1.0), sample_rate, subtype="PCM_16", format="WAV")
    return path
