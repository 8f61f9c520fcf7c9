"""Phone segments from pocketsphinx's forced alignment and from Piper's own durations, and their agreement.

Both become (phone, start_s, end_s) segments in the flite corpus's convention (lower-case ARPAbet, ``pau`` for
silence), so ``recipes/corpus/03_durations.py``'s ``token_durations`` (an edit-distance DP onto audiopd's
frontend tokens, the FastSpeech 2 "external aligner" step) turns either into per-token durations that sum to
the audio length. The agreement of the two on Piper joe's audio is the check of the aligner on natural speech.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

SILENCE = "pau"
SILENCE_TOKENS = frozenset({"^", "$", "_", ",", ".", "?", "!", ";", ":"})  # audiopd tokens that are no phone
# espeak-ng's en-us IPA (what Piper speaks) -> ARPAbet. Two-symbol diphthongs and affricates first.
IPA_PAIRS = {"eɪ": "ey", "aɪ": "ay", "aʊ": "aw", "oʊ": "ow", "ɔɪ": "oy", "tʃ": "ch", "dʒ": "jh", "əʊ": "ow"}
IPA_SINGLE = {
    "ə": "ah", "ɐ": "ah", "ʌ": "ah", "æ": "ae", "ɑ": "aa", "ɒ": "aa", "ɔ": "ao", "ɛ": "eh", "ɪ": "ih", "ᵻ": "ih",
    "i": "iy", "ʊ": "uh", "u": "uw", "ɜ": "er", "ɚ": "er", "ɝ": "er", "e": "ey", "o": "ow", "a": "aa",
    "p": "p", "b": "b", "t": "t", "d": "d", "k": "k", "ɡ": "g", "g": "g", "f": "f", "v": "v", "θ": "th",
    "ð": "dh", "s": "s", "z": "z", "ʃ": "sh", "ʒ": "zh", "h": "hh", "m": "m", "n": "n", "ŋ": "ng", "l": "l",
    "ɫ": "l", "ɹ": "r", "r": "r", "w": "w", "j": "y", "ɾ": "d", "ʔ": "t", "x": "k", "ç": "hh",
}
PIPER_PAUSES = frozenset("^$.,?!;:—…")
MODIFIERS_NEXT = frozenset("ˈˌ")       # stress marks: their time belongs to the syllable they open
MODIFIERS_PREV = frozenset("ːˑ\u0329\u0303")  # length, syllabic, nasal marks: part of the phone before


def _corpus_durations():
    path = Path(__file__).resolve().parent.parent / "corpus" / "03_durations.py"
    spec = importlib.util.spec_from_file_location("corpus_03_durations", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


_CORPUS03 = None


def token_durations(tokens: Sequence[str], segments: Sequence[tuple[str, float, float]], seconds: float):
    """The corpus recipe's DP: segments -> durations of audiopd's tokens (they sum to ``seconds``)."""
    global _CORPUS03
    if _CORPUS03 is None:
        _CORPUS03 = _corpus_durations()
    return _CORPUS03.token_durations(list(tokens), list(segments), seconds)


def _pause_merged(segs: list[list]) -> list[tuple[str, float, float]]:
    out: list[list] = []
    for seg in segs:
        if out and seg[0] == SILENCE and out[-1][0] == SILENCE:
            out[-1][2] = seg[2]
        elif seg[2] > seg[1] or seg[0] != SILENCE:
            out.append(list(seg))
    return [(p, round(s, 5), round(e, 5)) for p, s, e in out]


def sphinx_segments(alignment, seconds: float) -> list[tuple[str, float, float]]:
    """Phones of a ``audiopd.checker.sphinx.WordAlignment``; silences and gaps become ``pau`` up to ``seconds``."""
    segs: list[list] = []
    t = 0.0
    for word in alignment.words:
        for ph in word.phones:
            if ph.start > t + 1e-6:
                segs.append([SILENCE, t, ph.start])
            name = ph.phone.lower()
            segs.append([SILENCE if name in ("sil", "+spn+", "+nsn+") else name, ph.start, ph.end])
            t = ph.end
    if seconds > t + 1e-6:
        segs.append([SILENCE, t, seconds])
    return _pause_merged(segs)


def piper_segments(durations: Sequence[tuple[str, float]]) -> list[tuple[str, float, float]]:
    """Piper's (IPA symbol, seconds) list -> ARPAbet segments.

    Piper times every phoneme id (its own id plus the pad after it), stress and length marks included: a stress
    mark's time goes to the phone after it, a length mark's to the phone before. A word space's time goes to the
    phone before it (it is no pause in continuous speech); ``^ $`` and punctuation are pauses.
    """
    items = [(str(p), float(d)) for p, d in durations]
    segs: list[list] = []
    carry = 0.0
    t = 0.0
    k = 0
    while k < len(items):
        sym, dur = items[k]
        pair = sym + items[k + 1][0] if k + 1 < len(items) else ""
        if pair in IPA_PAIRS:
            name, dur, step = IPA_PAIRS[pair], dur + items[k + 1][1], 2
        elif sym in MODIFIERS_NEXT:
            carry += dur
            t += dur
            k += 1
            continue
        elif sym in MODIFIERS_PREV or sym == " " or (sym not in IPA_SINGLE and sym not in PIPER_PAUSES):
            if segs:
                segs[-1][2] += dur
            else:
                carry += dur
            t += dur
            k += 1
            continue
        else:
            name, step = (SILENCE if sym in PIPER_PAUSES else IPA_SINGLE[sym]), 1
        start = t - carry
        t += dur
        segs.append([name, start, t])
        carry = 0.0
        k += step
    if carry and segs:
        segs[-1][2] += carry
    return _pause_merged(segs)


def agreement(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Boundary agreement of two duration lists over the same tokens: median, p90 and share within 20 ms."""
    if len(a) != len(b):
        raise ValueError(f"duration lists differ in length: {len(a)} vs {len(b)}")
    ea, eb = np.cumsum(a)[:-1], np.cumsum(b)[:-1]
    if ea.size == 0:
        return {"boundaries": 0, "median_ms": 0.0, "p90_ms": 0.0, "within_20ms": 1.0}
    diff = np.abs(ea - eb) * 1000.0
    return {"boundaries": int(diff.size), "median_ms": round(float(np.median(diff)), 2),
            "p90_ms": round(float(np.percentile(diff, 90)), 2), "within_20ms": round(float((diff <= 20).mean()), 4)}
