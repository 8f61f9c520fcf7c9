"""The default offline codec: WORLD vocoder features, tokenised as prosody + residual VQ.

Why this shape. A naive joint k-means RVQ over all WORLD features starves pitch (measured here: 29 cents F0
error, WER 26.8% vs 18% for the originals). So pitch gets its own, scalar-quantised stream, and level 0 carries
exactly what the coarse decoding passes must fix (SoundStorm's coarse-to-fine split, Borsos et al. 2023):

* level 0 = ``f0_token * energy_bins + energy_token``: voicing + log-F0 on a uniform cents grid (token 0 is
  unvoiced) and a coarse frame energy (``c0`` of the mel-cepstrum). Timing, pitch and loudness are decided here.
* levels 1..Q-1 = residual VQ (Zeghidour et al. 2021, SoundStream) of one vector per frame: the mel-cepstrum
  (``c0`` minus level 0's energy centre) and band aperiodicities in dB. Euclidean distance on the mel-cepstrum is
  the mel-cepstral distortion, so k-means minimises the quantity we report.

Analysis and synthesis are WORLD (Morise et al. 2016) through ``pyworld``: F0 by Harvest or DIO+StoneMask,
spectral envelope by CheapTrick, aperiodicity by D4C.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

from audiopd.artifacts import require_format_version
from audiopd.codec.base import Codec
from audiopd.config import from_dict
from audiopd.errors import ArtifactError

FORMAT_VERSION = 1

# pyworld imports pkg_resources (deprecated); keep that warning off users' terminals.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)


@dataclass(frozen=True)
class WorldCodecConfig:
    name: str
    kind: str = "world"
    format_version: int = FORMAT_VERSION
    sample_rate: int = 16000
    frame_period_ms: float = 10.0
    fft_size: int = 1024
    f0_method: str = "harvest"  # "harvest" (robust, ~5x real time) or "dio" (DIO + StoneMask, ~100x)
    f0_floor: float = 60.0
    f0_ceil: float = 500.0
    f0_bins: int = 127  # voiced bins on a log grid; token 0 = unvoiced
    energy_bins: int = 8
    energy_min: float = -20.0  # c0 range mapped onto the energy bins (values outside are clamped)
    energy_max: float = -6.0
    mcep_dims: int = 40
    ap_band_edges_hz: tuple[float, ...] = (0.0, 1000.0, 2000.0, 4000.0, 6000.0, 8000.0)
    ap_weight: float = 0.05  # scale of aperiodicity dB inside the VQ vector (mcep units ~ 0.05 x dB)
    # Decode-time 3-tap smoothing of the dequantised envelope, weights (a, 1 - 2a, a); 0 = off, 1/3 = a box.
    smooth: float = 0.0
    num_codebooks: int = 8
    cardinality: int = 1024
    codebooks_file: str = "codebooks.safetensors"
    description: str = ""

    def __post_init__(self) -> None:
        require_format_version(self.format_version, FORMAT_VERSION, what="world codec", where=repr(self.name))
        if (self.f0_bins + 1) * self.energy_bins > self.cardinality:
            raise ArtifactError("world codec: (f0_bins + 1) * energy_bins exceeds the cardinality")
        if not 0.0 <= self.smooth <= 1.0 / 3.0:
            # Beyond 1/3 the neighbours would outweigh the frame itself.
            raise ArtifactError(f"world codec: smooth must lie in [0, 1/3], got {self.smooth}")

    @property
    def hop(self) -> int:
        return int(round(self.sample_rate * self.frame_period_ms / 1000.0))

    @property
    def vq_dims(self) -> int:
        return self.mcep_dims + len(self.ap_band_edges_hz) - 1


@dataclass
class WorldFeatures:
    """Continuous per-frame features of one utterance (T frames)."""

    f0: np.ndarray  # [T] Hz, 0 = unvoiced
    mcep: np.ndarray  # [T, mcep_dims]
    ap_db: np.ndarray  # [T, bands] aperiodicity in dB (<= 0)


# ----------------------------------------------------------------------------------------------- analysis


def analyze(audio: np.ndarray, cfg: WorldCodecConfig) -> WorldFeatures:
    """WORLD analysis of one mono signal at ``cfg.sample_rate`` -> ``ceil(S / hop)`` frames."""
    import pyworld as pw

    x = np.ascontiguousarray(audio, dtype=np.float64)
    fs, fp = cfg.sample_rate, cfg.frame_period_ms
    if cfg.f0_method == "harvest":
        f0, t = pw.harvest(x, fs, f0_floor=cfg.f0_floor, f0_ceil=cfg.f0_ceil, frame_period=fp)
    elif cfg.f0_method == "dio":
        f0, t = pw.dio(x, fs, f0_floor=cfg.f0_floor, f0_ceil=cfg.f0_ceil, frame_period=fp)
        f0 = pw.stonemask(x, f0, t, fs)
    else:
        raise ArtifactError(f"world codec: unknown f0_method {cfg.f0_method!r}")
    sp = pw.cheaptrick(x, f0, t, fs, fft_size=cfg.fft_size)
    ap = pw.d4c(x, f0, t, fs, fft_size=cfg.fft_size)
    mcep = pw.code_spectral_envelope(sp, fs, cfg.mcep_dims)
    ap_db = _band_aperiodicity(ap, cfg)
    n = max(1, int(np.ceil(len(x) / cfg.hop)))
    return WorldFeatures(f0=_fit_len(f0, n), mcep=_fit_len(mcep, n), ap_db=_fit_len(ap_db, n))


def _fit_len(a: np.ndarray, n: int) -> np.ndarray:
    if len(a) >= n:
        return np.ascontiguousarray(a[:n])
    pad = np.repeat(a[-1:], n - len(a), axis=0)
    return np.concatenate([a, pad], axis=0)


def _band_aperiodicity(ap: np.ndarray, cfg: WorldCodecConfig) -> np.ndarray:
    freqs = np.linspace(0, cfg.sample_rate / 2, ap.shape[1])
    db = 20.0 * np.log10(np.clip(ap, 1e-3, 1.0))
    edges = cfg.ap_band_edges_hz
    bands = [db[:, (freqs >= lo) & (freqs <= hi)].mean(axis=1) for lo, hi in zip(edges[:-1], edges[1:])]
    return np.stack(bands, axis=1)


def _interp_taps(cfg: WorldCodecConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per FFT bin, the two band centres it lies between and the weight of the upper one (0 beyond the outer
    centres, where the interpolation is flat): piecewise-linear interpolation as two gathers and a blend.

    Not a matrix product: numpy's matmul runs on OpenBLAS, whose worker threads keep spinning after the call
    and took the cores from the next synthesis's torch passes (measured: a parallel decode right after one
    [T x 5] @ [5 x 513] product took 117 ms instead of 81 ms). Per-row np.interp was slower still.
    """
    freqs = np.linspace(0, cfg.sample_rate / 2, cfg.fft_size // 2 + 1)
    edges = np.asarray(cfg.ap_band_edges_hz, dtype=np.float64)
    centres = 0.5 * (edges[:-1] + edges[1:])
    lo = np.clip(np.searchsorted(centres, freqs, side="right") - 1, 0, len(centres) - 1)
    hi = np.minimum(lo + 1, len(centres) - 1)
    span = centres[hi] - centres[lo]
    w = np.where(span > 0, (freqs - centres[lo]) / np.where(span > 0, span, 1.0), 0.0)
    return lo, hi, np.clip(w, 0.0, 1.0)


def _full_aperiodicity(ap_db: np.ndarray, cfg: WorldCodecConfig) -> np.ndarray:
    """Band dB values -> per-bin linear aperiodicity, piecewise linear in dB between band centres."""
    lo, hi, w = _interp_taps(cfg)
    a = np.asarray(ap_db, dtype=np.float64)
    full_db = a[:, lo] * (1.0 - w) + a[:, hi] * w
    # 10 ** (dB / 20) as one exp: the same values, without numpy's slower general power.
    # C order: pyworld's synthesis takes nothing else, and the gathers may give a Fortran-ordered array.
    return np.ascontiguousarray(np.clip(np.exp(np.minimum(full_db, 0.0) * (np.log(10.0) / 20.0)), 1e-3, 1.0))


# ------------------------------------------------------------------------------------- level 0 (prosody)


def f0_grid(cfg: WorldCodecConfig) -> np.ndarray:
    """Centres (Hz) of the voiced F0 bins 1..f0_bins, uniform in cents between floor and ceiling."""
    return np.exp(np.linspace(np.log(cfg.f0_floor), np.log(cfg.f0_ceil), cfg.f0_bins))


def energy_grid(cfg: WorldCodecConfig) -> np.ndarray:
    return np.linspace(cfg.energy_min, cfg.energy_max, cfg.energy_bins)


def quantize_prosody(f0: np.ndarray, c0: np.ndarray, cfg: WorldCodecConfig) -> np.ndarray:
    grid = np.log(f0_grid(cfg))
    voiced = f0 > 0
    f0_tok = np.zeros(len(f0), dtype=np.int64)
    if voiced.any():
        lf = np.log(np.clip(f0[voiced], cfg.f0_floor, cfg.f0_ceil))
        f0_tok[voiced] = 1 + np.abs(lf[:, None] - grid[None, :]).argmin(axis=1)
    e = energy_grid(cfg)
    e_tok = np.abs(np.clip(c0, e[0], e[-1])[:, None] - e[None, :]).argmin(axis=1)
    return f0_tok * cfg.energy_bins + e_tok


def dequantize_prosody(tok: np.ndarray, cfg: WorldCodecConfig) -> tuple[np.ndarray, np.ndarray]:
    """Level-0 tokens -> (F0 in Hz with 0 for unvoiced, energy centre for c0)."""
    f0_tok = np.clip(tok // cfg.energy_bins, 0, cfg.f0_bins)
    e_tok = tok % cfg.energy_bins
    f0 = np.where(f0_tok > 0, f0_grid(cfg)[np.maximum(f0_tok - 1, 0)], 0.0)
    return f0, energy_grid(cfg)[e_tok]


# -------------------------------------------------------------------------------- levels 1.. (spectral RVQ)


def vq_vectors(feats: WorldFeatures, c0_centre: np.ndarray, cfg: WorldCodecConfig) -> np.ndarray:
    """The vector that the residual VQ quantises: [mcep with c0 relative to level 0, weighted ap dB]."""
    m = feats.mcep.copy()
    m[:, 0] -= c0_centre
    return np.concatenate([m, cfg.ap_weight * feats.ap_db], axis=1).astype(np.float32)


def rvq_encode(v: np.ndarray, codebooks: np.ndarray) -> np.ndarray:
    """Greedy residual VQ: ``v [T, D]`` with ``codebooks [L, C, D]`` -> codes ``[L, T]``."""
    residual = v.astype(np.float32).copy()
    codes = np.empty((codebooks.shape[0], len(v)), dtype=np.int64)
    for level, book in enumerate(codebooks):
        idx = nearest(residual, book)
        codes[level] = idx
        residual -= book[idx]
    return codes


def nearest(x: np.ndarray, book: np.ndarray, chunk: int = 16384) -> np.ndarray:
    """Index of the nearest codeword for every row of ``x`` (squared Euclidean, chunked for memory)."""
    b2 = (book * book).sum(axis=1)
    out = np.empty(len(x), dtype=np.int64)
    for s in range(0, len(x), chunk):
        xs = x[s : s + chunk]
        out[s : s + chunk] = (b2[None, :] - 2.0 * xs @ book.T).argmin(axis=1)
    return out


# Config fields that only steer analysis, post-process decoded features (smoothing) or name things: changing
# them leaves the tokens' meaning alone.
_ANALYSIS_ONLY = frozenset({"name", "description", "f0_method", "smooth", "codebooks_file"})


def token_fingerprint(cfg: WorldCodecConfig, codebooks: np.ndarray) -> str:
    """SHA-256 over the decode-side config (JSON, sorted keys) and the float32 codebooks."""
    fields = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in _ANALYSIS_ONLY}
    h = hashlib.sha256(json.dumps(fields, sort_keys=True, default=list).encode())
    h.update(np.ascontiguousarray(codebooks, dtype=np.float32).tobytes())
    return h.hexdigest()


class WorldCodec(Codec):
    """WORLD features <-> tokens. See the module docstring for the token layout."""

    # numpy + pyworld, whose C synthesis releases the GIL (two threads decode two chunks in half the time here).
    concurrent_decode = True
    decoders = ("world",)  # pyworld's synthesis, the one decoder
    decoder = "world"

    def __init__(self, cfg: WorldCodecConfig, codebooks: np.ndarray) -> None:
        expected = (cfg.num_codebooks - 1, cfg.cardinality, cfg.vq_dims)
        if codebooks.shape != expected:
            raise ArtifactError(f"world codec {cfg.name!r}: codebooks {codebooks.shape}, expected {expected}")
        self.cfg = cfg
        self.codebooks = codebooks.astype(np.float32)
        self.token_fingerprint = token_fingerprint(cfg, self.codebooks)
        self.name = cfg.name
        self.sample_rate = cfg.sample_rate
        self.frame_rate = 1000.0 / cfg.frame_period_ms
        self.num_codebooks = cfg.num_codebooks
        self.cardinality = cfg.cardinality

    def num_frames(self, num_samples: int) -> int:
        return max(1, int(np.ceil(num_samples / self.cfg.hop)))

    # -- encode
    def encode_features(self, feats: WorldFeatures) -> np.ndarray:
        """Continuous features -> codes ``[Q, T]`` (exposed so the corpus stage can reuse its analysis)."""
        tok0 = quantize_prosody(feats.f0, feats.mcep[:, 0], self.cfg)
        _, c0c = dequantize_prosody(tok0, self.cfg)
        rest = rvq_encode(vq_vectors(feats, c0c, self.cfg), self.codebooks)
        return np.concatenate([tok0[None], rest], axis=0)

    def _encode(self, audio: np.ndarray) -> np.ndarray:
        return np.stack([self.encode_features(analyze(x, self.cfg)) for x in audio], axis=0)

    # -- decode
    def decode_features(self, codes: np.ndarray) -> WorldFeatures:
        """Codes ``[Q', T]`` -> continuous features (levels above Q' contribute nothing)."""
        cfg = self.cfg
        f0, c0c = dequantize_prosody(codes[0], cfg)
        v = np.zeros((codes.shape[1], cfg.vq_dims), dtype=np.float64)
        for level in range(1, codes.shape[0]):
            v += self.codebooks[level - 1][codes[level]]
        if cfg.smooth > 0 and len(v) > 2:
            # Quantisation noise is frame-independent, speech envelopes are not: a 3-tap smoothing
            # removes frame-to-frame jitter that sounds like roughness. A voice's fine levels are predicted
            # per frame, so they jitter more than analysed ones; the shipped box (1/3) lowered held-out WER
            # (codecs/world16k/README.md, "Decode-time smoothing").
            a = cfg.smooth
            v[1:-1] = (1 - 2 * a) * v[1:-1] + a * (v[:-2] + v[2:])
        mcep = v[:, : cfg.mcep_dims].copy()
        mcep[:, 0] += c0c
        ap_db = v[:, cfg.mcep_dims :] / cfg.ap_weight
        return WorldFeatures(f0=f0, mcep=mcep, ap_db=ap_db)

    def synthesize(self, feats: WorldFeatures) -> np.ndarray:
        import pyworld as pw

        cfg = self.cfg
        sp = pw.decode_spectral_envelope(np.ascontiguousarray(feats.mcep), cfg.sample_rate, cfg.fft_size)
        ap = _full_aperiodicity(np.minimum(feats.ap_db, 0.0), cfg)
        f0 = np.ascontiguousarray(feats.f0, dtype=np.float64)
        y = pw.synthesize(f0, sp, ap, cfg.sample_rate, cfg.frame_period_ms)
        n = len(f0) * cfg.hop
        y = y[:n] if len(y) >= n else np.pad(y, (0, n - len(y)))
        return y.astype(np.float32)

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        return np.stack([self.synthesize(self.decode_features(c)) for c in codes], axis=0)

    def _decode_split(self, codes: np.ndarray, parts: int) -> np.ndarray:
        feats = self.decode_features(codes)
        cuts = split_points(feats.mcep[:, 0], parts)
        if not cuts:
            return self.synthesize(feats)
        return synthesize_pieces(self.synthesize, feats, cuts, self.cfg.hop)


# ------------------------------------------------------------------------------ one item on several threads

# WORLD synthesis is a quarter of a parallel decoding's wall time, and for a single item it ran on one core
# while the other idled. An item is cut at quiet frames into pieces synthesised side by side (pyworld releases
# the GIL) and cross-faded. WORLD itself is frame-local except for the pulse train's phase, which restarts in
# each piece (a constant shift of the pulse positions) and the aperiodic noise's realisation.
MIN_PIECE_FRAMES = 100  # 1 s: below that a thread's start-up and the overlap eat the gain
SPLIT_OVERLAP = 4  # frames synthesised past each cut on both sides
SPLIT_FADE = 2  # frames each side of a cut over which the pieces cross-fade (inside the overlap, away from
# the pieces' own edges)


def split_points(energy: np.ndarray, parts: int) -> list[int]:
    """Frames at which to cut ``len(energy)`` frames into up to ``parts`` pieces: around each even share, the
    quietest frame (lowest 5-frame mean of ``energy``, c0) within a quarter share; [] for short items."""
    t = len(energy)
    parts = min(parts, t // MIN_PIECE_FRAMES)
    if parts < 2:
        return []
    smooth = np.convolve(energy, np.ones(5) / 5.0, mode="same")
    share = t / parts
    cuts = []
    for k in range(1, parts):
        centre = round(k * share)
        lo, hi = centre - int(share / 4), centre + int(share / 4)
        cuts.append(lo + int(np.argmin(smooth[lo:hi])))
    return cuts


def synthesize_pieces(synthesize, feats: WorldFeatures, cuts: list[int], hop: int) -> np.ndarray:
    """``synthesize`` of ``feats`` cut at frames ``cuts``, the pieces on one thread each, cross-faded."""
    from concurrent.futures import ThreadPoolExecutor

    t = len(feats.f0)
    bounds = [0, *cuts, t]
    spans = [(max(0, a - SPLIT_OVERLAP), min(t, b + SPLIT_OVERLAP)) for a, b in pairwise(bounds)]

    def piece(span: tuple[int, int]) -> np.ndarray:
        a, b = span
        return synthesize(WorldFeatures(f0=feats.f0[a:b], mcep=feats.mcep[a:b], ap_db=feats.ap_db[a:b]))

    with ThreadPoolExecutor(max_workers=len(spans)) as pool:
        pieces = list(pool.map(piece, spans))
    out = np.zeros(t * hop, dtype=np.float32)
    n_fade = 2 * SPLIT_FADE * hop
    # sin^2 / cos^2 weights sum to one: a piece and its neighbour agree except for pulse phase and noise.
    ramp = np.sin(0.5 * np.pi * (np.arange(n_fade) + 0.5) / n_fade).astype(np.float32) ** 2
    for i, ((a, _), y) in enumerate(zip(spans, pieces)):
        w = np.ones(len(y), dtype=np.float32)
        if i > 0:  # fade in across cuts[i - 1]
            start = (cuts[i - 1] - SPLIT_FADE) * hop - a * hop
            w[:start] = 0.0
            w[start : start + n_fade] = ramp
        if i < len(cuts):  # fade out across cuts[i]
            start = (cuts[i] - SPLIT_FADE) * hop - a * hop
            w[start : start + n_fade] *= ramp[::-1]
            w[start + n_fade :] = 0.0
        out[a * hop : a * hop + len(y)] += w * y
    return out


def codec_from_dir(directory: Path, cfg_dict: dict) -> WorldCodec:
    from safetensors.numpy import load_file

    cfg = from_dict(WorldCodecConfig, cfg_dict, where=f"{directory}/config.yaml")
    path = directory / cfg.codebooks_file
    if not path.is_file():
        raise ArtifactError(f"world codec {cfg.name!r}: {path} is missing")
    tensors = load_file(str(path))
    if "codebooks" not in tensors:
        raise ArtifactError(f"{path}: no 'codebooks' tensor")
    return WorldCodec(cfg, tensors["codebooks"])


def load_artifact(directory: Path, cfg_dict: dict) -> WorldCodec:
    """The registry's entry for kind ``world`` (``audiopd.codec.registry``)."""
    return codec_from_dir(directory, cfg_dict)


def replace_config(cfg: WorldCodecConfig, **changes: object) -> WorldCodecConfig:
    return dataclasses.replace(cfg, **changes)
