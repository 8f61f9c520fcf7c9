"""audiopd.compare.stats on hand-built utterances: paired intervals against serial, the matching rule, the tally."""

from __future__ import annotations

import pytest

from audiopd.compare.stats import summarize, system_k, tally
from audiopd.errors import AudiopdError
from audiopd.eval.compare import paired_mean

TEXT = ["one two three four", "five six seven eight", "nine ten eleven twelve", "a b c d", "e f g h", "i j k l"]


def _utts(system: str, mos: list[float], wer: list[float], seeds=(0,)) -> list[dict]:
    return [{"text": t, "voice": "rms", "system": system, "seed": s, "audio": f"{system}/{s}/{i}", "distillmos": m,
             "dnsmos": 3.0, "wer": w, "passed": w < 0.5, "forward_passes": 4, "wall_s": 1.0 if system == "serial"
             else 0.25, "rtf": 0.1} for s in seeds for i, (t, m, w) in enumerate(zip(TEXT, mos, wer))]


def test_summary_intervals_and_smallest_matching_k() -> None:
    serial = _utts("serial", [3.0, 3.1, 2.9, 3.0, 3.2, 2.8], [0.0, 0.25, 0.0, 0.0, 0.25, 0.0])
    k1 = _utts("parallel-k1", [2.0, 2.1, 1.9, 2.0, 2.2, 1.8], [0.5, 0.75, 0.5, 0.25, 0.5, 0.5])  # clearly worse
    k2 = _utts("parallel-k2", [3.0, 3.2, 2.8, 3.1, 3.1, 2.8], [0.0, 0.25, 0.25, 0.0, 0.0, 0.0])  # the same
    k4 = _utts("parallel-k4", [3.1, 3.2, 3.0, 3.1, 3.3, 2.9], [0.0, 0.0, 0.0, 0.0, 0.25, 0.0])  # better
    s = summarize(serial + k1 + k2 + k4, ["serial", "parallel-k1", "parallel-k2", "parallel-k4"], resamples=500)
    vs = s["vs_serial"]
    assert vs["parallel-k1"]["distillmos"]["diff"] == pytest.approx(-1.0)
    assert vs["parallel-k1"]["distillmos"]["high"] < 0 and vs["parallel-k1"]["wer"]["low"] > 0
    assert not vs["parallel-k1"]["matches"] and vs["parallel-k2"]["matches"] and vs["parallel-k4"]["matches"]
    assert s["smallest_matching_k"] == 2
    # WER is corpus-level: 2 edits of 24 reference words for serial.
    assert s["systems"]["serial"]["wer"] == pytest.approx(2 / 24, abs=1e-4)
    assert vs["parallel-k1"]["wer"]["diff"] == pytest.approx(12 / 24 - 2 / 24, abs=1e-4)
    assert vs["parallel-k4"]["speedup"] == pytest.approx(4.0)
    assert s["systems"]["parallel-k2"]["k"] == 2 and system_k("auto") is None


def test_seeds_are_averaged_per_pair_before_resampling() -> None:
    a = _utts("parallel-k3", [3.0] * 6, [0.0] * 6, seeds=(0,)) + _utts("parallel-k3", [2.0] * 6, [0.0] * 6, seeds=(1,))
    b = _utts("serial", [2.5] * 6, [0.0] * 6, seeds=(0, 1))
    s = summarize(a + b, ["serial", "parallel-k3"], resamples=200)
    d = s["vs_serial"]["parallel-k3"]["distillmos"]
    assert d["n"] == 6 and d["diff"] == pytest.approx(0.0) and d["low"] == d["high"] == pytest.approx(0.0)


def test_paired_mean_without_shared_keys() -> None:
    assert paired_mean({("a", "x"): 1.0}, {("b", "y"): 2.0}) is None


def test_tally_orients_pairs_and_counts_ties_half() -> None:
    utts = _utts("serial", [3.0] * 6, [0.0] * 6) + _utts("parallel-k2", [3.0] * 6, [0.0] * 6)
    ser, par = "serial/0/0", "parallel-k2/0/0"
    answers = {"format": "audiopd-listen/1", "answers": [
        {"left": par, "right": ser, "choice": "left"},  # prefers parallel
        {"left": ser, "right": par, "choice": "right"},  # prefers parallel
        {"left": ser, "right": par, "choice": "left"},  # prefers serial
        {"left": par, "right": ser, "choice": "same"},
    ]}
    out = tally([answers], utts, resamples=300)
    (row,) = out["pairs"]
    assert (row["system"], row["against"], row["n"]) == ("parallel-k2", "serial", 4)
    assert row["prefer"] == pytest.approx(2.5 / 4) and 0 <= row["low"] <= row["prefer"] <= row["high"] <= 1


@pytest.mark.parametrize("answers, needle", [
    ({"format": "audiopd-listen/1", "answers": [{"left": "x", "right": "serial/0/0", "choice": "left"}]},
     "does not hold"),
    ({"format": "audiopd-listen/1", "answers": [{"left": "serial/0/1", "right": "serial/0/0", "choice": "A"}]},
     "choice 'A'"),
    ({"format": "audiopd-listen/1", "answers": []}, "no answers"),
    ([1, 2], "not an export"),
])
def test_tally_refuses_foreign_answers(answers, needle) -> None:
    with pytest.raises(AudiopdError, match=needle):
        tally([answers], _utts("serial", [3.0] * 6, [0.0] * 6))
