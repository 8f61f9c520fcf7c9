"""Reading and writing audio files with clear errors and no partial outputs."""

from __future__ import annotations

import functools
import io
import math
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


@functools.lru_cache(maxsize=16)
def _polyphase(up: int, down: int) -> tuple[np.ndarray, int]:
    """scipy.signal.resample_poly's default anti-aliasing filter (``firwin(2 * 10 * m + 1, 1 / m, window=("kaiser",
    5.0))``, m = max(up, down)), times ``up`` and split into its ``up`` phases ``[up, taps]``, with the number of
    leading outputs resample_poly drops to centre the filter.

    numpy only: importing scipy.signal cost a cold ``audiopd say`` ~0.8 s of CPU (issue 44), for one filter design.
    Designed once per ratio: on a sentence the design cost as much as the filtering itself.
    """
    m = max(up, down)
    half = 10 * m
    n = np.arange(2 * half + 1) - half
    h = np.sinc(n / m) / m * np.kaiser(2 * half + 1, 5.0)
    h = h / h.sum() * up
    pre = down - half % down  # resample_poly's zero padding in front, so output 0 sits on the filter's centre
    h = np.concatenate([np.zeros(pre), h])
    taps = -(-len(h) // up)
    h = np.pad(h, (0, taps * up - len(h)))
    return np.ascontiguousarray(h.reshape(taps, up).T), (half + pre) // down


def resample(audio: np.ndarray, rate: int, target: int) -> np.ndarray:
    """Polyphase resampling from ``rate`` to ``target`` Hz: ``scipy.signal.resample_poly``'s default result (to
    float rounding), dtype kept (float32 stays float32; other input becomes float64). The input itself is returned
    when the rates agree."""
    x = np.asarray(audio)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    rate, target = int(rate), int(target)
    if rate == target:
        return x
    if x.ndim != 1:
        raise ValueError(f"resample: expected 1-D audio, got shape {x.shape}")
    g = math.gcd(rate, target)
    up, down = target // g, rate // g
    phases, skip = _polyphase(up, down)
    taps = phases.shape[1]
    n_out = -(-len(x) * up // down)
    # Output i reads the upsampled signal at k = (i + skip) * down: filter phase k % up against the input samples
    # k // up, k // up - 1, ... (zeros outside the signal). Outputs i, i + up, i + 2 up, ... share a phase and step
    # ``down`` samples apart, so each phase is one matrix-vector product over a strided view (no gathered copy).
    last = (n_out - 1 + skip) * down // up
    xp = np.concatenate([np.zeros(taps - 1, dtype=x.dtype), x, np.zeros(max(0, last + 1 - len(x)), dtype=x.dtype)])
    windows = np.lib.stride_tricks.sliding_window_view(xp, taps)  # windows[b][::-1] = x[b], x[b - 1], ...
    h = np.ascontiguousarray(phases[:, ::-1], dtype=x.dtype)
    out = np.empty(n_out, dtype=x.dtype)
    for r in range(min(up, n_out)):
        k = (r + skip) * down
        count = (n_out - 1 - r) // up + 1
        out[r::up] = windows[k // up: k // up + down * (count - 1) + 1: down] @ h[k % up]
    return out


# What a file name's suffix writes: 16-bit PCM in a WAV file, or losslessly compressed as FLAC (about half the size).
FORMATS = {".wav": "WAV", ".flac": "FLAC"}
OPUS_RATES = (8000, 12000, 16000, 24000, 48000)  # the only rates an Opus stream can carry


def to_pcm16(audio: np.ndarray) -> np.ndarray:
    """Float samples as 16-bit integers: x * 32768 rounded, clipped to [-32768, 32767] (full scale is 1.0)."""
    scaled = np.rint(np.asarray(audio, dtype=np.float64) * 32768.0)
    return np.clip(scaled, -32768, 32767).astype(np.int16)


def audio_bytes(audio: np.ndarray, sample_rate: int, fmt: str = "WAV", subtype: str = "PCM_16") -> bytes:
    """A mono float signal as the bytes of a libsndfile ``fmt`` file ("WAV", "FLAC", "OGG", "MP3").

    16-bit PCM (``subtype`` "PCM_16", WAV or FLAC) is quantised by ``to_pcm16``, here for every writer, because
    libsndfile scales floats differently per format; a lossy codec ("VORBIS", "OPUS", "MPEG_LAYER_III") is given
    the float samples clipped to [-1, 1]. Opus, which codes only ``OPUS_RATES``, gets the audio resampled to the next
    of them up (a 22,050 Hz voice's at 24,000 Hz).
    """
    x = np.asarray(audio, dtype=np.float32).reshape(-1)
    if subtype == "OPUS" and int(sample_rate) not in OPUS_RATES:
        # Opus codes only its own rates (RFC 6716, sec. 2): a 22,050 Hz voice goes out at the next one up.
        target = next((r for r in OPUS_RATES if r >= sample_rate), OPUS_RATES[-1])
        x, sample_rate = resample(x, int(sample_rate), target), target
    samples = to_pcm16(x) if subtype == "PCM_16" else np.clip(x, -1.0, 1.0)
    buf = io.BytesIO()
    sf.write(buf, samples, int(sample_rate), subtype=subtype, format=fmt)
    return buf.getvalue()


def write_audio(path: str | Path, audio: np.ndarray, sample_rate: int) -> Path:
    """Write 16-bit PCM atomically (temp file + rename): a failure never leaves a partial file.

    FLAC when the name ends in ``.flac``, else WAV (whatever the suffix: callers that take a user's name check it
    against ``FORMATS`` first).
    """
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower(), "WAV")
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if audio.size == 0:
        raise AudioInputError(f"refusing to write an empty audio file to {path}")
    data = audio_bytes(audio, sample_rate, fmt)  # to_pcm16: WAV and FLAC hold the same samples
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return path
