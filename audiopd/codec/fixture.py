"""A tiny deterministic codec built entirely in code, for tests (kind ``"fixture"``).

It needs no trained data, so every test of the ``Codec`` contract, the model plumbing and the CLI can
run in milliseconds without an artifact download. It is deliberately crude but *honest*: the codes
really describe the audio (loudness, noisiness, spectral balance) and decoding really depends on
them, so a test that scrambles codes sees different audio.

Layout (defaults: 16 kHz, 100 frames/s, hop 160, Q = 4 levels of cardinality 64), coarse to fine
in the residual-VQ spirit of SoundStream/EnCodec (Zeghidour et al. 2021; Défossez et al. 2022):

* level 0: frame log-energy in 16 steps of 5 dB (-80..0 dBFS) x 4 zero-crossing-rate bands;
  alone it decodes to noise of the right loudness with a tilt guessed from the ZCR band
  (voiced frames cross zero rarely, fricatives often);
* level 1: coarse spectral balance: low band (< 1 kHz) and high band (>= 4 kHz) energy relative to
  the frame, each in 8 steps of 6 dB (-48..0 dB);
* level 2: the residual of level 1, each band in 8 steps of 0.75 dB (one level-1 step);
* level 3: the residual of the level-0 energy in 64 steps of 5/64 dB.

Decoding synthesises seeded random-phase noise whose three band energies and frame energy follow
the decoded features, overlap-added with a sine window (its squares sum to one at 50% overlap, so
uncorrelated noise keeps its power across frames). Same codes and seed give bit-identical audio.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from audiopd.artifacts import require_format_version, write_checksums
from audiopd.codec.base import Codec
from audiopd.config import from_dict, to_dict
from audiopd.errors import ArtifactError, AudioInputError

FORMAT_VERSION = 1

NUM_LEVELS = 4
CARDINALITY = 64

# Level 0: 16 energy steps x 4 ZCR bands = 64 codes.
_E_MIN_DB, _E_STEP_DB, _E_STEPS = -80.0, 5.0, 16
_ZCR_EDGES = (0.05, 0.15, 0.30)  # fraction of adjacent-sample sign changes
# Levels 1-2: relative band energies (low, high), 8 x 8 grid each.
_B_MIN_DB, _B_STEP_DB, _B_STEPS = -48.0, 6.0, 8
_B_FINE_STEPS = 8
_B_FINE_STEP_DB = _B_STEP_DB / _B_FINE_STEPS
# Level 3: energy residual within one level-0 step.
_E_FINE_STEPS = CARDINALITY
_E_FINE_STEP_DB = _E_STEP_DB / _E_FINE_STEPS
# Band edges in Hz: low | mid | high.
_LOW_HZ, _HIGH_HZ = 1000.0, 4000.0
# Relative band energies (low, high) in dB guessed from the ZCR band when only level 0 is decoded.
_TILT_FOR_ZCR = np.array([[-1.0, -30.0], [-3.0, -18.0], [-8.0, -8.0], [-15.0, -2.0]])
_EPS = 1e-10


@dataclasses.dataclass(frozen=True)
class FixtureConfig:
    """``config.yaml`` of a fixture codec artifact (strict keys)."""

    kind: str
    format_version: int
    sample_rate: int = 16000
    frame_rate: int = 100
    seed: int = 0


class FixtureCodec(Codec):
    """Deterministic energy/ZCR/band-energy codec; see the module docstring for the code layout."""

    num_codebooks = NUM_LEVELS
    cardinality = CARDINALITY
    concurrent_decode = True  # numpy only, a fresh seeded generator per call
    decoders = ("fixture",)
    decoder = "fixture"

    def __init__(self, sample_rate: int = 16000, frame_rate: int = 100, seed: int = 0, name: str = "fixture"):
        if sample_rate <= 0 or frame_rate <= 0 or sample_rate % frame_rate:
            raise ValueError(f"sample_rate ({sample_rate}) must be a positive multiple of frame_rate ({frame_rate})")
        if sample_rate < 2 * _HIGH_HZ + 2000:
            raise ValueError(f"sample_rate must be at least {int(2 * _HIGH_HZ + 2000)} Hz for the band layout")
        self.name = name
        self.sample_rate = int(sample_rate)
        self.frame_rate = int(frame_rate)
        self.seed = int(seed)
        self.hop = self.sample_rate // self.frame_rate
        # The code tables are this module's constants; the rates and the seed complete them.
        spec = f"fixture/{NUM_LEVELS}x{CARDINALITY}/{self.sample_rate}/{self.frame_rate}/{self.seed}"
        self.token_fingerprint = hashlib.sha256(spec.encode()).hexdigest()
        if self.hop < 16 or self.hop % 2:
            raise ValueError(f"hop {self.hop} samples is too short or odd; lower frame_rate")

    # ------------------------------------------------------------------ analysis
    def _features(self, audio: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per-frame (energy dB, ZCR, low-band dB, high-band dB), each ``[B, T]``."""
        b, s = audio.shape
        t = -(-s // self.hop)
        frames = np.zeros((b, t * self.hop), dtype=np.float64)
        frames[:, :s] = audio
        frames = frames.reshape(b, t, self.hop)
        power = np.mean(frames**2, axis=-1)
        energy_db = 10.0 * np.log10(power + _EPS)
        signs = np.signbit(frames)
        zcr = np.mean(signs[..., 1:] != signs[..., :-1], axis=-1)
        spec = np.abs(np.fft.rfft(frames * np.hanning(self.hop), axis=-1)) ** 2
        freqs = np.fft.rfftfreq(self.hop, 1.0 / self.sample_rate)
        total = spec.sum(axis=-1) + _EPS
        low_db = 10.0 * np.log10(spec[..., freqs < _LOW_HZ].sum(axis=-1) / total + _EPS)
        high_db = 10.0 * np.log10(spec[..., freqs >= _HIGH_HZ].sum(axis=-1) / total + _EPS)
        return energy_db, zcr, low_db, high_db

    def _encode(self, audio: np.ndarray) -> np.ndarray:
        if not np.all(np.isfinite(audio)):
            raise AudioInputError("audio holds NaN or infinite samples")
        energy_db, zcr, low_db, high_db = self._features(audio.astype(np.float64))
        e_idx = _quantise(energy_db, _E_MIN_DB, _E_STEP_DB, _E_STEPS)
        z_idx = np.searchsorted(np.asarray(_ZCR_EDGES), zcr, side="right")
        level0 = e_idx * 4 + z_idx

        lo_idx = _quantise(low_db, _B_MIN_DB, _B_STEP_DB, _B_STEPS)
        hi_idx = _quantise(high_db, _B_MIN_DB, _B_STEP_DB, _B_STEPS)
        level1 = lo_idx * _B_STEPS + hi_idx

        # Residuals are taken against the *decoded* coarse value, as residual VQ does.
        lo_res = low_db - _centre(lo_idx, _B_MIN_DB, _B_STEP_DB)
        hi_res = high_db - _centre(hi_idx, _B_MIN_DB, _B_STEP_DB)
        lo_f = _quantise(lo_res, -_B_STEP_DB / 2, _B_FINE_STEP_DB, _B_FINE_STEPS)
        hi_f = _quantise(hi_res, -_B_STEP_DB / 2, _B_FINE_STEP_DB, _B_FINE_STEPS)
        level2 = lo_f * _B_FINE_STEPS + hi_f

        e_res = energy_db - _centre(e_idx, _E_MIN_DB, _E_STEP_DB)
        level3 = _quantise(e_res, -_E_STEP_DB / 2, _E_FINE_STEP_DB, _E_FINE_STEPS)
        return np.stack([level0, level1, level2, level3], axis=1).astype(np.int64)

    # ------------------------------------------------------------------ synthesis
    def decoded_features(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(energy dB, low-band dB, high-band dB) ``[B, T]`` implied by the first ``Q'`` levels."""
        q = codes.shape[1]
        e_idx, z_idx = codes[:, 0] // 4, codes[:, 0] % 4
        energy_db = _centre(e_idx, _E_MIN_DB, _E_STEP_DB)
        low_db, high_db = _TILT_FOR_ZCR[z_idx, 0], _TILT_FOR_ZCR[z_idx, 1]
        if q >= 2:
            low_db = _centre(codes[:, 1] // _B_STEPS, _B_MIN_DB, _B_STEP_DB)
            high_db = _centre(codes[:, 1] % _B_STEPS, _B_MIN_DB, _B_STEP_DB)
        if q >= 3:
            low_db = low_db + _centre(codes[:, 2] // _B_FINE_STEPS, -_B_STEP_DB / 2, _B_FINE_STEP_DB)
            high_db = high_db + _centre(codes[:, 2] % _B_FINE_STEPS, -_B_STEP_DB / 2, _B_FINE_STEP_DB)
        if q >= 4:
            energy_db = energy_db + _centre(codes[:, 3], -_E_STEP_DB / 2, _E_FINE_STEP_DB)
        return energy_db, low_db, high_db

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        b, _, t = codes.shape
        hop, win = self.hop, 2 * self.hop
        energy_db, low_db, high_db = self.decoded_features(codes)
        # Band power fractions; the mid band takes what is left (at least 1e-4 so it never vanishes).
        p_low = 10.0 ** (low_db / 10.0)
        p_high = 10.0 ** (high_db / 10.0)
        total = p_low + p_high
        scale = np.where(total > 0.9999, 0.9999 / np.maximum(total, _EPS), 1.0)
        p_low, p_high = p_low * scale, p_high * scale
        p_mid = np.maximum(1.0 - p_low - p_high, 1e-4)

        freqs = np.fft.rfftfreq(win, 1.0 / self.sample_rate)
        bands = [freqs < _LOW_HZ, (freqs >= _LOW_HZ) & (freqs < _HIGH_HZ), freqs >= _HIGH_HZ]
        mag = np.zeros((b, t, freqs.size))
        for mask, p in zip(bands, (p_low, p_mid, p_high)):
            # Spread each band's power evenly over its bins.
            mag[..., mask] = np.sqrt(p / mask.sum())[..., None]
        mag[..., 0] = 0.0  # no DC

        rng = np.random.default_rng(self.seed)
        phase = rng.uniform(0.0, 2.0 * np.pi, size=(b, t, freqs.size))
        grains = np.fft.irfft(mag * np.exp(1j * phase), n=win, axis=-1)
        target_rms = 10.0 ** (energy_db / 20.0)
        rms = np.sqrt(np.mean(grains**2, axis=-1)) + _EPS
        grains *= (target_rms / rms)[..., None]
        grains *= np.sin(np.pi * (np.arange(win) + 0.5) / win)

        # Grain t is centred on analysis frame t: it spans [t*hop - hop/2, t*hop + 3*hop/2).
        out = np.zeros((b, (t + 1) * hop))
        for k in range(2):  # non-overlapping halves of the 50%-overlapped grains add in two passes
            part = grains[:, k::2].reshape(b, -1)
            start = k * hop
            out[:, start : start + part.shape[1]] += part
        half = hop // 2
        return out[:, half : half + t * hop].astype(np.float32)


def _quantise(x: np.ndarray, lo: float, step: float, steps: int) -> np.ndarray:
    """Index of the ``step``-wide cell starting at ``lo`` that holds ``x`` (clipped to the grid)."""
    return np.clip(np.floor((x - lo) / step), 0, steps - 1).astype(np.int64)


def _centre(idx: np.ndarray, lo: float, step: float) -> np.ndarray:
    return lo + (np.asarray(idx, dtype=np.float64) + 0.5) * step


def make_fixture_codec(sample_rate: int = 16000, frame_rate: int = 100, seed: int = 0) -> Codec:
    """A fixture codec built in code; needs no artifact directory."""
    return FixtureCodec(sample_rate=sample_rate, frame_rate=frame_rate, seed=seed)


def write_fixture_artifact(directory: str | Path, **config: Any) -> Path:
    """Write a loadable fixture codec artifact (``config.yaml`` + ``SHA256SUMS``) to ``directory``.

    Tests point ``$AUDIOPD_CODECS_PATH`` at the parent and ``load_codec(directory.name)`` it.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    data = {"kind": "fixture", "format_version": FORMAT_VERSION, **config}
    # Round-trip through the dataclass: rejects unknown keys early and writes every default out.
    full = to_dict(from_dict(FixtureConfig, data, where=str(directory / "config.yaml")))
    (directory / "config.yaml").write_text(yaml.safe_dump(full, sort_keys=False))
    write_checksums(directory)
    return directory


def load_artifact(directory: Path, cfg: dict) -> Codec:
    """The registry's entry for kind ``fixture`` (``audiopd.codec.registry``)."""
    where = str(directory / "config.yaml")
    config = from_dict(FixtureConfig, cfg, where=where)
    require_format_version(config.format_version, FORMAT_VERSION, what="fixture codec", where=where)
    try:
        codec = FixtureCodec(config.sample_rate, config.frame_rate, config.seed, name=directory.name)
    except ValueError as exc:
        raise ArtifactError(f"{where}: {exc}") from None
    return codec
