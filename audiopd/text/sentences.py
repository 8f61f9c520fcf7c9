"""Sentence splitting and chunking of raw (un-normalised) English text for synthesis.

Long inputs are synthesised chunk by chunk: a parallel (masked) decoder is trained on utterances of
bounded length and degrades on much longer ones, and sentence boundaries are where a listener
expects a pause anyway, so a cut there is inaudible.

``split_sentences`` splits after ``.``, ``?`` or ``!`` (plus closing quotes/brackets) followed by
whitespace, and at blank lines. A period does *not* end a sentence when it belongs to a title or
abbreviation that precedes something (Mr. Dr. St. No. vs. e.g. ...), to a single-letter initial
("J. K. Rowling"), to a number ("3.14" has no following space anyway), or when the next word starts
with a lower-case letter ("approx. five", "etc. and more").

``chunk_text`` packs consecutive sentences into as few chunks of at most ``max_chars`` characters as
possible, balanced so that the longest chunk is as short as possible.
A sentence longer than that is cut after ``, ; :``; a clause still too long is cut at word
boundaries; a single word longer than ``max_chars`` (a pathological token) is cut hard. Whitespace
runs collapse to single spaces; no other character is changed or lost.
"""

from __future__ import annotations

import re

# Lower-case, without the final period. These precede a name or number, so a period after them
# almost never ends a sentence even when a capital follows ("Dr. Smith", "No. 5").
_NEVER_FINAL = frozenset(
    "mr mrs ms dr prof st mt no nos vs fig figs vol gov gen capt lt col sgt rev hon pres e.g i.e cf approx ca".split()
)

_BOUNDARY = re.compile(r"([.?!]+)([\"')\]\u201d\u2019]*)(\s+)")
_PARAGRAPH = re.compile(r"\n\s*\n")
_LAST_WORD = re.compile(r"(\S*)$")
_NEXT_START = re.compile(r"[\"'(\[\u201c\u2018]*[A-Z0-9]")


def _ends_sentence(text: str, mark: str, mark_start: int, next_start: int) -> bool:
    following = text[next_start : next_start + 1]  # slices stay short: long inputs must stay linear
    if not following:
        return True
    if "?" in mark or "!" in mark:
        return True
    if mark != "." and not mark.startswith("..."):
        return True
    # The word the period belongs to: the run of non-space characters before it.
    word = _LAST_WORD.search(text, max(0, mark_start - 40), mark_start).group(1).lstrip("\"'([\u201c\u2018").lower()
    if word in _NEVER_FINAL:
        return False
    if re.fullmatch(r"[a-z]", word):  # single-letter initial
        return False
    # The next sentence starts with a capital, a digit, or an opening quote/bracket.
    return _NEXT_START.match(text, next_start) is not None


def split_sentences(text: str) -> list[str]:
    """Split raw English ``text`` into sentences (abbreviation-aware), stripped, none empty."""
    if not isinstance(text, str):
        raise TypeError(f"split_sentences expects str, got {type(text).__name__}")
    sentences: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        start = 0
        for m in _BOUNDARY.finditer(paragraph):
            if _ends_sentence(paragraph, m.group(1), m.start(1), m.end()):
                sentences.append(paragraph[start : m.end(2)])
                start = m.end()
        sentences.append(paragraph[start:])
    return [s for s in (" ".join(s.split()) for s in sentences) if s]


def _greedy(pieces: list[str], max_chars: int) -> list[str]:
    """Join consecutive pieces with spaces while the result stays within ``max_chars``."""
    chunks: list[str] = []
    for piece in pieces:
        if chunks and len(chunks[-1]) + 1 + len(piece) <= max_chars:
            chunks[-1] += " " + piece
        else:
            chunks.append(piece)
    return chunks


def _pack(pieces: list[str], max_chars: int) -> list[str]:
    """As few chunks as greedy packing makes, but balanced: the longest chunk is as short as it can be.

    Greedy packing alone leaves a long chunk and a short tail (240 + 60 characters): the long one is
    outside most training lengths, and a batch of chunks is padded to it, so every decoder pass and
    serial step pays for it. Greedy packing under a limit L gives the fewest chunks any packing can
    under L, so the smallest L that keeps the greedy count is found by bisection (linear per try).
    """
    chunks = _greedy(pieces, max_chars)
    if len(chunks) < 2:
        return chunks
    lo, hi = max(len(p) for p in pieces), max_chars
    while lo < hi:
        mid = (lo + hi) // 2
        if len(_greedy(pieces, mid)) <= len(chunks):
            hi = mid
        else:
            lo = mid + 1
    return _greedy(pieces, lo)


def _split_words(clause: str, max_chars: int) -> list[str]:
    pieces: list[str] = []
    for word in clause.split():
        # A single word over the limit cannot be cut anywhere sensible; cut it hard.
        pieces += [word[i : i + max_chars] for i in range(0, len(word), max_chars)]
    return _pack(pieces, max_chars)


def _split_long_sentence(sentence: str, max_chars: int) -> list[str]:
    pieces: list[str] = []
    for clause in re.split(r"(?<=[,;:])\s+", sentence):
        pieces += [clause] if len(clause) <= max_chars else _split_words(clause, max_chars)
    return _pack(pieces, max_chars)


def chunk_text(text: str, max_chars: int = 300) -> list[str]:
    """Cut raw ``text`` into chunks of at most ``max_chars`` characters at the most natural boundary.

    Sentences are packed into the fewest chunks, balanced in length; an over-long sentence is cut at
    ``, ; :``, then at spaces (balanced the same way).
    Returns ``[]`` for text without any non-space character. ``max_chars`` must be positive.
    """
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ValueError(f"max_chars must be a positive integer, got {max_chars!r}")
    pieces: list[str] = []
    for sentence in split_sentences(text):
        pieces += [sentence] if len(sentence) <= max_chars else _split_long_sentence(sentence, max_chars)
    return _pack(pieces, max_chars)
