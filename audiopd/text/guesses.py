"""Where each word's phones come from, and the words the frontend has to guess.

A word's phones come from the user's lexicon (``audiopd.text.lexicon``), else from the CMU Pronouncing
Dictionary, else the G2P builds them (``audiopd.text.g2p``: a dictionary stem with a suffix or clitic rule, a
hyphenated word's parts, an acronym spelled out, letter-to-sound rules, which get ~1 word in 3 right). The guessed
words are the ones worth a listen before rendering thousands of files: ``guesses`` collects them over a text, and
``as_lexicon`` writes them in the lexicon's own file format, so that a user corrects the phones and passes the file
back with ``--lexicon`` (``audiopd phonemize --guesses``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from audiopd.errors import NothingToSpeakError, TextLimitError
from audiopd.text import g2p
from audiopd.text.frontend import phonemize
from audiopd.text.lexicon import Lexicon

LEXICON, DICTIONARY, GUESSED = "lexicon", "dictionary", "guessed"


@dataclass(frozen=True)
class WordPhones:
    word: str  # as the normaliser spells it out, lower case
    phones: tuple[str, ...]
    source: str  # LEXICON, DICTIONARY or GUESSED


def source_of(word: str, lexicon: Lexicon | None = None) -> str:
    """Where ``word``'s phones come from: the lexicon, the dictionary, or a guess of the G2P."""
    if lexicon and word in lexicon:
        return LEXICON
    return DICTIONARY if g2p.lookup(word) else GUESSED


def word_phones(text: str, *, lexicon: Lexicon | None = None, weak_forms: bool = False) -> list[WordPhones]:
    """Each spoken word of ``text`` with its phones (as ``phonemize`` gives them) and their source."""
    ph = phonemize(text, weak_forms=weak_forms, lexicon=lexicon)
    return [WordPhones(w.word, ph.tokens[w.start:w.end], source_of(w.word, lexicon)) for w in ph.words]


def guesses(lines: Iterable[str], *, lexicon: Lexicon | None = None) -> dict[str, tuple[tuple[str, ...], int]]:
    """The guessed words of ``lines`` (each phonemized on its own; a line with nothing to say is skipped) -> their
    phones and how often each occurs, in order of first occurrence. A word over the frontend's limits raises
    ``TextLimitError`` naming its line."""
    seen: dict[str, tuple[tuple[str, ...], int]] = {}
    g2p.load_dictionary()  # many lines of few words each: parse the dictionary once (~0.3 s), never scan it per word
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            words = word_phones(line, lexicon=lexicon)
        except NothingToSpeakError:
            continue
        except TextLimitError as exc:
            raise TextLimitError(f"line {n}: {exc}") from None
        for w in words:
            if w.source == GUESSED:
                phones, count = seen.get(w.word, (w.phones, 0))
                seen[w.word] = (phones, count + 1)
    return seen


def as_lexicon(found: dict[str, tuple[tuple[str, ...], int]]) -> str:
    """``guesses`` as a lexicon file: ``WORD  PH ON ES  # N x``, most frequent first, under a comment that says
    what to do with it (an empty result is the comment alone)."""
    head = (f";;; {len(found)} word(s) the dictionary lacks, with the phones the G2P guessed: check each (ARPAbet, "
            "stress digits on vowels), fix the wrong ones, then pass this file as --lexicon\n")
    order = sorted(found.items(), key=lambda kv: -kv[1][1])  # stable: first occurrence breaks ties
    width = max((len(w) for w in found), default=0)
    return head + "".join(f"{w.upper():<{width}}  {' '.join(p)}  # {n}x\n" for w, (p, n) in order)
