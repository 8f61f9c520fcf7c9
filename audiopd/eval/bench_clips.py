"""Clean clips for the checker benchmark: flite renderings, a voice's own parallel output, or its teachers' audio.

Both sources speak the same sentences: plain sentences of Debian's fortune files, split by a
content hash into a *calibration* part (one in four; used to set checker thresholds) and a
*benchmark* part (the rest), so rates reported on the benchmark part are measured on text the
thresholds never saw. Speakers go round-robin (flite voices slt, rms, awb, kal16; a voice's
``Synthesizer.voices``), and clips shorter than ``min_seconds`` are skipped because the injected
faults (``audiopd.eval.faults``) need room inside the speech.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FORTUNE_DIR = Path("/usr/share/games/fortunes")  # Debian's fixed install location for fortune data
FORTUNE_FILES = ("fortunes", "literature", "riddles", "wisdom", "people", "platitudes", "science")
FLITE_VOICES: tuple[str, ...] = ("slt", "rms", "awb", "kal16")
_ALLOWED = re.compile(r"^[A-Z][A-Za-z ,;:'-]+[a-z][.?!]$")
_SPLIT = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")


@dataclass(frozen=True)
class Clip:
    """A clean rendering: text, speaker, samples and rate."""

    text: str
    voice: str
    audio: np.ndarray
    sample_rate: int

    @property
    def seconds(self) -> float:
        return len(self.audio) / self.sample_rate


def _split_of(sentence: str) -> str:
    """Deterministic calibration/benchmark split by content hash (1 in 4 goes to calibration)."""
    return "calib" if hashlib.sha1(sentence.encode()).digest()[0] % 4 == 0 else "bench"


def load_sentences(split: str, *, min_words: int = 7, max_words: int = 22,
                   root: Path = FORTUNE_DIR) -> list[str]:
    """Plain sentences (letters and light punctuation only) of ``split`` ("calib" or "bench")."""
    if split not in ("calib", "bench"):
        raise ValueError(f"split must be 'calib' or 'bench', not {split!r}")
    seen: set[str] = set()
    out: list[str] = []
    for name in FORTUNE_FILES:
        path = root / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="latin-1")
        for entry in re.split(r"^%\s*$", text, flags=re.MULTILINE):
            lines = [ln.strip() for ln in entry.splitlines() if ln.strip() and not ln.strip().startswith("--")]
            for sent in _SPLIT.split(" ".join(lines)):
                sent = re.sub(r"\s+", " ", sent).strip()
                if not _ALLOWED.match(sent) or sent in seen:
                    continue
                if not min_words <= len(sent.split()) <= max_words:
                    continue
                seen.add(sent)
                if _split_of(sent) == split:
                    out.append(sent)
    if not out:
        raise FileNotFoundError(f"no sentences found under {root} (is the 'fortunes' package installed?)")
    # A fixed shuffle so that the first n sentences mix sources and lengths.
    return sorted(out, key=lambda s: hashlib.sha1(("order:" + s).encode()).hexdigest())


def render(text: str, voice: str, workdir: Path) -> Clip:
    """Render ``text`` with flite ``voice`` to a temporary WAV and read it back."""
    import soundfile as sf

    out = workdir / f"render_{voice}.wav"
    subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(out)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    audio, rate = sf.read(str(out), dtype="float32")
    return Clip(text, voice, audio, int(rate))


def _round_robin(speakers: Sequence[Any], sentences: Sequence[str], n: int, speak: Callable[[str, Any], Clip], *,
                 min_seconds: float, log: Callable[[str], None] | None = None, what: str = "clips") -> list[Clip]:
    """``n`` clips of at least ``min_seconds``: sentence after sentence, spoken by ``speakers`` in turn."""
    out: list[Clip] = []
    for sent in sentences:
        clip = speak(sent, speakers[len(out) % len(speakers)])
        if clip.seconds >= min_seconds:
            out.append(clip)
            if log is not None:
                log(f"{what}: {len(out)}/{n}")
        if len(out) >= n:
            break
    return out


def flite_clips(split: str, n: int, workdir: Path, *, min_seconds: float = 2.0, offset: int = 0) -> list[Clip]:
    """``n`` clean flite clips of ``split`` (from sentence ``offset`` on), voices round-robin."""
    return _round_robin(FLITE_VOICES, load_sentences(split)[offset:], n,
                        lambda sent, voice: render(sent, voice, workdir), min_seconds=min_seconds)


def peer_clips(peers: Sequence[Any], split: str, n: int, *, min_seconds: float = 2.0, offset: int = 0,
               sentences: Sequence[str] | None = None, log: Callable[[str], None] | None = None) -> list[Clip]:
    """``n`` clean clips spoken by natural teachers (``audiopd.eval.peers``: ``.name``, ``.synthesize(text)``),
    round-robin like the flite voices; ``sentences`` replaces the fortune sentences of ``split`` (tests)."""
    if not peers:
        raise ValueError("peer_clips needs at least one peer")

    def speak(sent: str, peer: Any) -> Clip:
        got = peer.synthesize(sent)
        return Clip(sent, peer.name, np.asarray(got.audio, dtype=np.float32), int(got.sample_rate))

    pool = list(load_sentences(split) if sentences is None else sentences)[offset:]
    return _round_robin(peers, pool, n, speak, min_seconds=min_seconds, log=log, what="teacher clips")


def voice_clips(tts: Any, split: str, n: int, *, min_seconds: float = 2.0, offset: int = 0, seed: int = 0,
                batch: int = 4, sentences: Sequence[str] | None = None,
                log: Callable[[str], None] | None = None) -> list[Clip]:
    """``n`` clean clips of a loaded ``Synthesizer``'s own parallel output, speakers round-robin.

    Candidate sentence k (from ``offset`` on) goes to speaker ``k % len(tts.voices)``; windows of
    up to ``batch`` sentences per speaker are decoded together (``synthesize_batch``, mode
    "parallel", unchecked, seed ``seed + k`` of the window's first sentence), and no more
    sentences are decoded than still needed. ``sentences`` replaces the fortune sentences of
    ``split`` (tests).
    """
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    pool = list(load_sentences(split) if sentences is None else sentences)[offset:]
    speakers: list[str | int] = list(tts.voices) or [0]
    out: list[Clip] = []
    k = 0
    while len(out) < n and k < len(pool):
        window = pool[k : k + min(batch * len(speakers), n - len(out))]
        by_speaker: dict[str | int, list[int]] = {}
        for j in range(len(window)):
            by_speaker.setdefault(speakers[(k + j) % len(speakers)], []).append(j)
        made: dict[int, Any] = {}
        for sp, idx in by_speaker.items():
            results = tts.synthesize_batch([window[j] for j in idx], voice=sp, mode="parallel", check=False,
                                           seed=seed + k)
            made.update(zip(idx, results))
        for j, text in enumerate(window):
            res = made[j]
            if res.duration_s >= min_seconds and len(out) < n:
                out.append(Clip(text, str(speakers[(k + j) % len(speakers)]), res.audio, int(res.sample_rate)))
        k += len(window)
        if log is not None:
            log(f"voice clips: {len(out)}/{n} from {k} sentences")
    return out
