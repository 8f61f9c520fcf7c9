"""The phoneme/token inventory shared by the frontend, the models and their artifacts.

Layout (ids are positions in ``SYMBOLS``):

* ``<pad>`` at id 0, so zero-padded id tensors are padding by construction.
* ``^`` utterance start and ``$`` utterance end. They absorb leading/trailing silence so the aligner
  never has to stretch a real phone over silence.
* ``_`` word boundary, usually 0 frames long; it lets a duration model put a short pause between words.
* Pause/punctuation tokens ``, . ? ! ; :``. They replace a word boundary where punctuation stands,
  so pauses and sentence-final prosody survive phonemisation.
* The 24 ARPAbet consonants and the 15 ARPAbet vowels with lexical stress 0/1/2, exactly the
  inventory of the CMU Pronouncing Dictionary (39 phones), so dictionary output needs no mapping.

Model artifacts record ``INVENTORY_VERSION``; bump it whenever ``SYMBOLS`` changes, because ids of a
trained embedding table silently mean different phones otherwise.
"""

from __future__ import annotations

PAD = "<pad>"
BOS = "^"
EOS = "$"
WORD_BOUNDARY = "_"
PUNCTUATION: tuple[str, ...] = (",", ".", "?", "!", ";", ":")

CONSONANTS: tuple[str, ...] = (
    "B", "CH", "D", "DH", "F", "G", "HH", "JH", "K", "L", "M", "N",
    "NG", "P", "R", "S", "SH", "T", "TH", "V", "W", "Y", "Z", "ZH",
)  # fmt: skip
VOWELS: tuple[str, ...] = (
    "AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW", "OY", "UH", "UW",
)  # fmt: skip
STRESSES: tuple[str, ...] = ("0", "1", "2")

SYMBOLS: tuple[str, ...] = (
    (PAD, BOS, EOS, WORD_BOUNDARY)
    + PUNCTUATION
    + CONSONANTS
    + tuple(v + s for v in VOWELS for s in STRESSES)
)
SYMBOL_TO_ID: dict[str, int] = {s: i for i, s in enumerate(SYMBOLS)}
PAD_ID = 0
NUM_SYMBOLS = len(SYMBOLS)
INVENTORY_VERSION = 1

_PHONES = frozenset(CONSONANTS) | frozenset(v + s for v in VOWELS for s in STRESSES)
_VOWEL_SET = frozenset(VOWELS)

assert SYMBOLS[PAD_ID] == PAD and len(set(SYMBOLS)) == NUM_SYMBOLS == 79


def is_phone(sym: str) -> bool:
    """True for an ARPAbet phone of the inventory (consonant or stressed vowel), False for specials."""
    return sym in _PHONES


def is_vowel(sym: str) -> bool:
    """True for a stressed ARPAbet vowel of the inventory (e.g. ``AA1``)."""
    return sym in _PHONES and sym[:-1] in _VOWEL_SET


def base_phone(sym: str) -> str:
    """Strip the stress digit of a vowel (``AA1`` -> ``AA``); other symbols come back unchanged."""
    if sym and sym[-1] in "012" and sym[:-1] in _VOWEL_SET:
        return sym[:-1]
    return sym


def symbols_to_ids(symbols: tuple[str, ...] | list[str]) -> tuple[int, ...]:
    """Map symbols to ids; an unknown symbol is a bug in the caller, so it raises ``KeyError``."""
    try:
        return tuple(SYMBOL_TO_ID[s] for s in symbols)
    except KeyError as exc:
        raise KeyError(f"symbol {exc.args[0]!r} is not in the inventory (version {INVENTORY_VERSION})") from None
