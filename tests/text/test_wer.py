"""WER: Levenshtein edits on normalised words, corpus-level averaging."""

from __future__ import annotations

import random

import pytest

from audiopd.text.wer import edit_ops, normalize_words, text_to_words, wer, word_errors


@pytest.mark.parametrize(
    ("ref", "hyp", "edits"),
    [
        ("the cat sat", "the cat sat", 0),
        ("the cat sat", "the cat", 1),  # deletion
        ("the cat sat", "the big cat sat", 1),  # insertion
        ("the cat sat", "the dog sat", 1),  # substitution
        ("the cat sat", "", 3),
        ("", "a b", 2),
        ("a b c d", "d c b a", 4),
        ("The Cat, sat.", "the cat sat", 0),  # case and punctuation are normalised away
        ("don't stop", "dont stop", 1),  # apostrophes inside words are kept
    ],
)
def test_word_errors_table(ref: str, hyp: str, edits: int) -> None:
    e, n = word_errors(ref.split(), hyp.split())
    assert e == edits
    assert n == len(normalize_words(ref.split()))


def _brute_distance(a: list[str], b: list[str]) -> int:
    """Independent recursive Levenshtein for cross-checking on tiny inputs."""
    if not a:
        return len(b)
    if not b:
        return len(a)
    return min(
        _brute_distance(a[1:], b) + 1,
        _brute_distance(a, b[1:]) + 1,
        _brute_distance(a[1:], b[1:]) + (a[0] != b[0]),
    )


def test_matches_bruteforce_on_random_lists() -> None:
    rng = random.Random(0)
    vocab = ["a", "b", "c", "d"]
    for _ in range(200):
        a = [rng.choice(vocab) for _ in range(rng.randint(0, 5))]
        b = [rng.choice(vocab) for _ in range(rng.randint(0, 5))]
        assert word_errors(a, b)[0] == _brute_distance(a, b)


def test_edit_ops_reconstruct_hypothesis() -> None:
    ref = "a b c d e".split()
    hyp = "a x c e f".split()
    ops = edit_ops(ref, hyp)
    rebuilt = [hyp[j] for op, _, j in ops if op in ("ok", "sub", "ins")]
    assert rebuilt == hyp
    assert [ref[i] for op, i, _ in ops if op in ("ok", "sub", "del")] == ref
    assert sum(op != "ok" for op, _, _ in ops) == 3


def test_corpus_level_weights_by_reference_length() -> None:
    # 1 error in 1 word and 0 errors in 9 words: corpus WER 0.1, not the mean of 1.0 and 0.0.
    assert wer(["a", "b c d e f g h i j"], ["x", "b c d e f g h i j"]) == pytest.approx(0.1)
    assert wer([["a", "b"]], [["a", "b", "c"]]) == pytest.approx(0.5)


def test_wer_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="references but"):
        wer(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="undefined"):
        wer([""], ["a"])


def test_text_to_words_normalises() -> None:
    words = text_to_words("Hello, World! It's fine.")
    assert words[:2] == ["hello", "world"]
    assert "it's" in words
    assert all(w == w.lower() and w.strip(".,!") == w for w in words)


def test_the_vectorised_table_is_the_textbook_one(monkeypatch) -> None:
    """Long sequences (a 20 s clip's phones) fill the edit-distance table row by row in NumPy: the same
    table and the same edit script as the textbook loop, ties included, on random sequences of every shape."""
    from audiopd.text import wer as wer_module

    rng = random.Random(0)
    for _ in range(200):
        alphabet = [str(x) for x in range(rng.randint(1, 5))]
        a = [rng.choice(alphabet) for _ in range(rng.randint(0, 60))]
        b = [rng.choice(alphabet) for _ in range(rng.randint(0, 60))]
        monkeypatch.setattr(wer_module, "_VECTOR_CELLS", 10**9)
        loop_table, loop_ops = wer_module._distances(a, b), wer_module.edit_ops(a, b)
        monkeypatch.setattr(wer_module, "_VECTOR_CELLS", 0)
        assert wer_module._distances(a, b) == loop_table
        assert wer_module.edit_ops(a, b) == loop_ops
        assert loop_table[-1][-1] == sum(op != "ok" for op, _, _ in loop_ops)
