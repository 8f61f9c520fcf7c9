"""phonemize / spoken_words: sequence structure, word spans, and unspeakable input."""

from __future__ import annotations

import dataclasses

import pytest

from audiopd.errors import AudiopdError, NothingToSpeakError
from audiopd.text import NUM_SYMBOLS, SYMBOLS, Phonemized, phonemize, spoken_words
from audiopd.text.symbols import PUNCTUATION, is_phone


def test_exact_sequence() -> None:
    p = phonemize("Hi, Bob.")
    assert p.text == "Hi, Bob."
    assert p.tokens == ("^", "HH", "AY1", ",", "B", "AA1", "B", ".", "$")
    assert [SYMBOLS[i] for i in p.ids] == list(p.tokens)
    assert [(w.word, w.start, w.end) for w in p.words] == [("hi", 1, 3), ("bob", 4, 7)]


def test_word_boundary_and_no_final_punctuation() -> None:
    p = phonemize("hello world")
    assert p.tokens == ("^", "HH", "AH0", "L", "OW1", "_", "W", "ER1", "L", "D", "$")


@pytest.mark.parametrize(
    "text",
    ["Hello there, how are you?", "Dr. Smith paid $5 on 2024-03-05!", "It's 3:30 pm; see www.example.com.",
     "Zorblax the frobnicator said: NASA & the FBI.", "...leading punctuation", "Café Straße 42"],
)  # fmt: skip
def test_structure_invariants(text: str) -> None:
    p = phonemize(text)
    assert isinstance(p, Phonemized)
    assert p.tokens[0] == "^" and p.tokens[-1] == "$"
    assert len(p.ids) == len(p.tokens) and all(0 < i < NUM_SYMBOLS for i in p.ids)
    # Word spans tile the phones: every token between two words is exactly one boundary/pause token.
    assert p.words[0].start == 1
    for prev, nxt in zip(p.words, p.words[1:], strict=False):
        assert nxt.start == prev.end + 1
        assert p.tokens[prev.end] in ("_", *PUNCTUATION)
    tail = p.tokens[p.words[-1].end : -1]
    assert tail == () or (len(tail) == 1 and tail[0] in PUNCTUATION)
    for w in p.words:
        assert w.end > w.start and all(is_phone(t) for t in p.tokens[w.start : w.end])
    assert [w.word for w in p.words] == spoken_words(text)


def test_punctuation_replaces_boundary() -> None:
    p = phonemize("one; two: three? four! five.")
    between = [p.tokens[w.end] for w in p.words]
    assert between == [";", ":", "?", "!", "."]
    assert "_" not in p.tokens


def test_frozen() -> None:
    p = phonemize("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.text = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   \n\t", "whitespace"),
        ("*** ^^^ |||", "no speakable words"),
        ("...!?", "no speakable words"),
        ("\u4f60\u597d\u4e16\u754c", "CJK"),
        ("\u0645\u0631\u062d\u0628\u0627", "Arabic"),
        ("\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440", "Cyrillic"),
    ],
)
def test_nothing_to_speak(text: str, message: str) -> None:
    with pytest.raises(NothingToSpeakError, match=message) as info:
        phonemize(text)
    assert isinstance(info.value, AudiopdError)
    assert spoken_words(text) == []


def test_mixed_script_keeps_latin() -> None:
    p = phonemize("Hello \u4e16\u754c \u043c\u0438\u0440 world")
    assert [w.word for w in p.words] == ["hello", "world"]


def test_rejects_non_string() -> None:
    with pytest.raises(TypeError):
        phonemize(b"bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Hello, World!", ["hello", "world"]),
        ("It's $3.50.", ["it's", "three", "dollars", "and", "fifty", "cents"]),
        ("Dr. No", ["doctor", "no"]),
        ("at 7am", ["at", "seven", "a", "m"]),
    ],
)
def test_spoken_words(text: str, words: list[str]) -> None:
    assert spoken_words(text) == words


@pytest.mark.parametrize(
    "text, word_index, first_phone",
    [
        ("A cat sat.", 0, "AH0"),  # sentence-initial article
        ("It ran. A dog barked.", 2, "AH0"),  # article after a sentence end
        ("A Tale of Two Cities.", 0, "AH0"),  # capitalised title word still makes it the article
        ("A. B. Smith wrote it.", 0, "EY1"),  # an initial followed by another initial
        ("Plan A is fine.", 1, "EY1"),  # mid-sentence capital A is the letter
        ("Take vitamin A.", 2, "EY1"),
        ("A USA trip.", 0, "EY1"),  # followed by an acronym: read as letters (ambiguous; letter name kept)
    ],
)
def test_capital_a_article_or_letter(text: str, word_index: int, first_phone: str) -> None:
    ph = phonemize(text)
    w = ph.words[word_index]
    assert w.word == "a"
    assert ph.tokens[w.start] == first_phone


# ---- bounded work: words too long to be words are refused, never spoken for minutes ----------------
@pytest.mark.parametrize(
    "text, needle",
    [
        ("x" * 3000, "3,000 letters"),  # 3,000 letters without a space
        ("Say " + "ab" * 25 + " now.", "50 letters"),  # just over MAX_WORD_LETTERS, with vowels
        ("The code bcdfghjklmnpq is spelled.", "spelled out letter by letter (13 letters)"),
    ],
)
def test_unbounded_words_are_refused_with_one_line(text: str, needle: str) -> None:
    from audiopd.errors import TextLimitError

    with pytest.raises(TextLimitError, match=r"refused|at most") as err:
        phonemize(text)
    msg = str(err.value)
    assert needle in msg and "\n" not in msg and len(msg) < 200


@pytest.mark.parametrize(
    "text",
    [
        "Pneumonoultramicroscopicsilicovolcanoconiosis is a long word.",  # 45 letters: the longest coinage
        "Read xkcd and HTML daily.",  # short words spelled by letters stay fine
        "A " * 400 + "end.",  # many spelled letters as separate words are ordinary text
    ],
)
def test_long_but_real_words_still_speak(text: str) -> None:
    assert phonemize(text).words
