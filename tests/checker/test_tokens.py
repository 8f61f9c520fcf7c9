"""Token checks on synthetic code sequences."""

from __future__ import annotations

import numpy as np
import pytest

from audiopd.checker import tokens as tok
from audiopd.errors import AudioInputError

RATE = 50.0


def _random_codes(t: int, q: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1024, size=(q, t))


def test_random_codes_have_no_repetition() -> None:
    ratio, rep = tok.repetition_ratio(_random_codes(300), n=3, window=50)
    assert ratio < 0.02 and len(rep) < 6


def test_looping_decoder_is_caught() -> None:
    codes = _random_codes(300)
    loop = codes[:, 100:108]  # an 8-frame pattern repeated: a decoder stuck in a loop
    codes[:, 108:200] = np.tile(loop, (1, 12))[:, :92]
    f = tok.check_repetition(codes, RATE, n=3, window_s=1.0, max_ratio=0.3)
    assert f.failed and f.value > 0.25
    (a, b), = f.spans
    assert 2.0 <= a <= 2.4 and 3.8 <= b <= 4.2


def test_constant_runs_do_not_count_as_repetition() -> None:
    codes = _random_codes(300)
    codes[0, 50:250] = 7  # silence token run
    assert tok.repetition_ratio(codes, n=3, window=50)[0] < 0.05


def _repetition_loop(seq: np.ndarray, n: int, window: int) -> tuple[float, list[int]]:
    """The definition, one n-gram at a time: the reference ``repetition_ratio`` is tested against."""
    last_seen: dict[tuple[int, ...], int] = {}
    repeated, counted = [], 0
    for i in range(len(seq) - n + 1):
        gram = tuple(int(v) for v in seq[i:i + n])
        if len(set(gram)) == 1:
            continue
        counted += 1
        j = last_seen.get(gram)
        if j is not None and j + n <= i and i - j <= window:
            repeated.append(i)
        last_seen[gram] = i
    return (len(repeated) / counted if counted else 0.0), repeated


@pytest.mark.parametrize("seed", range(6))
def test_repetition_ratio_is_the_one_gram_at_a_time_definition(seed: int) -> None:
    """Loops, runs, overlapping grams, grams seen twice outside the window, negative ids, every n."""
    rng = np.random.default_rng(seed)
    t = int(rng.integers(1, 400))
    seq = rng.integers(-2, int(rng.choice([3, 12, 1024])), size=t)  # a small alphabet repeats often
    if t > 60:
        seq[20:60] = np.tile(seq[10:18], 5)  # a loop
        seq[30:38] = seq[30]  # a run inside it
    for n in (1, 2, 3, 4):
        for window in (3, 50, 1000):
            assert tok.repetition_ratio(seq[None], n=n, window=window) == _repetition_loop(seq, n, window)


@pytest.mark.parametrize(("low_frac", "fails"), [(0.0, False), (0.2, False), (0.5, True)])
def test_low_confidence_fraction(low_frac: float, fails: bool) -> None:
    conf = np.full(200, 0.9)
    conf[: int(low_frac * 200)] = 0.01
    f = tok.check_confidence(conf, RATE, floor=0.1, max_fraction=0.3)
    assert f.value == pytest.approx(low_frac)
    assert f.failed == fails


def test_confidence_rejects_non_probabilities() -> None:
    with pytest.raises(AudioInputError):
        tok.check_confidence(np.array([0.5, 1.5]), RATE, 0.1, 0.3)
    with pytest.raises(AudioInputError):
        tok.check_confidence(np.array([]), RATE, 0.1, 0.3)


@pytest.mark.parametrize(("actual", "expected", "fails"), [(2.0, 2.0, False), (2.9, 2.0, False), (3.2, 2.0, True),
                                                            (1.2, 2.0, True), (0.0, 2.0, True)])
def test_length_ratio_is_symmetric(actual: float, expected: float, fails: bool) -> None:
    assert tok.check_length(actual, expected, 1.5).failed == fails


def test_as_codes_shapes() -> None:
    assert tok.as_codes(np.arange(5)).shape == (1, 5)
    assert tok.as_codes(np.zeros((1, 3, 5), dtype=np.int64)).shape == (3, 5)
    with pytest.raises(AudioInputError):
        tok.as_codes(np.zeros((2, 3, 5), dtype=np.int64))
    with pytest.raises(AudioInputError):
        tok.as_codes(np.zeros((3, 5), dtype=np.float32))
