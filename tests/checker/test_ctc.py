"""audiopd.checker.ctc: greedy decoding, CTC forced alignment and the phone checks, on hand-made posteriors."""

from __future__ import annotations

import numpy as np
import pytest

from audiopd.checker.ctc import PhoneCheckConfig, check_phones, force_align, greedy, phone_errors

CFG = PhoneCheckConfig(window_s=0.1, max_window_gap=2.0, max_deletions=3, max_insertions=3, max_per=0.6,
                       edit_window=6)


def posteriors(frames: list[int], n_classes: int = 8, sharp: float = 8.0) -> np.ndarray:
    """Log-posteriors that put nearly all mass on the given class per frame."""
    logits = np.zeros((len(frames), n_classes))
    logits[np.arange(len(frames)), frames] = sharp
    return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))


def speak(labels: list[int], frames_per_phone: int = 3, gap: int = 1) -> list[int]:
    out = [0, 0]
    for lab in labels:
        out += [lab] * frames_per_phone + [0] * gap
    return out + [0, 0]


def test_greedy_collapses_repeats_and_keeps_blank_separated_doubles() -> None:
    lp = posteriors([0, 3, 3, 0, 3, 5, 5, 0])
    assert greedy(lp) == [(3, 1, 3), (3, 4, 5), (5, 5, 7)]
    assert greedy(posteriors([0, 0, 0])) == []


def test_force_align_places_each_label_where_it_is_heard() -> None:
    frames = speak([3, 3, 5, 2])
    path = force_align(posteriors(frames), [3, 3, 5, 2])
    assert path is not None and path.shape == (len(frames),)
    # Each label's state covers exactly the frames that carry it (state 2i+1 for label i).
    for i, start in enumerate([2, 6, 10, 14]):
        assert set(np.flatnonzero(path == 2 * i + 1)) == {start, start + 1, start + 2}
    assert np.all(np.diff(path) >= 0)  # monotonic


def test_force_align_refuses_what_cannot_fit() -> None:
    # A doubled label needs a blank between its copies: 2 frames cannot hold [3, 3].
    assert force_align(posteriors([3, 3]), [3, 3]) is None
    assert force_align(posteriors([3, 0, 3]), [3, 3]) is not None


def test_clean_clip_passes_every_phone_check() -> None:
    labels = [1, 2, 3, 4, 5, 6, 7, 1, 2, 3]
    rep = check_phones(posteriors(speak(labels)), labels, 0.02, CFG)
    assert not [f.name for f in rep.findings if f.failed]
    assert rep.metrics["phone_error_rate"] == 0.0
    assert all(np.isfinite(a) and b > a for a, b in rep.phone_spans)
    assert rep.hypothesis == tuple(labels)


def test_skipped_phones_fail_with_a_span_where_they_are_missing() -> None:
    labels = [1, 2, 3, 4, 5, 6, 7, 1, 2, 3]
    heard = labels[:3] + labels[7:]  # four phones never spoken
    frames = speak(heard)
    rep = check_phones(posteriors(frames), labels, 0.02, CFG)
    failed = {f.name: f for f in rep.findings if f.failed}
    assert "phone_deletions" in failed and failed["phone_deletions"].value == 4
    assert "phone_window" in failed  # the aligner had to put 4 phones on audio that says others
    (a, b), = failed["phone_deletions"].spans
    t_cut = (2 + 3 * 4) * 0.02  # where the cut sits in the audio
    assert a <= t_cut + 0.02 and b >= t_cut - 0.02


def test_repeated_phones_fail_as_insertions() -> None:
    labels = [1, 2, 3, 4, 5, 6, 7]
    frames = speak(labels[:5] + labels[1:5] + labels[5:])
    rep = check_phones(posteriors(frames), labels, 0.02, CFG)
    failed = {f.name for f in rep.findings if f.failed}
    assert {"phone_insertions", "phone_window"} <= failed


def test_other_sentence_fails_on_error_rate_and_truncation_on_fit() -> None:
    labels = [1, 2, 3, 4, 5, 6, 7, 1]
    other = check_phones(posteriors(speak([7, 6, 5, 4, 3, 2, 1, 7])), labels, 0.02, CFG)
    assert "phone_error_rate" in {f.name for f in other.findings if f.failed}
    cut = check_phones(posteriors(speak(labels)[:5]), labels, 0.02, CFG)
    assert "phone_alignment" in {f.name for f in cut.findings if f.failed}
    assert all(not np.isfinite(a) for a, _ in cut.phone_spans)


def test_phone_errors_count_what_check_phones_rates() -> None:
    labels = [1, 2, 3, 4, 5, 6, 7, 1, 2, 3]
    heard = posteriors(speak(labels[:3] + labels[7:]))  # four phones never spoken
    assert phone_errors(heard, labels) == 4 and phone_errors(heard, np.asarray(labels, dtype=np.int64)) == 4
    assert phone_errors(posteriors(speak(labels)), labels) == 0
    rep = check_phones(heard, labels, 0.02, CFG)
    assert rep.metrics["phone_error_rate"] == pytest.approx(4 / len(labels))


@pytest.mark.parametrize("n", [0, 1])
def test_empty_or_tiny_input_does_not_crash(n: int) -> None:
    rep = check_phones(posteriors([0] * max(1, n)), [3], 0.02, CFG)
    assert any(f.failed for f in rep.findings)


def test_densest_counts_edits_in_a_window_even_when_matches_break_the_run() -> None:
    from audiopd.checker.ctc import densest

    ops = [("ok", 0, 0), ("ins", -1, 1), ("ok", 1, 2), ("ins", -1, 3), ("ins", -1, 4), ("sub", 2, 5), ("ins", -1, 6),
           ("ok", 3, 7)]
    assert densest(ops, "ins", 6) == (4, 1)  # four insertions among ops 1-6, never more than two in a row
    assert densest(ops, "del", 6) == (0, 0)
    assert densest([], "ins", 6) == (0, 0)
    assert densest(ops[:2], "ins", 6) == (1, 0)  # a window wider than the clip is the whole clip


def test_per_limit_grows_on_short_clips_only_with_slack() -> None:
    flat = PhoneCheckConfig(window_s=0.1, max_window_gap=2.0, max_deletions=3, max_insertions=3, max_per=0.5)
    assert flat.per_limit(5) == flat.per_limit(300) == 0.5  # no slack: one limit for every clip
    slack = PhoneCheckConfig(window_s=0.1, max_window_gap=2.0, max_deletions=3, max_insertions=3, max_per=0.5,
                             per_full_phones=30, short_per_slack=0.35)
    assert slack.per_limit(30) == slack.per_limit(90) == 0.5
    assert slack.per_limit(13) == pytest.approx(0.5 + 0.35 * ((30 / 13) ** 0.5 - 1))
    assert 0.5 < slack.per_limit(25) < slack.per_limit(13) < slack.per_limit(9) < 0.8


def test_a_short_clip_with_a_few_misheard_phones_passes_only_with_the_short_clip_slack() -> None:
    labels = [1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5]  # 12 phones
    heard = [6, 2, 3, 1, 5, 6, 4, 1, 2, 7, 4, 3, 2]  # 6 substituted, one extra: PER 7/12 = 0.58
    base = dict(window_s=0.1, max_window_gap=99.0, max_deletions=12, max_insertions=12, max_per=0.5)
    rep = check_phones(posteriors(speak(heard)), labels, 0.02, PhoneCheckConfig(**base))
    per = rep.metrics["phone_error_rate"]
    assert 0.5 <= per < 0.65
    assert [f.name for f in rep.findings if f.failed] == ["phone_error_rate"]
    rep = check_phones(posteriors(speak(heard)), labels, 0.02,
                       PhoneCheckConfig(**base, per_full_phones=30, short_per_slack=0.35))
    assert not [f.name for f in rep.findings if f.failed]
    f = next(f for f in rep.findings if f.name == "phone_error_rate")
    assert f.value == per and f.threshold == pytest.approx(0.5 + 0.35 * ((30 / 12) ** 0.5 - 1))
    # A clip whose phones are all wrong still fails: the slack is bounded.
    wrong = check_phones(posteriors(speak([7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6])), labels, 0.02,
                         PhoneCheckConfig(**base, per_full_phones=30, short_per_slack=0.35))
    assert "phone_error_rate" in [f.name for f in wrong.findings if f.failed]
