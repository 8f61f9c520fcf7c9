"""A voice: all networks of one trained model, and its versioned artifact (save / load).

One artifact holds the shared frame conditioner (phoneme encoder + duration predictor), the masked
codec transformer and the serial level-0 model, so the parallel path and its serial fallback always
agree on durations and conditioning.

Artifact layout (``format_version`` 1)::

    config.yaml        format_version, kind: voice, codec, sample_rate, frame_rate, num_codebooks,
                       cardinality, inventory_version, voices, teachers (optional), codec_fingerprint,
                       model (ModelConfig), training (optional: step, checkpoint, init_from)
    model.safetensors  weights (metadata: format_version)
    checker.yaml       optional: this voice's checker thresholds, a subset of CheckerConfig's fields
                       (calibrated on the voice's own output with ``checker_bench --voice``); must be
                       listed in SHA256SUMS like every other file
    refiner.yaml,      optional: the voice's mel refiner (``audiopd.model.refiner``), trained on these
    refiner.safetensors  weights' own predictions (``python -m audiopd.train.refiner``); listed in SHA256SUMS
    SHA256SUMS
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import yaml
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from audiopd import artifacts
from audiopd.checker.config import CheckerConfig
from audiopd.config import to_dict
from audiopd.errors import ArtifactError
from audiopd.fileio import atomic_path, write_text_atomic
from audiopd.model.config import ModelConfig
from audiopd.model.encoder import FrameCondition, FrameConditioner
from audiopd.model.info import (  # noqa: F401  (the artifact's description lives in info.py, re-exported here)
    CHECKER_FILE,
    MAX_PARALLEL_STEPS,
    SUPPORTED_VOICE_VERSIONS,
    VOICE_FORMAT_VERSION,
    VoiceInfo,
    _checker_config,
    load_checker_config,
    parse_checker_file,
    parse_checker_text,
    read_voice,
    speaker_owner,
)
from audiopd.model.masked import MaskedCodecTransformer, SerialLevel0
from audiopd.model.refiner import load_refiner


class VoiceModel(nn.Module):
    def __init__(self, cfg: ModelConfig, info: VoiceInfo | None = None) -> None:
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.info = info or VoiceInfo(num_codebooks=cfg.num_codebooks, cardinality=cfg.cardinality)
        # The artifact's own checker thresholds (checker.yaml), None for CheckerConfig's defaults.
        self.checker_config: CheckerConfig | None = None
        # The artifact's directory name ("joe"; set by load_voice), "" for a model built in code.
        self.artifact_name = ""
        self.artifact_dir: Path | None = None  # where it was loaded from (None: built in code)
        # The artifact's ``training`` record (step, checkpoint, init_from); {} when it has none.
        self.training_record: dict[str, Any] = {}
        self.conditioner = FrameConditioner(cfg)
        self.masked = MaskedCodecTransformer(cfg)
        self.serial = SerialLevel0(cfg)

    @property
    def refiner(self):
        """The voice's mel refiner (``audiopd.model.refiner``; ``refiner.yaml`` in the artifact), None without one.
        Not a child module: its weights ship in their own file, so the voice's state dict stays the model's."""
        return self.__dict__.get("_refiner")

    def attach_refiner(self, refiner) -> None:
        """Use ``refiner`` (a ``MelRefiner`` for this voice's speakers, or None) from now on."""
        if refiner is not None and tuple(refiner.cfg.voices) != tuple(self.info.voices):
            raise ArtifactError(f"refiner speakers {list(refiner.cfg.voices)}, the voice's {list(self.info.voices)}")
        self.__dict__["_refiner"] = refiner

    @property
    def num_codebooks(self) -> int:
        return self.cfg.num_codebooks

    @property
    def cardinality(self) -> int:
        return self.cfg.cardinality

    @property
    def mask_id(self) -> int:
        return self.cfg.cardinality

    @torch.no_grad()
    def condition(self, phonemes: Tensor, speakers: Tensor, phone_mask: Tensor | None = None,
                  durations: Tensor | None = None, speed: float = 1.0) -> FrameCondition:
        """Inference conditioning: phonemes [B, L] (0 = padding), speakers [B] -> FrameCondition.

        Durations are predicted (scaled by 1/``speed`` and by each speaker's ``VoiceInfo.duration_scale``)
        unless given.
        """
        if phonemes.ndim == 1:
            phonemes = phonemes[None]
        if phone_mask is None:
            phone_mask = phonemes != 0
        if phonemes.shape[1] == 0 or not bool(phone_mask.any(-1).all()):
            raise ValueError("every item needs at least one phoneme token")
        if int(phonemes.max()) >= self.cfg.num_symbols or int(phonemes.min()) < 0:
            raise ValueError(f"phoneme ids must lie in [0, {self.cfg.num_symbols})")
        speakers = torch.as_tensor(speakers, dtype=torch.long).reshape(-1).expand(phonemes.shape[0])
        if int(speakers.max()) >= self.cfg.num_speakers or int(speakers.min()) < 0:
            raise ValueError(f"speaker ids must lie in [0, {self.cfg.num_speakers})")
        if durations is None and self.info.duration_scale:
            speed = torch.from_numpy(self.info.scaled_speeds(speed, speakers.tolist()))
        cond, _ = self.conditioner(phonemes, phone_mask, speakers, durations, speed)
        return cond

    def num_parameters(self) -> dict[str, int]:
        def n(m: nn.Module) -> int:
            return sum(p.numel() for p in m.parameters())

        return {"conditioner": n(self.conditioner), "masked": n(self.masked), "serial": n(self.serial)}


# Weight dtypes a voice may ship in. float16 halves what each export adds to every clone; the loader widens
# to the model's float32, so inference is unchanged apart from the rounding (voices/README.md, "Weights in git").
WEIGHT_DTYPES = {"float32": torch.float32, "float16": torch.float16}


def save_voice(model: VoiceModel, directory: str | Path, *, extra: dict[str, Any] | None = None,
               dtype: str = "float32") -> Path:
    """Write a voice artifact directory (config.yaml + model.safetensors + SHA256SUMS); floating-point
    weights are stored as ``dtype`` (``WEIGHT_DTYPES``)."""
    if dtype not in WEIGHT_DTYPES:
        raise ArtifactError(f"weight dtype {dtype!r} not supported (choose from {', '.join(WEIGHT_DTYPES)})")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: (v.to(WEIGHT_DTYPES[dtype]) if v.is_floating_point() else v).detach().cpu().contiguous()
             for k, v in model.state_dict().items()}
    with atomic_path(directory / "model.safetensors") as tmp:
        save_file(state, str(tmp), metadata={"format_version": str(VOICE_FORMAT_VERSION)})
    info = to_dict(model.info)
    config = {
        "format_version": VOICE_FORMAT_VERSION,
        "kind": "voice",
        **info,
        "model": to_dict(model.cfg),
    }
    if extra:
        config["training"] = extra
    write_text_atomic(directory / "config.yaml", yaml.safe_dump(config, sort_keys=False))
    artifacts.write_checksums(directory)
    return directory


def load_voice(name_or_dir: str | Path, *, map_location: str = "cpu") -> VoiceModel:
    """Load a shipped voice by name, or a voice directory by path (``artifacts.find_artifact``); verifies it.

    The returned model carries the artifact's ``checker.yaml`` thresholds as ``checker_config``.
    """
    directory = artifacts.find_artifact("voices", name_or_dir)
    cfg, info, mcfg = read_voice(directory)
    model = VoiceModel(mcfg, info)
    model.artifact_name, model.artifact_dir = directory.name, directory
    sums = artifacts.read_checksums(directory)  # verified by _read_voice_config
    model.checker_config = _checker_config(directory, sums)
    model.attach_refiner(load_refiner(directory, voices=info.voices, sums=sums))
    model.training_record = dict(cfg["training"]) if isinstance(cfg.get("training"), dict) else {}
    weights = directory / "model.safetensors"
    if not weights.is_file():
        raise ArtifactError(f"{directory}: model.safetensors is missing")
    try:
        state = load_file(str(weights), device=map_location)
        odd = sorted({str(v.dtype) for v in state.values() if v.is_floating_point()}
                     - {str(t) for t in WEIGHT_DTYPES.values()})
        if odd:
            raise ArtifactError(f"{directory}: weights in {', '.join(odd)}; a voice ships float32 or float16")
        missing, unexpected = model.load_state_dict(state, strict=False)
    except (RuntimeError, OSError, ValueError) as exc:  # shape mismatch or unreadable file
        raise ArtifactError(f"{directory}: weights do not match the config ({str(exc).splitlines()[0]})") from None
    if missing or unexpected:
        raise ArtifactError(
            f"{directory}: weights do not match the config (missing {len(missing)}, unexpected {len(unexpected)})"
        )
    model.eval()
    return model
