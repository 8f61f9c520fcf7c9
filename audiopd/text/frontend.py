"""Text -> phoneme token sequence, the input of every audiopd acoustic model.

Sequence rule (``phonemize``): ``^``, the phones of word 1, then between two words either ``_`` or,
where punctuation stands, that punctuation token instead (it is the boundary, and a longer pause);
after the last word its punctuation if any, then ``$``. Example: "Hi, Bob." ->
``^ HH AY1 , B AA1 B . $``. Leading punctuation is dropped; runs of punctuation were already
collapsed to the strongest mark by the normaliser.

Words are the normaliser's spoken words ("$5" -> "five dollars"); each ``WordSpan`` gives a word's
token range, so aligners, checkers and ASR comparisons can map phones back to words.

Text with nothing speakable raises ``NothingToSpeakError``. Mixed text keeps what can be spoken:
characters of unsupported scripts (Chinese, Arabic, Cyrillic, ...) are dropped by the normaliser.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from audiopd.errors import NothingToSpeakError, TextLimitError
from audiopd.text import g2p
from audiopd.text.g2p import MAX_SPELLED_LETTERS, MAX_WORD_LETTERS, WEAK_FORMS, g2p_word, is_spelled
from audiopd.text.normalize import normalize_text
from audiopd.text.symbols import BOS, EOS, PUNCTUATION, WORD_BOUNDARY, symbols_to_ids

if TYPE_CHECKING:
    from audiopd.text.lexicon import Lexicon


@dataclass(frozen=True)
class WordSpan:
    """One spoken word and its token range ``[start, end)`` in ``Phonemized.tokens``."""

    word: str
    start: int
    end: int


@dataclass(frozen=True)
class Phonemized:
    """The frontend's output for one utterance."""

    text: str
    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    words: tuple[WordSpan, ...]


_ITEM = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*|[.,?!;:]")
_PUNCT = frozenset(PUNCTUATION)


def _items(normalized: str) -> list[str]:
    return _ITEM.findall(normalized)


def spoken_words(text: str) -> list[str]:
    """Lower-case spoken words of ``text`` without punctuation, as a WER reference/hypothesis.

    Unlike ``phonemize`` this never raises for unspeakable text: an empty ASR hypothesis is ``[]``.
    """
    return [item.lower() for item in _items(normalize_text(text)) if item not in _PUNCT]


def _scripts(text: str) -> list[str]:
    """Names of the non-Latin scripts in ``text`` (first word of the Unicode character name)."""
    found: list[str] = []
    for ch in text:
        if ch.isalpha() and not ("a" <= ch.lower() <= "z"):
            name = unicodedata.name(ch, "UNKNOWN").split(" ")[0]
            if name != "LATIN" and name not in found:
                found.append(name)
    return found


def _nothing_to_speak(text: str) -> NothingToSpeakError:
    if not text:
        return NothingToSpeakError("text is empty; there is nothing to speak")
    if not text.strip():
        return NothingToSpeakError("text contains only whitespace; there is nothing to speak")
    scripts = _scripts(text)
    if scripts:
        names = ", ".join(s if s == "CJK" else s.title() for s in scripts[:3])
        return NothingToSpeakError(
            f"text has no English (Latin-script) words to speak; unsupported script(s): {names}"
        )
    shown = text if len(text) <= 40 else text[:37] + "..."
    return NothingToSpeakError(f"text {shown!r} contains no speakable words (only symbols or punctuation)")


_SENTENCE_END = frozenset(".!?")


def check_word_limits(text: str, lexicon: Lexicon | None = None) -> None:
    """Raise ``TextLimitError`` if a word of ``text`` is over the limits (before chunking splits it); a word of
    ``lexicon`` is never spelled out, so only the length limit holds for it."""
    for n, item in enumerate(w for w in _items(normalize_text(text)) if w not in _PUNCT):
        _check_word(item, n, lexicon)


def _check_word(word: str, index: int, lexicon: Lexicon | None = None) -> None:
    letters = sum(c.isalpha() for c in word)
    shown = word if len(word) <= 24 else word[:21] + "..."
    if letters > MAX_WORD_LETTERS:
        raise TextLimitError(f"word {index + 1} ({shown!r}) has {letters:,} letters; words of more than "
                             f"{MAX_WORD_LETTERS} letters are refused (put spaces between the words)")
    if letters > MAX_SPELLED_LETTERS and is_spelled(word) and not (lexicon and word in lexicon):
        raise TextLimitError(f"word {index + 1} ({shown!r}) would be spelled out letter by letter ({letters} "
                             f"letters); at most {MAX_SPELLED_LETTERS} spelled letters per word are accepted")


def _is_initial_article(items: list[str], i: int, started: bool) -> bool:
    """Is ``items[i]`` a sentence-initial capital "A" that is the article, not the letter name?

    The G2P reads a lone capital as a letter name ("A B Smith", "vitamin A"), which is right
    mid-sentence, where the article is written "a". At a sentence start "A" is the article when
    a real word follows ("A cat", "A Tale"), not another initial ("A B Smith").
    """
    if items[i] != "A" or (started and items[i - 1] not in _SENTENCE_END):
        return False
    nxt = items[i + 1] if i + 1 < len(items) else ""
    return len(nxt) >= 2 and any(c.isalpha() for c in nxt) and not nxt.isupper()


def phonemize(text: str, *, weak_forms: bool = False, lexicon: Lexicon | None = None) -> Phonemized:
    """Normalise ``text`` and turn it into phoneme tokens, ids and word spans. ``weak_forms``: "to" and "for"
    take their reduced forms (``g2p.WEAK_FORMS``) where another word follows without punctuation, as a voice trained
    on such labels expects (``VoiceInfo.weak_forms``); at a phrase's end they keep the dictionary's strong form.
    ``lexicon``: the user's own pronunciations (``audiopd.text.lexicon``), which come before all of that.

    Raises ``NothingToSpeakError`` when no speakable word remains (empty, whitespace, only symbols,
    or only unsupported scripts); ``TextLimitError`` for a word over ``MAX_WORD_LETTERS`` letters or one
    that would be spelled out with more than ``MAX_SPELLED_LETTERS`` letters; ``TypeError`` when ``text``
    is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"phonemize expects str, got {type(text).__name__}")
    normalized = normalize_text(text)
    tokens: list[str] = [BOS]
    words: list[WordSpan] = []
    pending_punct: str | None = None
    items = list(_items(normalized))
    n_words = 0
    for n_words, item in enumerate((w for w in items if w not in _PUNCT), 1):
        _check_word(item, n_words - 1, lexicon)
    if n_words > g2p.SCAN_WORDS:  # a long text: parsing the pronouncing dictionary beats scanning it per word
        g2p.load_dictionary()
    for i, item in enumerate(items):
        if item in _PUNCT:
            if words:  # leading punctuation carries no pause worth a token
                pending_punct = item
            continue
        phones = lexicon.get(item) if lexicon else None
        if phones is None:
            phones = g2p_word("a" if _is_initial_article(items, i, bool(words)) else item)
            if weak_forms and item.lower() in WEAK_FORMS and i + 1 < len(items) and items[i + 1] not in _PUNCT:
                phones = WEAK_FORMS[item.lower()]
        if not phones:  # cannot happen after normalisation, but a word must never be empty
            continue
        if words:
            tokens.append(pending_punct or WORD_BOUNDARY)
        pending_punct = None
        start = len(tokens)
        tokens.extend(phones)
        words.append(WordSpan(word=item.lower(), start=start, end=len(tokens)))
    if not words:
        raise _nothing_to_speak(text)
    if pending_punct:
        tokens.append(pending_punct)
    tokens.append(EOS)
    return Phonemized(text=normalized, tokens=tuple(tokens), ids=symbols_to_ids(tokens), words=tuple(words))
