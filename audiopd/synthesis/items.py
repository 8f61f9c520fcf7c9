"""What the attempt ladder works on, without torch: a chunk to speak (``Item``), its decoding attempts
(``Attempt``), a group's outcome, and the steps every path shares after decoding (fitting the audio to its frames,
checking it). ``audiopd.synthesis.auto`` runs the ladder with torch; ``audiopd.lite`` runs its first attempt with
NumPy; both hand these to ``audiopd.synthesis.result.assemble_result``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from audiopd.errors import ArtifactError, AudiopdError, NothingToSpeakError
from audiopd.synthesis.report import verdict_to_dict

if TYPE_CHECKING:
    from audiopd.text.lexicon import Lexicon

PARALLEL = "parallel"
SERIAL = "serial"
FULL = "full"
REPAIR = "repair"
MODES = ("auto", PARALLEL, SERIAL)

# checker(audio, sample_rate, text, durations_s=..., tokens=..., confidence=..., token_rate=...) -> verdict
Checker = Callable[..., Any]

# Delivered audio never exceeds this peak (see Renderer.to_audio).
PEAK_LIMIT = 0.95


@dataclass(frozen=True)
class Stage:
    mode: str  # "parallel" | "serial"
    kind: str  # "full" | "repair"
    steps: int | None  # level-0 step budget (None for serial)


@dataclass
class Attempt:
    mode: str
    kind: str
    max_steps: int | None
    steps: int  # level-0 steps actually run (serial: one per frame)
    forward_passes: int  # of the whole (sub-)batch this item was decoded in
    seconds: float  # batch decode time + this item's own codec decode and check
    run: int  # which decoder run (shared by the items decoded together)
    codes: Any  # [Q, T]: a torch tensor, or a NumPy array from the torch-free path (audiopd.lite)
    confidence: Any  # [T], likewise
    audio: np.ndarray
    verdict: dict | None = None
    repaired_spans: list[tuple[float, float]] = field(default_factory=list)

    @property
    def passed(self) -> bool | None:
        return None if self.verdict is None else bool(self.verdict["passed"])

    @property
    def score(self) -> float | None:
        return None if self.verdict is None else float(self.verdict["score"])

    def to_report(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode, "kind": self.kind, "steps": self.steps, "max_steps": self.max_steps,
            "forward_passes": self.forward_passes, "seconds": round(self.seconds, 4),
            "passed": self.passed, "score": self.score,
            "reasons": list(self.verdict["reasons"]) if self.verdict else [],
        }
        if self.kind == REPAIR:
            out["repaired_spans"] = [[round(a, 3), round(b, 3)] for a, b in self.repaired_spans]
        return out


@dataclass
class Item:
    """One chunk to synthesise: its text (the checker's reference), phoneme ids and speaker."""

    text: str
    ids: tuple[int, ...]
    speaker: int
    words: tuple[tuple[str, int, int], ...] = ()  # (word, first token, end token) for timestamps
    durations: np.ndarray | None = None  # frames per phoneme token, set by ``render_group``
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def frames(self) -> int:
        return int(self.durations.sum()) if self.durations is not None else 0

    def best(self) -> Attempt:
        """Highest verdict score, passing attempts first; the earlier (cheaper) one on ties."""
        if not self.attempts:
            raise RuntimeError("item has no attempts")
        key = [((a.passed is True), a.score if a.score is not None else -math.inf) for a in self.attempts]
        return self.attempts[max(range(len(key)), key=lambda i: (key[i], -i))]


def span_frames(spans: Sequence[tuple[float, float]], frame_rate: float, num_frames: int,
                margin_s: float) -> np.ndarray:
    """Bool mask [num_frames] of the frames inside the (widened) time spans."""
    mask = np.zeros(num_frames, dtype=bool)
    for a, b in spans:
        lo = max(0, int(math.floor((a - margin_s) * frame_rate)))
        hi = min(num_frames, int(math.ceil((b + margin_s) * frame_rate)))
        if hi > lo:
            mask[lo:hi] = True
    return mask


def seed_for(seed: int, group: int, stage: int) -> int:
    # Distinct, reproducible streams per (request seed, batch group, ladder stage).
    return (seed * 1_000_003 + group * 7_919 + stage * 104_729) % (2**63 - 1)


@dataclass
class GroupOutcome:
    first_path: str
    stages: list[Stage]
    budget_exhausted: bool
    runs: dict[int, int]  # run id -> forward passes
    yielded: bool = False  # escalation stopped for the caller's other work (``escalate_until``), not its own budget


def fit_audio(audio: np.ndarray, num_frames: int, sample_rate: int, frame_rate: float) -> np.ndarray:
    """A codec's output for ``num_frames`` frames as delivered: 1-D float32, exactly the frames' worth of samples,
    peaks above ``PEAK_LIMIT`` scaled down."""
    want = int(round(num_frames * sample_rate / frame_rate))
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    peak = float(np.abs(audio).max()) if audio.size else 0.0
    if peak > PEAK_LIMIT:
        # The vocoder can overshoot full scale where the teachers peak at ~0.8; a 16-bit file would clip.
        # Documented normalisation: such a chunk is scaled down to PEAK_LIMIT, never hard-clipped.
        audio = audio * np.float32(PEAK_LIMIT / peak)
    if audio.size >= want:
        return audio[:want].copy()
    return np.pad(audio, (0, want - audio.size))


def check_audio(checker: Checker, audio: np.ndarray, item: Item, tokens: np.ndarray, confidence: np.ndarray, *,
                sample_rate: int, frame_rate: float) -> dict:
    """The checker's verdict on one attempt as a report dict; audio it cannot even score is a failed attempt."""
    try:
        verdict = checker(audio, sample_rate, item.text, durations_s=item.durations / frame_rate, tokens=tokens,
                          confidence=confidence, token_rate=frame_rate)
    except AudiopdError as exc:
        # Audio the checker cannot even score is a failed attempt (so auto mode escalates), not a
        # crash of the whole request, and certainly not a pass.
        return {"passed": False, "score": 0.0, "reasons": [f"checker could not score the audio: {exc}"],
                "bad_spans": []}
    return verdict_to_dict(verdict)


def text_items(text: str, speaker: int, max_chunk_chars: int, *, weak_forms: bool = False,
               lexicon: Lexicon | None = None) -> list[Item]:
    """The chunks of ``text`` to speak as ``speaker``, phonemized (``weak_forms``: the voice's own labels,
    ``VoiceInfo.weak_forms``; ``lexicon``: the user's pronunciations), with their words' token spans (for
    timestamps); unspeakable chunks are skipped, all-unspeakable raises."""
    from audiopd.text import check_word_limits, chunk_text, phonemize

    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    check_word_limits(text, lexicon)  # on the whole text: chunking would cut a 3,000-letter "word" into pieces
    out = []
    for chunk in chunk_text(text, max_chunk_chars):
        try:
            ph = phonemize(chunk, weak_forms=weak_forms, lexicon=lexicon)
        except NothingToSpeakError:
            continue  # e.g. a lone "***" between sentences
        words = tuple((w.word, w.start, w.end) for w in ph.words)
        out.append(Item(text=chunk, ids=ph.ids, speaker=speaker, words=words))
    if not out:
        phonemize(text, lexicon=lexicon)  # raises the specific reason (empty, only symbols, unsupported script)
        raise NothingToSpeakError("text contains no speakable words")
    return out


def check_durations(item: Item, *, speed: float, max_token_s: float, frame_rate: float) -> None:
    """Refuse an item whose predicted durations average more than ``max_token_s`` / ``speed`` per phoneme token
    (``SynthesisConfig.max_token_s`` says why): a broken duration predictor, not a long text."""
    per_token_s = max_token_s / float(speed)
    if item.frames > per_token_s * frame_rate * len(item.ids):
        raise ArtifactError(f"the voice predicted {item.frames / frame_rate:.0f} s for {len(item.ids)} "
                            f"phoneme tokens ({len(item.text)} characters) at speed {speed:g}, more than "
                            f"{per_token_s:g} s per token; its duration predictor looks broken")
