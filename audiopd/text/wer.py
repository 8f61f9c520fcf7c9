"""Word error rate: Levenshtein edits between reference and hypothesis word lists.

Normalisation (applied by ``normalize_words``): lower case, punctuation stripped (apostrophes
inside words kept, so "don't" stays one word). Text becomes reference words through the frontend's
``spoken_words``, so numbers and abbreviations are compared as they are spoken ("12" -> "twelve").
WER is corpus-level (total edits / total reference words), the usual definition, so long
utterances weigh more than short ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from audiopd.text.frontend import spoken_words
from audiopd.text.spelling import americanize

_NON_WORD = re.compile(r"[^\w']+", re.UNICODE)


def normalize_words(words: Sequence[str]) -> list[str]:
    """Lower-case each word, strip punctuation, split on what remains, drop empties."""
    out: list[str] = []
    for w in words:
        for part in _NON_WORD.split(w.lower()):
            part = part.strip("'_")
            if part:
                out.append(part)
    return out


def text_to_words(text: str) -> list[str]:
    """Reference words for ``text``, as the frontend speaks them (numbers and abbreviations expanded)."""
    return normalize_words(list(spoken_words(text)))


# Abbreviations a recogniser writes without the period or capital that ``normalize_text`` needs to expand them
# ("mr smith"); once they are bare lower-case words they can only mean the title.
_BARE_TITLES = {"mr": "mister", "mrs": "missus", "ms": "miz", "dr": "doctor", "prof": "professor"}


# Contractions a recogniser may write for the full form the text has, or the other way round: "Where is Ravi?" heard
# as "where's ravi" would be two errors, half of a three-word sentence. A contraction is written out only where the
# other side holds its full form (``reconcile``), so a real error stays one error either way ("what's out" against
# "watch out"; "where was" against "where's"). "'s" counts as "is" after a pronoun or question word only.
_S_SUBJECTS = frozenset({"he", "she", "it", "that", "there", "here", "what", "where", "who", "how", "when", "why"})
_WHOLE = {"won't": ("will", "not"), "can't": ("can", "not"), "shan't": ("shall", "not"), "let's": ("let", "us"),
          "i'm": ("i", "am")}
_SUFFIXES = (("n't", "not"), ("'re", "are"), ("'ll", "will"), ("'ve", "have"), ("'d", "would"))


def expansion(word: str) -> tuple[str, str] | None:
    """The full form of a contracted word ("don't" -> (do, not), "where's" -> (where, is)); None for any other."""
    if word in _WHOLE:
        return _WHOLE[word]
    if word.endswith("'s"):
        return (word[:-2], "is") if word[:-2] in _S_SUBJECTS else None
    for suffix, full in _SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix):
            return word[: -len(suffix)], full
    return None


def reconcile(ref: Sequence[str], hyp: Sequence[str]) -> tuple[list[str], list[str]]:
    """Both word lists, each contraction written out where the other list holds its full form."""

    def written_out(words: Sequence[str], other: Sequence[str]) -> list[str]:
        pairs = set(zip(other, other[1:]))
        out: list[str] = []
        for w in words:
            full = expansion(w)
            out += full if full is not None and full in pairs else (w,)
        return out

    return written_out(ref, hyp), written_out(hyp, ref)


def count_errors(ref: Sequence[str], hyp: Sequence[str]) -> int:
    """Word edits between two normalised word lists (``judge_words``), contractions reconciled (``reconcile``)."""
    r, h = reconcile(ref, hyp)
    return sum(1 for op, _, _ in edit_ops(r, h) if op != "ok")


def judge_words(text: str) -> list[str]:
    """The one WER normaliser of every outside judge (Whisper, pocketsphinx) and every evaluation command.

    Both reference and hypothesis go through it, so written variants of one spoken form agree:
    ``text_to_words`` (the frontend's ``normalize_text``: "13" -> thirteen, "$5" -> five dollars,
    "Mr." -> mister, "3:30 pm" -> three thirty p m; lower case, punctuation stripped), then bare titles
    ("mr" -> mister), then British -> American spelling (``audiopd.text.spelling``: "travelled" -> traveled),
    then "cannot" -> can not; contractions are left for ``count_errors`` to reconcile with the other side.
    """
    words = americanize(_BARE_TITLES.get(w, w) for w in text_to_words(text))
    return [part for w in words for part in (("can", "not") if w == "cannot" else (w,))]


def _distances(ref: Sequence[str], hyp: Sequence[str]) -> list[list[int]]:
    """The Levenshtein table ``d[i][j]`` (edit distance of ``ref[:i]`` and ``hyp[:j]``), by rows.

    Small tables by the textbook loop; from ``_VECTOR_CELLS`` cells each row in a few NumPy passes: with
    ``t[j] = min(d[i-1][j] + 1, d[i-1][j-1] + cost)`` (deletion, match or substitution) the insertions make
    ``d[i][j] = min over k <= j of t[k] + (j - k)``, a running minimum of ``t[k] - k``. The same integers either
    way; the checker aligns a 20 s clip's ~240 phones against what it heard, 73 ms by the loop."""
    n, m = len(ref), len(hyp)
    if n * m < _VECTOR_CELLS:
        d = [[0] * (m + 1) for _ in range(n + 1)]
        for i in range(n + 1):
            d[i][0] = i
        for j in range(m + 1):
            d[0][j] = j
        for i in range(1, n + 1):
            ri = ref[i - 1]
            row, prev = d[i], d[i - 1]
            for j in range(1, m + 1):
                cost = 0 if ri == hyp[j - 1] else 1
                row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
        return d
    import numpy as np

    ids: dict[str, int] = {}
    r = [ids.setdefault(x, len(ids)) for x in ref]
    h = np.array([ids.setdefault(x, len(ids)) for x in hyp], dtype=np.int64)
    cols = np.arange(m + 1, dtype=np.int64)
    table = np.empty((n + 1, m + 1), dtype=np.int64)
    table[0] = cols
    t = np.empty(m + 1, dtype=np.int64)
    for i in range(1, n + 1):
        prev = table[i - 1]
        t[0] = i
        np.minimum(prev[1:] + 1, prev[:-1] + (h != r[i - 1]), out=t[1:])
        t -= cols
        np.minimum.accumulate(t, out=table[i])
        table[i] += cols
    return table.tolist()


_VECTOR_CELLS = 400  # about where the NumPy rows overtake the loop (a 20 x 20 table, ~0.23 ms either way)


def edit_ops(ref: Sequence[str], hyp: Sequence[str]) -> list[tuple[str, int, int]]:
    """Minimal edit script as (op, ref_index, hyp_index), op in {"ok", "sub", "del", "ins"}.

    Indices are -1 where the side has no word (ins has no ref word, del no hyp word).
    """
    n, m = len(ref), len(hyp)
    d = _distances(ref, hyp)
    ops: list[tuple[str, int, int]] = []
    i, j = n, m
    while i > 0 or j > 0:
        if i > 0 and j > 0 and d[i][j] == d[i - 1][j - 1] + (0 if ref[i - 1] == hyp[j - 1] else 1):
            ops.append(("ok" if ref[i - 1] == hyp[j - 1] else "sub", i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i > 0 and d[i][j] == d[i - 1][j] + 1:
            ops.append(("del", i - 1, -1))
            i -= 1
        else:
            ops.append(("ins", -1, j - 1))
            j -= 1
    ops.reverse()
    return ops


BROKEN_WER = 0.5
"""Utterance WER above which an output counts as broken (issue 4's line), in every evaluation."""


def word_errors(ref: Sequence[str], hyp: Sequence[str]) -> tuple[int, int]:
    """(edit distance, reference length) after normalisation of both word lists."""
    r, h = normalize_words(ref), normalize_words(hyp)
    return count_errors(r, h), len(r)


def wer(refs: Sequence[Sequence[str] | str], hyps: Sequence[Sequence[str] | str]) -> float:
    """Corpus-level WER. Items may be word lists or strings (strings are split on whitespace).

    Raises ``ValueError`` if the lists differ in length or the references hold no words at all.
    """
    if len(refs) != len(hyps):
        raise ValueError(f"{len(refs)} references but {len(hyps)} hypotheses")
    edits = total = 0
    for r, h in zip(refs, hyps):
        e, n = word_errors(r.split() if isinstance(r, str) else r, h.split() if isinstance(h, str) else h)
        edits += e
        total += n
    if total == 0:
        raise ValueError("WER is undefined: the references hold no words")
    return edits / total
