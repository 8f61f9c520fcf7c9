"""Sentence splitting (abbreviation-aware) and chunking limits."""

from __future__ import annotations

import pytest

from audiopd.text import chunk_text, split_sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("Dr. Smith met Mr. Jones. They talked.", ["Dr. Smith met Mr. Jones.", "They talked."]),
        ("Pi is 3.14 today. Yes.", ["Pi is 3.14 today.", "Yes."]),
        ("Fruit, e.g. Apples. More.", ["Fruit, e.g. Apples.", "More."]),
        ("J. K. Rowling wrote it. Fine.", ["J. K. Rowling wrote it.", "Fine."]),
        ("We left at 3 p.m. on Monday.", ["We left at 3 p.m. on Monday."]),
        ("Apples, pears, etc. Then more.", ["Apples, pears, etc.", "Then more."]),
        ('He said "Stop." Then left.', ['He said "Stop."', "Then left."]),
        ("Wait... what?! Really.", ["Wait... what?!", "Really."]),
        ("No. 5 is here. Go to St. Louis.", ["No. 5 is here.", "Go to St. Louis."]),
        ("First para\n\nsecond para", ["First para", "second para"]),
        ("  spaced   out  ", ["spaced out"]),
        ("", []),
        ("   ", []),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


LONG = (
    "The quick brown fox jumps over the lazy dog. "
    "A much longer sentence follows, with several clauses; each of them is separated by punctuation: "
    "commas, semicolons and colons, so that the chunker has somewhere sensible to cut it. "
    + "word " * 80
    + "Supercalifragilisticexpialidocious" * 3
    + ". Short end."
)


@pytest.mark.parametrize("max_chars", [1, 10, 25, 60, 120, 300, 10_000])
def test_chunks_respect_limit_and_lose_nothing(max_chars: int) -> None:
    chunks = chunk_text(LONG, max_chars=max_chars)
    assert chunks and all(0 < len(c) <= max_chars for c in chunks)
    assert all(c == c.strip() for c in chunks)
    # Nothing lost or reordered: the chunks re-join to the original modulo whitespace.
    assert "".join("".join(chunks).split()) == "".join(LONG.split())


def test_chunks_prefer_sentence_then_clause_boundaries() -> None:
    chunks = chunk_text(LONG, max_chars=120)
    assert chunks[0].startswith("The quick brown fox jumps over the lazy dog.")
    # The clause-rich sentence is cut after its punctuation, not mid-clause.
    clause_chunks = [c for c in chunks if "semicolons" in c or "several clauses" in c]
    assert all(c.endswith((",", ";", ":", ".")) for c in clause_chunks)
    assert chunks[-1].endswith("Short end.")


def test_short_text_is_one_chunk() -> None:
    assert chunk_text("Hello there. How are you?") == ["Hello there. How are you?"]


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, "300"])
def test_bad_max_chars(bad: object) -> None:
    with pytest.raises(ValueError, match="max_chars"):
        chunk_text("hi", max_chars=bad)  # type: ignore[arg-type]


def test_chunks_are_balanced_not_greedy() -> None:
    # Sentences of 28, 28, 30, 29 characters: greedy packing at 100 gives 88 + 29, balanced 57 + 60.
    sentences = [f"Sentence number {w} is here." for w in ("one", "two", "three", "four")]
    text = " ".join(sentences)
    chunks = chunk_text(text, max_chars=100)
    assert chunks == [" ".join(sentences[:2]), " ".join(sentences[2:])]
    # A long sentence cut at clauses (31, 30, 30 characters) is balanced too: 31 + 61, not greedy's 62 + 30.
    clauses = "Alpha beta gamma delta epsilon, zeta eta theta iota kappa lam, mu nu xi omicron pi rho sigma."
    parts = chunk_text(clauses, max_chars=70)
    assert [len(p) for p in parts] == [31, 61]
    assert "".join("".join(parts).split()) == "".join(clauses.split())
