"""A voice artifact's description without its networks: ``VoiceInfo``, its config.yaml and checker.yaml readers.

Torch-free, so the torch-free inference path (``audiopd.lite``) and ``--help``-level tools read a voice exactly as
``audiopd.model.voice.load_voice`` does (version, kind, checksums, strict keys), then load the weights their own way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from audiopd import artifacts
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.checker.config import CheckerConfig
from audiopd.config import from_dict
from audiopd.errors import ArtifactError
from audiopd.model.config import ModelConfig

VOICE_FORMAT_VERSION = 1
SUPPORTED_VOICE_VERSIONS = (1,)
MAX_PARALLEL_STEPS = 64  # a voice's own K: SoundStorm uses 16 for level 0; more is unbounded work, not quality
MAX_TEMPERATURE = 2.0  # a voice's own level-0 temperature: above ~1.5 a draw is mostly noise
CHECKER_FILE = "checker.yaml"
# A voice's per-speaker duration calibration (VoiceInfo.duration_scale): a correction of a few percent, not a
# speaking rate (that is ``speed``, the caller's); beyond this range the duration model itself needs work.
DURATION_SCALE = (0.8, 1.25)


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
    # The level-0 sampling temperature of this voice's parallel decoding (where its anneal starts, at any K; 0 =
    # greedy), chosen with ``parallel_steps`` on the development split; None = the engine's (1.0, annealed to 0.2).
    # A confident model's most likely level 0 in one pass can score as well as two sampled passes
    # (recipes/voice/README.md, "One greedy pass").
    level0_temperature: float | None = None
    # Trained on weak forms of "to" and "for" (audiopd.text.g2p.WEAK_FORMS): the frontend must label a text the
    # same way for this voice (recipes/natural/05_weak_forms.py relabels a corpus's shards).
    weak_forms: bool = False
    # Each voice's predicted durations times this, in the order of ``voices``; () = 1 for all. A duration model
    # fitted to log(1 + d) predicts about the median duration, below the mean, so a speaker whose durations vary
    # more speaks faster than its teacher did: the factor is the development split's true frames over predicted
    # ones (python -m audiopd.train.duration_scale; recipes/voice/README.md, "Duration calibration").
    duration_scale: tuple[float, ...] = field(default_factory=tuple)

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
        t = self.level0_temperature
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))
                              or not 0.0 <= t <= MAX_TEMPERATURE):
            raise ArtifactError(f"level0_temperature must be a number in [0, {MAX_TEMPERATURE}] (0 = greedy) or null "
                                f"(the engine's), got {t!r}")
        if self.duration_scale and len(self.duration_scale) != len(self.voices):
            raise ArtifactError(f"duration_scale gives {len(self.duration_scale)} value(s) for {len(self.voices)} "
                                "voice(s)")
        if any(not DURATION_SCALE[0] <= s <= DURATION_SCALE[1] for s in self.duration_scale):
            raise ArtifactError(f"duration_scale must lie in [{DURATION_SCALE[0]}, {DURATION_SCALE[1]}], "
                                f"got {list(self.duration_scale)}")
        if not isinstance(self.weak_forms, bool):
            raise ArtifactError(f"weak_forms must be true or false, got {self.weak_forms!r}")

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

    def duration_factor(self, voice: str | int) -> float:
        """What ``voice``'s predicted durations are multiplied by (``duration_scale``; 1.0 where unset)."""
        return float(self.duration_scale[self.speaker_id(voice)]) if self.duration_scale else 1.0

    def scaled_speeds(self, speed: float, speakers: Sequence[int]) -> np.ndarray:
        """Per item, what its predicted durations are divided by: the caller's ``speed`` over its speaker's
        ``duration_factor``, in float32, so that the torch and NumPy runtimes round to the same frames."""
        if speed <= 0:
            raise ValueError(f"speed must be > 0, got {speed}")
        return np.float32(speed) / np.asarray([self.duration_factor(int(s)) for s in speakers], dtype=np.float32)

    def speaker_id(self, voice: str | int) -> int:
        """Speaker index for a voice name (or a valid index)."""
        if isinstance(voice, int):
            if not 0 <= voice < max(len(self.voices), 1):
                raise ArtifactError(f"speaker id {voice} out of range (voices: {', '.join(self.voices)})")
            return voice
        if voice not in self.voices:
            raise ArtifactError(f"unknown voice {voice!r} (available: {', '.join(self.voices) or 'none'})")
        return self.voices.index(voice)


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


def describe_voices() -> list[dict[str, Any]]:
    """Every voice a bare ``--voice NAME`` can name (``artifacts.available``, so ``$AUDIOPD_VOICES_PATH`` too), as
    ``audiopd voices`` lists it, the default first: name, whether it is the default, speakers with their teachers
    (the first speaks unless told), codec, sample rate and the voice's own K and level-0 temperature. Configs are
    read and checksums verified, weights not loaded. A broken artifact gets ``error`` (why) instead of the rest, so
    one does not hide the others."""
    out: list[dict[str, Any]] = []
    for name in sorted(artifacts.available("voices"), key=lambda n: (n != DEFAULT_VOICE, n)):  # the default first
        entry: dict[str, Any] = {"name": name, "default": name == DEFAULT_VOICE}
        try:
            _, info, _ = read_voice(artifacts.find_artifact("voices", name))
        except (ArtifactError, OSError) as exc:
            out.append({**entry, "error": str(exc)})
            continue
        teachers = info.teachers or ("",) * len(info.voices)
        out.append({**entry, "speakers": [{"name": v, "teacher": t} for v, t in zip(info.voices, teachers)],
                    "codec": info.codec, "sample_rate": info.sample_rate, "parallel_steps": info.parallel_steps,
                    "level0_temperature": info.level0_temperature})
    return out


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


def read_voice(directory: Path) -> tuple[dict[str, Any], VoiceInfo, ModelConfig]:
    """A verified voice directory's config.yaml (``_read_voice_config``), its VoiceInfo and its ModelConfig."""
    cfg = _read_voice_config(directory)
    info_keys = {f.name for f in dataclasses.fields(VoiceInfo)}
    info = from_dict(VoiceInfo, {k: v for k, v in cfg.items() if k in info_keys}, where=f"{directory}/config.yaml")
    mcfg = from_dict(ModelConfig, cfg.get("model") or {}, where=f"{directory}/config.yaml:model")
    return cfg, info, mcfg
