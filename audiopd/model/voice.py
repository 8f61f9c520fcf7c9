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

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import yaml
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from audiopd import artifacts
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.checker.config import CheckerConfig
from audiopd.config import from_dict, to_dict
from audiopd.errors import ArtifactError
from audiopd.fileio import atomic_path, write_text_atomic
from audiopd.model.config import ModelConfig
from audiopd.model.encoder import FrameCondition, FrameConditioner
from audiopd.model.masked import MaskedCodecTransformer, SerialLevel0
from audiopd.model.refiner import load_refiner

VOICE_FORMAT_VERSION = 1
SUPPORTED_VOICE_VERSIONS = (1,)
MAX_PARALLEL_STEPS = 64  # a voice's own K: SoundStorm uses 16 for level 0; more is unbounded work, not quality
CHECKER_FILE = "checker.yaml"


@dataclass(frozen=True)
class VoiceInfo:
    """What a voice was trained on; the runtime checks it against the codec and text frontend."""

    codec: str = ""
    sample_rate: int = 0
    frame_rate: float = 0.0
    num_codebooks: int = 0
    cardinality: int = 0
    inventory_version: str = ""
    voices: tuple[str, ...] = field(default_factory=tuple)
    # Codec.token_fingerprint of the codec the voice was exported with ("" = not recorded: no check).
    codec_fingerprint: str = ""
    # Each voice's teacher, by audiopd.eval.peers' name ("kokoro:af_heart"), in the order of ``voices``; () when
    # not recorded (the flite voice's speakers are named after their teachers). Evaluation finds the teacher's
    # recordings in a corpus manifest under this name.
    teachers: tuple[str, ...] = field(default_factory=tuple)
    # Each voice's decode-time blur over time (``Codec.smoothed``, frames), in the order of ``voices``; () = the
    # codec's own setting for all (none where the voice ships a mel refiner). Per speaker because one speaker's
    # predicted fine levels jump more than another's (codecs/mel22k/README.md, "Smoothing": heart's dev
    # DistillMOS kept rising to 1.0 frame, adam's did not).
    smooth_frames: tuple[float, ...] = field(default_factory=tuple)
    # The level-0 step budget K of parallel decoding (and of auto mode's first attempt) chosen on this voice's
    # development split; 0 = the engine's default (audiopd.pipeline.SynthesisConfig). Per voice because the best
    # K is a property of the model: a confident one needs fewer passes (recipes/voice/README.md, "Two passes and a
    # fair bench").
    parallel_steps: int = 0

    def __post_init__(self) -> None:
        if self.teachers and len(self.teachers) != len(self.voices):
            raise ArtifactError(f"teachers names {len(self.teachers)} teacher(s) for {len(self.voices)} voice(s)")
        if self.smooth_frames and len(self.smooth_frames) != len(self.voices):
            raise ArtifactError(f"smooth_frames gives {len(self.smooth_frames)} value(s) for {len(self.voices)} "
                                "voice(s)")
        if any(not 0.0 <= s <= 4.0 for s in self.smooth_frames):
            raise ArtifactError(f"smooth_frames must lie in [0, 4] frames, got {list(self.smooth_frames)}")
        k = self.parallel_steps
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_PARALLEL_STEPS:
            raise ArtifactError(f"parallel_steps must be an integer in [0, {MAX_PARALLEL_STEPS}] (0 = the engine's "
                                f"default), got {self.parallel_steps!r}")

    def teacher(self, voice: str) -> str:
        """The corpus name of ``voice``'s teacher: the recorded one, else the voice's own name."""
        return self.teachers[self.speaker_id(voice)] if self.teachers else voice

    def find(self, name: str) -> int | None:
        """The speaker index of ``name``, a voice's name or its teacher's (``heart`` or ``kokoro:af_heart``: a
        corpus names speakers by teacher); None when neither."""
        if name in self.voices:
            return self.voices.index(name)
        return self.teachers.index(name) if name in self.teachers else None

    def smoothing(self, voice: str | int) -> float | None:
        """``voice``'s own decode-time blur in frames; None = the codec's setting."""
        return self.smooth_frames[self.speaker_id(voice)] if self.smooth_frames else None

    def speaker_id(self, voice: str | int) -> int:
        """Speaker index for a voice name (or a valid index)."""
        if isinstance(voice, int):
            if not 0 <= voice < max(len(self.voices), 1):
                raise ArtifactError(f"speaker id {voice} out of range (voices: {', '.join(self.voices)})")
            return voice
        if voice not in self.voices:
            raise ArtifactError(f"unknown voice {voice!r} (available: {', '.join(self.voices) or 'none'})")
        return self.voices.index(voice)


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

        Durations are predicted (scaled by 1/``speed``) unless given.
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
    cfg = _read_voice_config(directory)
    info_keys = {f.name for f in dataclasses.fields(VoiceInfo)}
    info = from_dict(VoiceInfo, {k: v for k, v in cfg.items() if k in info_keys}, where=f"{directory}/config.yaml")
    mcfg = from_dict(ModelConfig, cfg.get("model") or {}, where=f"{directory}/config.yaml:model")
    model = VoiceModel(mcfg, info)
    model.artifact_name = directory.name
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


def speaker_owner(speaker: str) -> str | None:
    """The shipped voice with a speaker named ``speaker`` (``--voice slt`` is the flite voice's slt): the default
    voice if it has one, else the first by name; None when no voice has. Reads configs only, not weights."""
    for name in dict.fromkeys([DEFAULT_VOICE, *artifacts.available("voices")]):
        try:
            cfg = yaml.safe_load((artifacts.find_artifact("voices", name) / "config.yaml").read_text(encoding="utf-8"))
        except (ArtifactError, OSError, yaml.YAMLError):
            continue
        if isinstance(cfg, dict) and speaker in (cfg.get("voices") or ()):
            return name
    return None


def load_checker_config(name_or_dir: str | Path) -> CheckerConfig | None:
    """The checker thresholds of a voice artifact (name or directory) without loading its weights.

    Verifies the artifact like ``load_voice`` (version, kind, checksums); None when it has no
    ``checker.yaml``.
    """
    directory = artifacts.find_artifact("voices", name_or_dir)
    _read_voice_config(directory)
    return _checker_config(directory, artifacts.read_checksums(directory))


def _checker_config(directory: Path, sums: dict[str, str]) -> CheckerConfig | None:
    """Parse ``directory/checker.yaml`` (strict keys and types) over CheckerConfig's defaults; None if absent.

    The file changes what auto mode accepts, so it must be checksummed like the weights: a file
    that SHA256SUMS does not list (``sums``, ``artifacts.read_checksums``) is an error rather than silently trusted
    (the caller has verified every listed checksum).
    """
    path = Path(directory) / CHECKER_FILE
    if not path.is_file():
        return None
    if CHECKER_FILE not in sums:
        raise ArtifactError(f"{directory}: {CHECKER_FILE} is not listed in SHA256SUMS "
                            "(rewrite it with audiopd.artifacts.write_checksums)")
    return parse_checker_file(path)


def parse_checker_file(path: str | Path) -> CheckerConfig:
    """A checker.yaml's CheckerConfig: strict keys and types over the defaults, ranges checked (ArtifactError)."""
    path = Path(path)
    return parse_checker_text(path.read_text(encoding="utf-8"), where=str(path))


def parse_checker_text(text: str, *, where: str) -> CheckerConfig:
    """``parse_checker_file`` on text already read; ``where`` names its source in errors."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ArtifactError(f"{where} is not valid YAML: {exc}") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ArtifactError(f"{where}: expected a mapping of CheckerConfig fields, got {type(data).__name__}")
    try:
        return from_dict(CheckerConfig, data, where=where)
    except ValueError as exc:  # CheckerConfig's own range checks
        raise ArtifactError(f"{where}: {exc}") from None


def _read_voice_config(directory: Path) -> dict[str, Any]:
    """config.yaml of a voice artifact, with its version and kind checked and every checksum verified."""
    try:
        cfg = yaml.safe_load((directory / "config.yaml").read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ArtifactError(f"{directory}/config.yaml is not valid YAML: {exc}") from None
    if not isinstance(cfg, dict):
        raise ArtifactError(f"{directory}/config.yaml is not a mapping")
    version = cfg.get("format_version")
    artifacts.require_format_version(version, SUPPORTED_VOICE_VERSIONS, what="voice", where=str(directory))
    if cfg.get("kind") != "voice":
        raise ArtifactError(f"{directory}: kind is {cfg.get('kind')!r}, expected 'voice'")
    artifacts.verify_checksums(directory)
    return cfg
