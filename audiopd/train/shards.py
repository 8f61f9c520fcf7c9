"""Token shards: many utterances' codes, phonemes and durations in one safetensors file.

Layout (``format_version`` "1"): tensors ``codes`` int16 [Q, total_T], ``phonemes`` int32 [total_L],
``durations`` int32 [total_L] (frames per phoneme token, summing to each utterance's T),
``frame_offsets`` int64 [N+1], ``phone_offsets`` int64 [N+1], ``speakers`` int32 [N]; string
metadata: format_version, codec, sample_rate, frame_rate, num_codebooks, cardinality,
inventory_version, voices (JSON list, speaker id = index), utt_ids (JSON list).

Concatenated arrays + offsets keep a shard to a handful of tensors (fast to load, no per-utterance
overhead) while int16 codes halve the size (cardinality <= 32768).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

from audiopd.errors import ArtifactError

SHARD_FORMAT_VERSION = "1"
SUPPORTED_SHARD_VERSIONS = ("1",)


@dataclass(frozen=True)
class ShardMeta:
    codec: str
    sample_rate: int
    frame_rate: float
    num_codebooks: int
    cardinality: int
    inventory_version: str
    voices: tuple[str, ...]

    def compatible(self, other: ShardMeta) -> bool:
        return self == other


@dataclass(frozen=True)
class Utterance:
    utt_id: str
    speaker: int
    phonemes: np.ndarray  # int [L]
    durations: np.ndarray  # int [L], sums to T
    codes: np.ndarray  # int [Q, T]

    @property
    def num_frames(self) -> int:
        return int(self.codes.shape[1])


def _check(u: Utterance, meta: ShardMeta) -> None:
    where = f"utterance {u.utt_id!r}"
    if u.codes.ndim != 2 or u.codes.shape[0] != meta.num_codebooks:
        raise ValueError(f"{where}: codes must be [Q={meta.num_codebooks}, T], got {tuple(u.codes.shape)}")
    if u.codes.shape[1] == 0:
        raise ValueError(f"{where}: no frames")
    if u.codes.min() < 0 or u.codes.max() >= meta.cardinality:
        raise ValueError(f"{where}: codes out of range [0, {meta.cardinality})")
    if u.phonemes.ndim != 1 or u.phonemes.shape != u.durations.shape or u.phonemes.size == 0:
        raise ValueError(f"{where}: phonemes and durations must be equal-length non-empty 1-D arrays")
    if u.durations.min() < 0 or int(u.durations.sum()) != u.codes.shape[1]:
        raise ValueError(
            f"{where}: durations must be >= 0 and sum to T={u.codes.shape[1]} (got {int(u.durations.sum())})"
        )
    if not 0 <= u.speaker < len(meta.voices):
        raise ValueError(f"{where}: speaker {u.speaker} not in voices {list(meta.voices)}")


def write_shard(path: str | Path, utterances: Iterable[Utterance], meta: ShardMeta) -> Path:
    """Write one shard atomically; validates every utterance first (a bad shard never lands on disk)."""
    if meta.cardinality > 32768:
        raise ValueError("int16 codes need cardinality <= 32768")
    utts = list(utterances)
    if not utts:
        raise ValueError("a shard needs at least one utterance")
    for u in utts:
        _check(u, meta)
    frame_offsets = np.cumsum([0] + [u.num_frames for u in utts]).astype(np.int64)
    phone_offsets = np.cumsum([0] + [len(u.phonemes) for u in utts]).astype(np.int64)
    # ascontiguousarray: safetensors writes raw buffers, and concatenating Fortran-ordered
    # arrays (e.g. a transposed [T, Q] array) yields a Fortran-ordered result.
    tensors = {
        "codes": np.concatenate([u.codes for u in utts], axis=1).astype(np.int16),
        "phonemes": np.concatenate([u.phonemes for u in utts]).astype(np.int32),
        "durations": np.concatenate([u.durations for u in utts]).astype(np.int32),
        "frame_offsets": frame_offsets,
        "phone_offsets": phone_offsets,
        "speakers": np.array([u.speaker for u in utts], dtype=np.int32),
    }
    tensors = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
    metadata = {
        "format_version": SHARD_FORMAT_VERSION,
        "codec": meta.codec,
        "sample_rate": str(meta.sample_rate),
        "frame_rate": repr(float(meta.frame_rate)),
        "num_codebooks": str(meta.num_codebooks),
        "cardinality": str(meta.cardinality),
        "inventory_version": meta.inventory_version,
        "voices": json.dumps(list(meta.voices)),
        "utt_ids": json.dumps([u.utt_id for u in utts]),
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    save_file(tensors, str(tmp), metadata=metadata)
    os.replace(tmp, path)
    return path


class Shard:
    """A shard loaded into memory (shards are small: ~minutes of audio at 100 frames/s x Q int16)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ArtifactError(f"shard not found: {self.path}")
        try:
            with safe_open(str(self.path), framework="numpy") as f:
                md = f.metadata() or {}
                arrays = {k: f.get_tensor(k) for k in f.keys()}
        except ArtifactError:
            raise
        except Exception as exc:  # safetensors raises several types for a non-safetensors file
            raise ArtifactError(f"{self.path}: not a readable shard ({exc.__class__.__name__}: {exc})") from None
        version = md.get("format_version")
        if version not in SUPPORTED_SHARD_VERSIONS:
            raise ArtifactError(f"{self.path}: shard format_version {version!r} not supported")
        needed = ("codes", "phonemes", "durations", "frame_offsets", "phone_offsets", "speakers")
        missing = [k for k in needed if k not in arrays]
        if missing:
            raise ArtifactError(f"{self.path}: missing tensor(s) {', '.join(missing)}")
        try:
            self.meta = ShardMeta(
                codec=md["codec"],
                sample_rate=int(md["sample_rate"]),
                frame_rate=float(md["frame_rate"]),
                num_codebooks=int(md["num_codebooks"]),
                cardinality=int(md["cardinality"]),
                inventory_version=md["inventory_version"],
                voices=tuple(json.loads(md["voices"])),
            )
            self.utt_ids: list[str] = json.loads(md["utt_ids"])
        except (KeyError, ValueError) as exc:
            raise ArtifactError(f"{self.path}: bad shard metadata ({exc})") from None
        self.codes = arrays["codes"]
        self.phonemes = arrays["phonemes"]
        self.durations = arrays["durations"]
        self.frame_offsets = arrays["frame_offsets"]
        self.phone_offsets = arrays["phone_offsets"]
        self.speakers = arrays["speakers"]
        n = len(self.speakers)
        if len(self.utt_ids) != n or len(self.frame_offsets) != n + 1 or len(self.phone_offsets) != n + 1:
            raise ArtifactError(f"{self.path}: inconsistent utterance counts")

    def __len__(self) -> int:
        return len(self.speakers)

    def num_frames(self, i: int) -> int:
        return int(self.frame_offsets[i + 1] - self.frame_offsets[i])

    def frame_lengths(self) -> np.ndarray:
        return np.diff(self.frame_offsets)

    def utterance(self, i: int) -> Utterance:
        f0, f1 = self.frame_offsets[i], self.frame_offsets[i + 1]
        p0, p1 = self.phone_offsets[i], self.phone_offsets[i + 1]
        return Utterance(
            utt_id=self.utt_ids[i],
            speaker=int(self.speakers[i]),
            phonemes=self.phonemes[p0:p1].astype(np.int64),
            durations=self.durations[p0:p1].astype(np.int64),
            codes=self.codes[:, f0:f1].astype(np.int64),
        )


def find_shards(source: str | Path | Sequence[str | Path]) -> list[Path]:
    """A directory (all ``*.safetensors`` inside, sorted), a file, or a list of either."""
    if isinstance(source, (str, Path)):
        source = [source]
    out: list[Path] = []
    for s in source:
        p = Path(s)
        if p.is_dir():
            out.extend(sorted(p.glob("*.safetensors")))
        elif p.is_file():
            out.append(p)
        else:
            raise ArtifactError(f"no shard file or directory at {p}")
    if not out:
        raise ArtifactError(f"no *.safetensors shards found in {', '.join(str(s) for s in source)}")
    return out
