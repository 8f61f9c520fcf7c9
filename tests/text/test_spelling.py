"""British -> American spelling map used by the WER normaliser (audiopd.text.wer.judge_words)."""

from __future__ import annotations

import pytest

from audiopd.text.spelling import BRITISH_TO_AMERICAN, americanize


@pytest.mark.parametrize(
    ("british", "american"),
    [("travelled", "traveled"), ("traveller", "traveler"), ("colours", "colors"), ("centre", "center"),
     ("realising", "realizing"), ("organisation", "organization"), ("grey", "gray"), ("defence", "defense"),
     ("cancelled", "canceled"), ("judgement", "judgment"), ("fulfils", "fulfills")],
)
def test_known_spellings(british: str, american: str) -> None:
    assert americanize([british]) == [american]


def test_map_is_idempotent_and_leaves_other_words() -> None:
    assert not set(BRITISH_TO_AMERICAN.values()) & set(BRITISH_TO_AMERICAN)
    assert americanize(["four", "hour", "your", "our", "travel", "color"]) == ["four", "hour", "your", "our",
                                                                              "travel", "color"]
