"""The model configuration: one frozen dataclass for every network in a voice.

Data-dependent sizes (``num_symbols``, ``num_codebooks``, ``cardinality``, ``num_speakers``) default
to 0, meaning "fill in from the data": the trainer takes them from the shards' metadata and the text
frontend, so a training YAML only holds architecture choices.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from audiopd.errors import ArtifactError


@dataclass(frozen=True)
class ModelConfig:
    # Data-dependent sizes (0 = filled in by the trainer from shards / text frontend).
    num_symbols: int = 0
    num_codebooks: int = 0
    cardinality: int = 0
    num_speakers: int = 0
    # Shared width. Defaults follow the brief (d 256, 4 heads); SoundStorm uses 12 layers x 1024,
    # far beyond a 2-core CPU budget.
    d_model: int = 256
    n_heads: int = 4
    ff_mult: int = 4
    dropout: float = 0.1
    # Phoneme encoder (FastSpeech 2 style text encoder, transformer layers).
    encoder_layers: int = 4
    # Duration predictor: FastSpeech 2 (Ren et al. 2021) uses 2 conv layers, kernel 3.
    duration_channels: int = 256
    duration_kernel: int = 3
    # Masked (bidirectional) codec transformer and serial (causal) level-0 transformer.
    masked_layers: int = 6
    serial_layers: int = 6
    # Longest sequence the rotary tables are precomputed for; longer inputs extend them on the fly.
    max_frames: int = 4096

    def validate(self) -> None:
        for name in ("num_symbols", "num_codebooks", "cardinality", "num_speakers"):
            if getattr(self, name) <= 0:
                raise ArtifactError(f"model config: {name} must be > 0 (got {getattr(self, name)})")
        if self.d_model % self.n_heads:
            raise ArtifactError(f"model config: d_model {self.d_model} not divisible by n_heads {self.n_heads}")
        if (self.d_model // self.n_heads) % 2:
            raise ArtifactError("model config: head dimension must be even (rotary embeddings)")
        if self.num_codebooks < 1 or self.encoder_layers < 0 or self.masked_layers < 1 or self.serial_layers < 1:
            raise ArtifactError("model config: layer counts and num_codebooks must be positive")

    def with_data(self, *, num_symbols: int, num_codebooks: int, cardinality: int, num_speakers: int) -> ModelConfig:
        """Fill in (or check) the data-dependent sizes."""
        given = {
            "num_symbols": num_symbols,
            "num_codebooks": num_codebooks,
            "cardinality": cardinality,
            "num_speakers": num_speakers,
        }
        updates = {}
        for name, value in given.items():
            mine = getattr(self, name)
            if mine == 0:
                updates[name] = value
            elif name == "num_symbols" or name == "num_speakers":
                # A config may reserve room for more symbols/speakers than the data uses.
                if mine < value:
                    raise ArtifactError(f"model config: {name}={mine} but the data needs {value}")
            elif mine != value:
                raise ArtifactError(f"model config: {name}={mine} but the data has {value}")
        return dataclasses.replace(self, **updates)
