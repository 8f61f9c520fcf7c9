"""Meta's EnCodec 24 kHz (Défossez et al. 2022, "High Fidelity Neural Audio Compression") as a ``Codec``.

Kind ``"encodec"``. The ``encodec`` package (which imports torchaudio) is an optional dependency,
imported only when this adapter is used. EnCodec's 24 kHz model runs at 75 frames/s (hop 320) with
a residual VQ of up to 32 codebooks of 1024 entries, each worth 0.75 kbps; the target bandwidth
picks how many levels the encoder emits (1.5 -> 2, 3 -> 4, 6 -> 8, 12 -> 16, 24 -> 32).

Weights are never downloaded. They are looked up, in order, at:

1. ``checkpoint`` in the artifact's ``config.yaml`` (relative paths are relative to the artifact);
2. ``$AUDIOPD_ENCODEC_CHECKPOINT``;
3. torch hub's cache, ``torch.hub.get_dir()/checkpoints/encodec_24khz-d7cc33bc.th``, where
   ``encodec`` itself would have saved it.

A configured location that holds no file is an error naming that file (no silent fall-through).
The checkpoint is a torch pickle published by Meta; it is read with ``torch.load(weights_only=True)``
(tensors only, no code execution) after checking that its SHA-256 starts with the ``d7cc33bc``
that the upstream file name carries, so a truncated download fails loudly instead of producing noise.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from audiopd.artifacts import require_format_version
from audiopd.codec.base import Codec
from audiopd.config import from_dict
from audiopd.errors import ArtifactError

FORMAT_VERSION = 1
SAMPLE_RATE = 24000
FRAME_RATE = 75
HOP = SAMPLE_RATE // FRAME_RATE
CARDINALITY = 1024
CHECKPOINT_NAME = "encodec_24khz-d7cc33bc.th"
CHECKPOINT_SHA256_PREFIX = "d7cc33bc"
CHECKPOINT_URL = "https://dl.fbaipublicfiles.com/encodec/v0/" + CHECKPOINT_NAME
ENV_CHECKPOINT = "AUDIOPD_ENCODEC_CHECKPOINT"

# kbps -> number of RVQ levels: each level costs log2(1024) bits x 75 frames/s = 0.75 kbps.
BANDWIDTH_TO_Q: dict[float, int] = {1.5: 2, 3.0: 4, 6.0: 8, 12.0: 16, 24.0: 32}


@dataclasses.dataclass(frozen=True)
class EncodecConfig:
    """``config.yaml`` of an EnCodec codec artifact (strict keys)."""

    kind: str
    format_version: int
    bandwidth: float = 6.0
    checkpoint: str | None = None


def bandwidth_to_levels(bandwidth: float) -> int:
    """Number of codebooks EnCodec 24 kHz emits at ``bandwidth`` kbps; ``ValueError`` if unsupported."""
    try:
        return BANDWIDTH_TO_Q[float(bandwidth)]
    except (KeyError, TypeError, ValueError):
        known = ", ".join(f"{b:g}" for b in BANDWIDTH_TO_Q)
        raise ValueError(f"unsupported EnCodec bandwidth {bandwidth!r} kbps (choose one of {known})") from None


def _import_encodec() -> Any:
    try:
        import encodec  # noqa: PLC0415  (optional dependency, imported on use)
    except ImportError as exc:
        raise ArtifactError(
            f"the EnCodec codec needs the optional packages encodec and torchaudio "
            f"(pip install 'audiopd[encodec]'): {exc}"
        ) from None
    return encodec


def build_model(state_dict: dict | None = None) -> Any:
    """EnCodec 24 kHz network; randomly initialised unless ``state_dict`` is given. Never downloads.

    ``pretrained=False`` builds the architecture only (``encodec`` fetches weights solely when
    ``pretrained=True``), which is what tests use.
    """
    encodec = _import_encodec()
    with warnings.catch_warnings():
        # encodec 0.1.1 uses the old torch.nn.utils.weight_norm, deprecated but still correct.
        warnings.simplefilter("ignore", FutureWarning)
        model = encodec.EncodecModel.encodec_model_24khz(pretrained=False)
    if state_dict is not None:
        try:
            model.load_state_dict(state_dict)
        except RuntimeError as exc:
            raise ArtifactError(f"EnCodec checkpoint does not fit the 24 kHz model: {str(exc)[:300]}") from None
    model.eval()
    return model


def default_checkpoint_path() -> Path:
    """Where ``encodec`` itself caches the 24 kHz weights (torch hub's checkpoint directory)."""
    import torch  # noqa: PLC0415

    return Path(torch.hub.get_dir()) / "checkpoints" / CHECKPOINT_NAME


def resolve_checkpoint(configured: str | Path | None = None, *, base: Path | None = None) -> Path:
    """Find the checkpoint file (see module docstring for the order) or raise ``ArtifactError``."""
    if configured:
        path = Path(configured).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        source = "the codec config's 'checkpoint'"
    elif os.environ.get(ENV_CHECKPOINT):
        path = Path(os.environ[ENV_CHECKPOINT]).expanduser()
        source = f"${ENV_CHECKPOINT}"
    else:
        path = default_checkpoint_path()
        source = "torch hub's cache"
    if not path.is_file():
        raise ArtifactError(
            f"EnCodec weights not found: {source} points to {path}, which does not exist. "
            f"Download {CHECKPOINT_URL} on a networked machine and put it at {path} "
            f"(or set ${ENV_CHECKPOINT} to where it is); audiopd never downloads."
        )
    return path


def load_checkpoint(path: str | Path) -> dict:
    """Verify the SHA-256 prefix, then read the tensors (``weights_only``: no code runs)."""
    import torch  # noqa: PLC0415

    path = Path(path)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if not h.hexdigest().startswith(CHECKPOINT_SHA256_PREFIX):
        raise ArtifactError(
            f"{path}: SHA-256 {h.hexdigest()[:16]}... does not start with {CHECKPOINT_SHA256_PREFIX} "
            f"(corrupted or not {CHECKPOINT_NAME}); download it again from {CHECKPOINT_URL}"
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for damaged files
        raise ArtifactError(f"{path}: cannot read the EnCodec checkpoint ({exc.__class__.__name__})") from None
    if not isinstance(state, dict):
        raise ArtifactError(f"{path}: expected a state dict, got {type(state).__name__}")
    return state


class EncodecCodec(Codec):
    """EnCodec 24 kHz behind the ``Codec`` interface. ``model`` is an ``encodec.EncodecModel``."""

    sample_rate = SAMPLE_RATE
    frame_rate = FRAME_RATE
    cardinality = CARDINALITY
    decoders = ("encodec",)  # EnCodec's own decoder network
    decoder = "encodec"

    def __init__(self, model: Any, bandwidth: float = 6.0, name: str = "encodec24k"):
        self.num_codebooks = bandwidth_to_levels(bandwidth)
        if int(model.sample_rate) != SAMPLE_RATE or int(model.channels) != 1:
            raise ValueError("EncodecCodec wraps the 24 kHz mono EnCodec model only")
        if model.segment is not None:
            raise ValueError("segmented (overlap-add) EnCodec models are not supported")
        self.bandwidth = float(bandwidth)
        self.name = name
        self.model = model
        model.set_target_bandwidth(self.bandwidth)
        model.eval()

    @classmethod
    def from_checkpoint(cls, path: str | Path, bandwidth: float = 6.0, name: str = "encodec24k") -> EncodecCodec:
        return cls(build_model(load_checkpoint(path)), bandwidth=bandwidth, name=name)

    def _encode(self, audio: np.ndarray) -> np.ndarray:
        import torch  # noqa: PLC0415

        x = torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32))[:, None, :]
        with torch.inference_mode():
            frames = self.model.encode(x)
        # segment is None, so the whole signal is one frame: (codes [B, K, T], scale=None).
        (codes, _scale), = frames
        return codes.cpu().numpy()

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        import torch  # noqa: PLC0415

        c = torch.from_numpy(np.ascontiguousarray(codes, dtype=np.int64))
        with torch.inference_mode():
            # The RVQ decoder sums the embeddings of the levels it is given, so Q' < Q decodes
            # from the coarsest Q' levels (EnCodec's bandwidth scalability).
            audio = self.model.decode([(c, None)])
        return audio[:, 0, :].cpu().numpy()


def load_artifact(directory: Path, cfg: dict) -> Codec:
    """The registry's entry for kind ``encodec`` (``audiopd.codec.registry``)."""
    where = str(directory / "config.yaml")
    config = from_dict(EncodecConfig, cfg, where=where)
    require_format_version(config.format_version, FORMAT_VERSION, what="EnCodec codec", where=where)
    try:
        bandwidth_to_levels(config.bandwidth)
    except ValueError as exc:
        raise ArtifactError(f"{where}: {exc}") from None
    if config.checkpoint is not None and not isinstance(config.checkpoint, str):
        raise ArtifactError(f"{where}: 'checkpoint' must be a path string or null, got {config.checkpoint!r}")
    path = resolve_checkpoint(config.checkpoint, base=directory)
    return EncodecCodec.from_checkpoint(path, bandwidth=config.bandwidth, name=directory.name)
