"""Codec round-trip evaluation: pitch-error figures, the vocoder reference row and the F0 tokens' own error."""

from __future__ import annotations

import numpy as np
import pytest
from world_fixtures import small_world_codec, vowel

from audiopd.eval import codec_eval
from audiopd.eval.codec_eval import (
    GROSS_CENTS,
    VOCODER,
    RoundTripStats,
    evaluate,
    f0_errors,
)


def test_gross_and_fine_pitch_errors_split_at_twenty_percent() -> None:
    ref = np.full(10, 200.0)
    ref[0] = 0.0  # unvoiced in the reference: not an F0 error, a voicing error
    hyp = np.array([150.0, 200.0, 202.0, 198.0, 200.0 * 1.19, 200.0 * 1.21, 100.0, 400.0, 200.0, 0.0])
    cents, vuv, n = f0_errors(ref, hyp)
    assert (vuv, n) == (2, 10) and cents.size == 8
    st = RoundTripStats(levels=8, refs=[["a"]], hyps=[["a"]], f0_cents=[cents])
    s = st.summary()
    # 1.21x, 0.5x and 2x are gross (> 20% off); 1.19x is not.
    assert s["f0_gross_pct"] == pytest.approx(100 * 3 / 8)
    fine = np.abs(cents)[np.abs(cents) <= GROSS_CENTS]
    assert fine.size == 5 and s["f0_fine_mean_abs_cents"] == pytest.approx(round(float(fine.mean()), 1))
    assert s["f0_mean_abs_cents"] > s["f0_fine_mean_abs_cents"]
    assert s["f0_token_mean_abs_cents"] is None  # nothing measured before synthesis


def test_world_codec_gets_a_vocoder_row_and_token_f0_error() -> None:
    from audiopd.eval.judging import EvalJudge

    # No ASR or MOS model needed for these figures: a fixed transcript, and a MOS that grows with the level.
    judge = EvalJudge(lambda audio, sr: "a vowel", lambda audio, sr: {
        "distillmos": 3.0, "dnsmos_ovrl": float(np.abs(audio).max()), "dnsmos_p808": 1.0})
    codec = small_world_codec()
    items = [(vowel(130.0, 0.8), "a vowel"), (vowel(200.0, 0.8, (300.0, 2300.0, 3000.0)), "a vowel")]
    original, rows = evaluate(codec, items, [1, 3], with_pesq=False, judge=judge)
    assert original["wer"] == 0.0 and original["distillmos"] == 3.0
    assert all(r["distillmos"] == 3.0 and r["dnsmos_ovrl"] > 0 for r in rows)
    assert [r["levels"] for r in rows] == [VOCODER, 1, 3]
    voc, one, three = rows
    assert voc["f0_token_mean_abs_cents"] is None and voc["mcd_db"] == 0.0
    # The F0 tokens sit on a 29-cent grid: half a bin at most, whatever the number of levels.
    half_bin = 1200 * np.log2(codec.cfg.f0_ceil / codec.cfg.f0_floor) / (codec.cfg.f0_bins - 1) / 2
    for r in (one, three):
        assert 0 < r["f0_token_mean_abs_cents"] <= half_bin + 1e-6
    assert three["mcd_db"] < one["mcd_db"]
    _, rows = evaluate(codec, items[:1], [3], with_pesq=False, with_vocoder=False, judge=judge)
    assert [r["levels"] for r in rows] == [3]


def test_markdown_table_has_the_pitch_columns() -> None:
    table = codec_eval.markdown_table({"levels": "original", "wer": 1.0},
                                      [{"levels": VOCODER, "wer": 2.0, "f0_gross_pct": 3.0}])
    header = table.splitlines()[0]
    for col in ("distillmos", "dnsmos_ovrl", "dnsmos_p808", "f0_gross_pct", "f0_fine_mean_abs_cents",
                "f0_token_mean_abs_cents"):
        assert col in header
    assert table.splitlines()[3].startswith(f"| {VOCODER} | 2.0 |")


def test_mel_codec_gets_a_vocoder_row_token_error_and_voices(tmp_path) -> None:
    from mel_fixtures import chirp, write_mel_artifact

    from audiopd.codec import load_codec
    from audiopd.eval.judging import EvalJudge

    judge = EvalJudge(lambda audio, sr: "a chirp", lambda audio, sr: {
        "distillmos": 2.0 + float(np.abs(audio).max()), "dnsmos_ovrl": 1.0, "dnsmos_p808": 1.0})
    codec = load_codec(write_mel_artifact(tmp_path / "m", default="fast"))
    items = [(chirp(0.3), "a chirp"), (chirp(0.2), "a chirp")]
    original, rows = evaluate(codec, items, [1, 4], with_pesq=False, with_f0=False, judge=judge, voices=["x", "y"])
    assert [r["levels"] for r in rows] == [VOCODER, 1, 4]
    voc, one, four = rows
    assert voc["logmel_mae"] == 0.0 and four["logmel_mae"] < one["logmel_mae"]
    assert set(original["distillmos_by_voice"]) == {"x", "y"} and voc["f0_mean_abs_cents"] is None
    assert all(r["decode_rtf"] > 0 for r in rows)
