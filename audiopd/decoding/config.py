"""The decoders' settings: frozen dataclasses without torch, so the torch-free inference path
(``audiopd.lite``) shares them with the torch decoders (sampling.py, parallel.py and serial.py say what each
setting does)."""

from __future__ import annotations

from dataclasses import dataclass, field

# exp of an argument below this underflows (float32's smallest normal is e^-87.3); torch's vectorised exp leaves such
# lanes to a slow path, ~10x the cost of the rest: a logsumexp over 301 x 1024 level-0 logits at temperature 0.2
# took 4.6 ms, 0.49 ms with the shifted values clamped here first (2 threads; CHANGELOG 2026-12-07). A clamped term
# is < 2^-125 of the row's largest (which adds exactly 1), so the sum in float32 is unchanged. Both runtimes' samplers
# floor at it (decoding.sampling.logsumexp, lite.decode._logsumexp).
EXP_FLOOR = -87.0


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 1.0  # 0 = greedy
    top_k: int = 0  # 0 = off
    top_p: float = 1.0  # 1 = off
    ras_window: int = 0  # 0 = RAS off; VALL-E 2 uses a window of 10 (at 75 Hz)
    ras_threshold: float = 0.1  # VALL-E 2: repetition ratio above which to resample

    def validate(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.ras_window < 0 or not 0.0 <= self.ras_threshold <= 1.0:
            raise ValueError("ras_window must be >= 0 and ras_threshold in [0, 1]")


@dataclass(frozen=True)
class ParallelConfig:
    steps: int = 16  # maximum level-0 passes (SoundStorm uses 16 for level 0)
    sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(temperature=1.0, top_p=0.9))
    final_temperature: float = 0.2  # temperature anneals linearly from sampling.temperature to this
    choice_noise: float = 1.0  # MaskGIT "choice temperature": Gumbel noise on log-confidence, annealed to 0
    remask: bool = False
    remask_below: float = 0.1  # committed tokens below this confidence may be re-masked (if remask)
    adaptive: bool = True
    confident_prob: float = 0.9
    converge_delta: float = 0.01
    stable_fraction: float = 0.02
    converge_context: float = 0.2  # committed fraction that must separate two convergence checks
    min_steps: int = 2
    fine_passes: int | None = None  # None = one greedy pass per fine level (SoundStorm)
    fine_sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(temperature=0.0))
    attention_window: int = 0  # > 0: block-local attention of this many frames in every pass (0 = full)

    def validate(self) -> None:
        if self.steps < 1 or self.min_steps < 1:
            raise ValueError("steps and min_steps must be >= 1")
        if self.attention_window < 0:
            raise ValueError(f"attention_window must be >= 0, got {self.attention_window}")
        if not 0.0 < self.confident_prob <= 1.0:
            raise ValueError(f"confident_prob must be in (0, 1], got {self.confident_prob}")
        self.sampling.validate()
        self.fine_sampling.validate()


@dataclass(frozen=True)
class SerialConfig:
    # VALL-E 2 defaults for RAS: window 10, threshold 0.1; top-p 0.9 keeps the tail out. At this codec's 100 Hz,
    # level-0 tokens repeat more than EnCodec's at 75 Hz, and RAS redraws 27-32% of the frames; it still helps:
    # off, looser or stricter was no better on the development set (samples/report.md, "serial decoding").
    sampling: SamplingConfig = field(
        default_factory=lambda: SamplingConfig(temperature=1.0, top_p=0.9, ras_window=10, ras_threshold=0.1)
    )
    fine_passes: int | None = None
    fine_sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(temperature=0.0))
    attention_window: int = 0  # > 0: block-local attention in the fine passes (level 0 is causal, cached)

    def validate(self) -> None:
        if self.attention_window < 0:
            raise ValueError(f"attention_window must be >= 0, got {self.attention_window}")
        self.sampling.validate()
        self.fine_sampling.validate()
