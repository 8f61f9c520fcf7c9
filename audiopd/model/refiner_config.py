"""A voice's mel refiner artifact description (refiner.yaml): torch-free, so that ``audiopd.model.refiner`` (torch)
and the NumPy runtime (``audiopd.lite.voice``) read the same file with the same checks. The refiner itself and its
file layout are described in ``audiopd.model.refiner``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from audiopd.artifacts import require_format_version
from audiopd.config import from_dict
from audiopd.errors import ArtifactError

REFINER_FORMAT_VERSION = 1
REFINER_CONFIG = "refiner.yaml"
REFINER_WEIGHTS = "refiner.safetensors"


@dataclass(frozen=True)
class RefinerConfig:
    format_version: int = REFINER_FORMAT_VERSION
    kind: str = "mel_refiner"
    n_mels: int = 80
    dim: int = 192
    layers: int = 4
    kernel: int = 5
    # The voice's speakers in its own order (one learnt bias row each) and the digest of the weights whose
    # predictions the refiner learnt to correct.
    voices: tuple[str, ...] = field(default_factory=tuple)
    voice_sha256: str = ""
    # What made it (steps, pairs, dev L1 before and after): a record, never read back.
    training: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_format_version(self.format_version, REFINER_FORMAT_VERSION, what="mel refiner", where=REFINER_CONFIG)
        if self.kind != "mel_refiner":
            raise ArtifactError(f"{REFINER_CONFIG}: kind must be 'mel_refiner', got {self.kind!r}")
        if not (1 <= self.n_mels <= 512 and 8 <= self.dim <= 1024 and 1 <= self.layers <= 16
                and self.kernel in (1, 3, 5, 7, 9)):
            raise ArtifactError(f"{REFINER_CONFIG}: n_mels {self.n_mels}, dim {self.dim}, layers {self.layers}, "
                                f"kernel {self.kernel} out of range (kernel odd, <= 9)")
        if not self.voices:
            raise ArtifactError(f"{REFINER_CONFIG}: voices must name the voice's speakers")


def read_refiner_config(directory: str | Path, *, voices: tuple[str, ...] | None, sums: dict[str, str],
                        own_weights: bool = True) -> RefinerConfig | None:
    """The refiner.yaml of voice ``directory``, checked as every loader needs (None when the voice has none).
    ``sums``: file name -> sha256 from its SHA256SUMS (already verified); both refiner files must be listed, its
    speakers must be ``voices`` (None: any, for a starting point) and, with ``own_weights``, its ``voice_sha256`` the
    listed digest of model.safetensors (without: a starting point for training another voice's)."""
    directory = Path(directory)
    path = directory / REFINER_CONFIG
    if not path.is_file():
        return None
    for name in (REFINER_CONFIG, REFINER_WEIGHTS):
        if name not in sums:
            raise ArtifactError(f"{directory}: {name} is not listed in SHA256SUMS (rewrite it with "
                                "audiopd.artifacts.write_checksums)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ArtifactError(f"{path} is not valid YAML: {exc}") from None
    cfg = from_dict(RefinerConfig, data if isinstance(data, dict) else {}, where=str(path))
    if voices is not None and tuple(cfg.voices) != tuple(voices):
        raise ArtifactError(f"{path}: refiner speakers {list(cfg.voices)}, the voice's {list(voices)}")
    digest = sums.get("model.safetensors", "")
    if own_weights and cfg.voice_sha256 != digest:
        raise ArtifactError(f"{path}: the refiner learnt the mistakes of other weights (voice_sha256 "
                            f"{cfg.voice_sha256[:12]}, model.safetensors {digest[:12]}); retrain it "
                            "(python -m audiopd.train.refiner)")
    return cfg


def refiner_input(mel, cfg: RefinerConfig, speaker: int) -> np.ndarray:
    """A refiner's input checked (log-mel [T, cfg.n_mels], ``speaker`` an index of ``cfg.voices``), as float32."""
    m = np.asarray(mel, dtype=np.float32)
    if m.ndim != 2 or m.shape[1] != cfg.n_mels:
        raise ValueError(f"expected a log-mel [T, {cfg.n_mels}], got {m.shape}")
    if not 0 <= speaker < len(cfg.voices):
        raise ValueError(f"speaker {speaker} out of range (voices: {', '.join(cfg.voices)})")
    return m
