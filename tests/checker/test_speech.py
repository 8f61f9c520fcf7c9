"""ASR agreement check: the checker must count errors exactly as the evaluation does (pure, no audio)."""

from __future__ import annotations

import pytest

from audiopd.checker import CheckerConfig
from audiopd.checker.speech import check_asr, spoken_hypothesis
from audiopd.text.wer import text_to_words, word_errors


def _heard(words: list[str], step: float = 0.3) -> list[tuple[str, float, float]]:
    return [(w, i * step, (i + 1) * step) for i, w in enumerate(words)]


def test_dictionary_entries_are_normalised_with_their_time_span_shared() -> None:
    out = spoken_hypothesis([("c.'s", 0.2, 0.6), ("include", 0.6, 1.0)])
    assert [w for w, _, _ in out] == text_to_words("c.'s include")
    assert [w for w, _, _ in out][-1] == "include"
    assert out[0][1] == pytest.approx(0.2) and out[-2][2] == pytest.approx(0.6)
    assert all(a < b for _, a, b in out)


@pytest.mark.parametrize("raw", [
    # A test-split clip: the recogniser's "c.'s" is two words to the evaluation; counted raw, the checker
    # saw WER 0.50 (passed at max_wer 0.51) where the evaluation saw 0.54 (broken).
    "c.'s include a girl being stuffed with dryer than fleischman smarter and and a bar is served up on the "
    "side dish with the time pressing",
    "scenes include a. girl",
    "",
])
def test_checker_wer_equals_the_evaluations(raw: str) -> None:
    ref = text_to_words("Scenes include a girl being stuffed with chives and Fleischman's margarine and a boy "
                        "served up on a side dish with beets and dressing.")
    rep = check_asr(ref, _heard(raw.split()), 8.0, None, CheckerConfig())
    expected = word_errors(ref, text_to_words(raw))[0] / len(ref)
    assert rep.wer == pytest.approx(expected)
    assert rep.hypothesis == " ".join(text_to_words(raw))


def test_the_c_s_clip_now_fails_at_the_shipped_threshold() -> None:
    ref = text_to_words("Scenes include a girl being stuffed with chives and Fleischman's margarine and a boy "
                        "served up on a side dish with beets and dressing.")
    raw = ("c.'s include a girl being stuffed with dryer than fleischman smarter and and a bar is served up on "
           "the side dish with the time pressing")
    rep = check_asr(ref, _heard(raw.split()), 8.0, None, CheckerConfig(max_wer=0.51))
    wer = next(f for f in rep.findings if f.name == "asr_wer")
    assert wer.failed
