"""The facade's settings, without torch: ``SynthesisConfig`` (and auto mode's ``AutoConfig``), the option checks
every synthesis runs and the default checker's adapter. Shared by ``audiopd.pipeline`` (torch) and the torch-free
path (``audiopd.lite``), so both decode with the same settings and refuse the same options.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from audiopd.decoding.config import ParallelConfig, SerialConfig
from audiopd.errors import ArtifactError, AudiopdError
from audiopd.synthesis.items import MODES, Checker, Item, text_items
from audiopd.synthesis.join import JoinConfig

if TYPE_CHECKING:
    from audiopd.checker.config import CheckerConfig
    from audiopd.text.lexicon import Lexicon


@dataclass(frozen=True)
class AutoConfig:
    first_steps: int = 3  # small K: the parallel mode's default (audiopd.pipeline.SynthesisConfig says why)
    escalate_steps: int = 16  # SoundStorm's level-0 step count
    repair: bool = True
    # A failure is usually heard a little after its cause (a skipped phone shows as a short gap), so
    # flagged spans are widened before re-masking.
    repair_margin_s: float = 0.08
    serial_fallback: bool = True
    # Escalation (repair, more steps, serial) may spend at most this multiple of the first attempt's own wall
    # time (decode + check), so no input costs much more than (1 + this) x a checked parallel synthesis: without it,
    # 1,000 characters of nonsense words, which fail every check, ran the whole ladder for 5.8x the plain
    # parallel time (samples/report.md, "Bounded work"). 1.25 keeps such input within 3x of plain parallel
    # (issue 27) now that the first attempt's check costs a fraction of its decoding. None: only
    # ``time_budget_s`` limits escalation.
    escalation_budget: float | None = 1.25
    # ... but never less than this many seconds per request (shared by its batches in proportion to their
    # audio): a short sentence's whole ladder costs about a second, and the budget exists for long
    # pathological input, not to starve the repair of ordinary text.
    escalation_floor_s: float = 2.0

    def validate(self) -> None:
        if self.first_steps < 1 or self.escalate_steps < 1:
            raise ValueError("first_steps and escalate_steps must be >= 1")
        if self.escalation_budget is not None and not self.escalation_budget >= 0.0:
            raise ValueError(f"escalation_budget must be >= 0 or None, got {self.escalation_budget}")
        if not self.escalation_floor_s >= 0.0:
            raise ValueError(f"escalation_floor_s must be >= 0, got {self.escalation_floor_s}")
        if not self.repair_margin_s >= 0.0:
            raise ValueError(f"repair_margin_s must be >= 0, got {self.repair_margin_s}")



SPEED_RANGE = (0.25, 4.0)
# torch's per-call dtype (audiopd.model.precision says what each does); named here, without torch, for the CLIs.
PRECISIONS = ("auto", "float32", "bfloat16")


class SynthesisOptionError(AudiopdError, ValueError):
    """A synthesis option is out of range (mode, steps, speed, seed, time budget)."""


# Block-local attention (model.layers.block_local_attention) in every masked pass of both decoders, in frames:
# each block of 64 frames (0.64 s) sees itself and its neighbours, so a pass costs T x 3W instead of T x T, and it
# measured more intelligible than full attention (samples/report.md, "How the decoding defaults were chosen").
ATTENTION_WINDOW = 64
FINE_PASSES = 1  # both decoders' (SynthesisConfig says why)


@dataclass(frozen=True)
class SynthesisConfig:
    # Explicit mode="parallel" uses these: at most 3 adaptive level-0 passes, then the fine levels in one pass; a
    # voice may set its own K (VoiceInfo.parallel_steps, voice_config below).
    # Serial fills the fine levels with the same pass, so a speed comparison charges both decoders the same fine
    # work. Chosen on the development set, never the test split (samples/report.md, "How the decoding defaults
    # were chosen").
    parallel: ParallelConfig = field(default_factory=lambda: ParallelConfig(
        steps=3, fine_passes=FINE_PASSES, attention_window=ATTENTION_WINDOW))
    serial: SerialConfig = field(default_factory=lambda: SerialConfig(
        fine_passes=FINE_PASSES, attention_window=ATTENTION_WINDOW))
    auto: AutoConfig = field(default_factory=AutoConfig)
    join: JoinConfig = field(default_factory=JoinConfig)
    # Chunks of at most this many characters: ~15 s of speech, the length range the models train on.
    max_chunk_chars: int = 250
    # A decoder batch holds at most max_batch items and max_batch_frames padded frames x items.
    max_batch: int = 8
    max_batch_frames: int = 8000
    # Parallel and auto modes batch only chunks at least (1 - this) as long as the batch's longest: a masked pass
    # costs the same per frame batched or not on a CPU (samples/measured.md: batch 8 = 8.5x batch 1), so padding is
    # pure loss there (a 20 s text's 11.9 s and 7.9 s chunks, padded together, cost 20% more frames). Serial
    # mode batches any lengths: its cached steps cost about the same for one item as for eight.
    max_padding: float = 0.1
    # A duration predictor averaging more than this many seconds per phoneme token over a chunk (at speed 1; the
    # bound stretches by 1/speed) is broken: refuse rather than decode minutes of noise. Speech runs at ~12-15
    # phones/s (~70-80 ms each) and a pause token rarely exceeds 0.5 s. A per-token bound, not a per-chunk one:
    # a 250-character chunk at speed 0.25 or a run of 200 digits read out one by one is a long chunk, not a broken
    # predictor.
    max_token_s: float = 1.0

    def validate(self) -> None:
        self.parallel.validate()
        self.serial.validate()
        self.auto.validate()
        self.join.validate()
        if self.max_chunk_chars < 1 or self.max_batch < 1 or self.max_batch_frames < 1 or not self.max_token_s > 0:
            raise ValueError("max_chunk_chars, max_batch, max_batch_frames and max_token_s must be positive")
        if not 0.0 <= self.max_padding <= 1.0:
            raise ValueError(f"max_padding must lie in [0, 1], got {self.max_padding}")


def default_checker(config: CheckerConfig | None = None, runtime: str = "numpy",
                    lexicon: Lexicon | None = None) -> Checker:
    """``audiopd.checker.score`` with ``config`` (a CheckerConfig; None = its defaults), its recogniser on
    ``runtime`` ("numpy" or "torch") and the user's ``lexicon`` the audio was spoken with, adapted to the renderer.

    The renderer hands over everything it knows: per-token expected durations in seconds (from the
    duration predictor), the codes [Q, T], level-0 confidences [T] and the frame rate.
    """
    from audiopd.checker import score

    params = inspect.signature(score).parameters
    extra: dict[str, Any] = {"runtime": runtime}
    if lexicon is not None:
        extra["lexicon"] = lexicon
    if config is not None:
        extra["config"] = config

    def run(audio: np.ndarray, sample_rate: int, text: str, *, durations_s: np.ndarray, tokens: np.ndarray,
            confidence: np.ndarray, token_rate: float) -> Any:
        given = {"durations": durations_s, "tokens": tokens, "confidences": confidence, "token_rate": token_rate}
        return score(audio, sample_rate, text, **{k: v for k, v in given.items() if k in params}, **extra)

    return run


def voice_config(model) -> SynthesisConfig:
    """The defaults with the voice's own level-0 step budget (``VoiceInfo.parallel_steps``) and level-0 temperature
    (``VoiceInfo.level0_temperature``), both chosen on its development split, for parallel mode and auto mode's
    first attempt (the temperature for the ladder's parallel decodes too); a voice that sets neither gets the
    defaults."""
    info = getattr(model, "info", None)
    k = getattr(info, "parallel_steps", 0)
    temperature = getattr(info, "level0_temperature", None)
    config = SynthesisConfig()
    if temperature is not None:
        sampling = dataclasses.replace(config.parallel.sampling, temperature=float(temperature))
        config = dataclasses.replace(config, parallel=dataclasses.replace(config.parallel, sampling=sampling))
    if not k:
        return config
    return dataclasses.replace(config, parallel=dataclasses.replace(config.parallel, steps=k),
                               auto=dataclasses.replace(config.auto, first_steps=k))


def validate_options(mode: str, steps: int | None, seed: int | None, speed: float,
                      time_budget_s: float | None, check_level: str = "fast") -> None:
    from audiopd.checker.config import CHECK_LEVELS

    if check_level not in CHECK_LEVELS:
        raise SynthesisOptionError(f"check_level must be one of {', '.join(CHECK_LEVELS)}, got {check_level!r}")
    if mode not in MODES:
        raise SynthesisOptionError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 256):
        raise SynthesisOptionError(f"steps must be an integer in 1..256, got {steps!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise SynthesisOptionError(f"seed must be a non-negative integer, got {seed!r}")
    lo, hi = SPEED_RANGE
    if not isinstance(speed, (int, float)) or not lo <= float(speed) <= hi:
        raise SynthesisOptionError(f"speed must be between {lo} and {hi}, got {speed!r}")
    if time_budget_s is not None and not time_budget_s > 0:
        raise SynthesisOptionError(f"time_budget_s must be > 0, got {time_budget_s!r}")


def check_compatible(model, codec) -> None:
    """Refuse a voice and a codec that do not fit together (levels, rates, phoneme inventory, token fingerprint).
    ``model``: a torch VoiceModel or the torch-free LiteVoice (both have info, cfg, num_codebooks, cardinality)."""
    from audiopd.text import INVENTORY_VERSION, NUM_SYMBOLS

    info = model.info
    problems = []
    if model.num_codebooks != codec.num_codebooks or model.cardinality != codec.cardinality:
        problems.append(f"voice has {model.num_codebooks} x {model.cardinality} codes, codec {codec.name!r} "
                        f"{codec.num_codebooks} x {codec.cardinality}")
    if info.sample_rate and info.sample_rate != codec.sample_rate:
        problems.append(f"voice sample rate {info.sample_rate}, codec {codec.sample_rate}")
    if info.frame_rate and abs(float(info.frame_rate) - float(codec.frame_rate)) > 1e-6:
        problems.append(f"voice frame rate {info.frame_rate}, codec {codec.frame_rate}")
    if info.inventory_version and str(info.inventory_version) != str(INVENTORY_VERSION):
        problems.append(f"voice phoneme inventory v{info.inventory_version}, frontend v{INVENTORY_VERSION}")
    theirs = getattr(codec, "token_fingerprint", "")
    if info.codec_fingerprint and theirs and info.codec_fingerprint != theirs:
        problems.append(f"the voice learnt the tokens of another {codec.name!r} codec (different codebooks or bin "
                        f"tables: fingerprint {info.codec_fingerprint[:12]}, this codec {theirs[:12]}); use the codec "
                        f"it was exported with, or re-export it from a run trained on this codec's tokens")
    if model.cfg.num_symbols < NUM_SYMBOLS:
        problems.append(f"voice knows {model.cfg.num_symbols} phoneme symbols, the frontend uses {NUM_SYMBOLS}")
    if problems:
        raise ArtifactError("voice and codec do not fit together: " + "; ".join(problems))


class VoiceFacade:
    """What both runtimes' synthesizers say about their voice (``audiopd.pipeline.Synthesizer``, torch, and
    ``audiopd.lite.synth.LiteSynthesizer``, NumPy): each sets ``model`` (its ``info``, ``artifact_name``),
    ``codec`` (``sample_rate``, ``frame_rate``) and ``config`` (a ``SynthesisConfig``)."""

    model: Any
    codec: Any
    config: Any
    runtime: str = "torch"  # which runtime computes: "torch" or "numpy" (audiopd.lite)
    precision: str = "float32"  # the per-call networks' dtype (audiopd.model.precision); NumPy's is float32
    # The user's pronunciations (audiopd.text.lexicon), applied to every text and expected by the checker.
    lexicon: Lexicon | None = None

    @property
    def voices(self) -> tuple[str, ...]:
        return tuple(self.model.info.voices)

    def _lexicon_for(self, lexicon: Any) -> Lexicon | None:
        """The lexicon a call speaks with: its own words (anything ``load_lexicon`` takes) over ``self.lexicon``."""
        from audiopd.text.lexicon import load_lexicon, merge_lexicons

        return merge_lexicons(self.lexicon, load_lexicon(lexicon))

    @property
    def voice_name(self) -> str:
        """The voice artifact's name ("joe"), what reports, /health and bench call the voice; "" for a model that
        was not loaded from one."""
        return getattr(self.model, "artifact_name", "")

    @property
    def sample_rate(self) -> int:
        return int(self.codec.sample_rate)

    @property
    def frame_rate(self) -> float:
        return float(self.codec.frame_rate)

    def _speaker(self, voice: str | int | None) -> int:
        return 0 if voice is None else self.model.info.speaker_id(voice)

    def _items(self, text: str, speaker: int, lexicon: Lexicon | None = None) -> list[Item]:
        """``text``'s chunks to speak (``synthesis.items.text_items``), labelled as this voice was trained, with
        ``lexicon``'s pronunciations (a call's, ``_lexicon_for``; None: ``self.lexicon``)."""
        return text_items(text, speaker, self.config.max_chunk_chars, weak_forms=self.model.info.weak_forms,
                          lexicon=self.lexicon if lexicon is None else lexicon)

    def _speaker_name(self, speaker: int) -> str:
        return self.voices[speaker] if speaker < len(self.voices) else str(speaker)


def speaker_blurs(model) -> dict[int, float]:
    """Speaker -> the blur over time (frames) its tokens are decoded with, for the speakers that do not take the
    codec's own; both runtimes' synthesizers build their codec views from it. A voice's mel refiner replaces the
    codec's blur unless the voice sets one (``VoiceInfo.smooth_frames``): it was trained to give the teacher's token
    mel, which the blur would smear (recipes/voice/README.md, "The mel refiner")."""
    frames = getattr(getattr(model, "info", None), "smooth_frames", ())
    refiner = getattr(model, "refiner", None)
    if refiner is not None:
        return dict(enumerate(frames or (0.0,) * len(refiner.cfg.voices)))
    return dict(enumerate(frames))
