"""PocketSphinx wrappers on real speech rendered by flite (offline, bundled model)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from audiopd.checker.sphinx import align, normalize_word, recognize, to_sphinx_pcm
from audiopd.errors import AudioInputError, NothingToSpeakError

pytestmark = pytest.mark.skipif(shutil.which("flite") is None, reason="needs Debian flite")

SENTENCE = "the quick brown fox jumps over the lazy dog"


def _render(tmp_path: Path, text: str, voice: str = "rms") -> tuple[np.ndarray, int]:
    import soundfile as sf

    out = tmp_path / "x.wav"
    subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(out)], check=True)
    audio, rate = sf.read(str(out), dtype="float32")
    return audio, rate


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> tuple[np.ndarray, int]:
    return _render(tmp_path_factory.mktemp("flite"), SENTENCE)


def test_recognize_finds_the_words(speech: tuple[np.ndarray, int]) -> None:
    audio, rate = speech
    hyp = recognize(audio, rate).split()
    assert hyp == [w.lower() for w in hyp]
    # flite rms on this sentence is recognised well; allow one error, not zero-tolerance.
    ref = SENTENCE.split()
    assert len(set(hyp) & set(ref)) >= len(set(ref)) - 1


def test_recognize_resamples_other_rates(speech: tuple[np.ndarray, int]) -> None:
    from scipy.signal import resample_poly

    audio, rate = speech
    up = resample_poly(audio, 22050, rate).astype(np.float32)
    hyp = recognize(up, 22050).split()
    assert len(set(hyp) & set(SENTENCE.split())) >= 6


def test_align_gives_ordered_times(speech: tuple[np.ndarray, int]) -> None:
    audio, rate = speech
    al = align(audio, rate, ["The", "quick", "brown", "fox,", "jumps", "over", "the", "lazy", "dog."])
    assert al is not None
    assert [w.word for w in al.words] == SENTENCE.split()
    assert [w.index for w in al.words] == list(range(9))
    duration = len(audio) / rate
    assert al.duration == pytest.approx(duration, abs=0.02)
    starts = [w.start for w in al.words]
    assert starts == sorted(starts)
    for w in al.words:
        assert 0.0 <= w.start < w.end <= duration + 0.01
        assert w.phones and w.phones[0].start == pytest.approx(w.start)
        assert w.phones[-1].end == pytest.approx(w.end)
        assert np.isfinite(w.frame_score)
    # Speech starts after flite's leading silence and "dog" ends in the last half second.
    assert al.words[0].start > 0.02
    assert al.words[-1].end > duration - 0.5


def test_align_reports_words_without_pronunciation(speech: tuple[np.ndarray, int]) -> None:
    audio, rate = speech
    words = SENTENCE.split()
    words.insert(3, "42")  # digits: no dictionary entry, no letter-to-sound
    al = align(audio, rate, words)
    assert al is not None
    assert al.unaligned == (3,)
    assert 3 not in [w.index for w in al.words]


def test_align_adds_cmudict_words_missing_from_sphinx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import audiopd.checker.sphinx as sphinx

    # The bundled dictionary lacks "blorvik"; pretend CMUdict has it so the fallback path runs.
    word = "blorvik"
    monkeypatch.setattr(sphinx, "_cmudict", lambda: {word: [["B", "L", "AO1", "R", "V", "IH0", "K"]]})
    audio, rate = _render(tmp_path, f"the brown {word} jumps over the dog")
    al = align(audio, rate, ["the", "brown", word, "jumps", "over", "the", "dog"])
    assert al is not None and al.unaligned == ()
    assert [w.word for w in al.words][2] == word
    assert al.words[2].end - al.words[2].start > 0.2


def test_align_uses_flite_letter_to_sound_for_unknown_words(tmp_path: Path) -> None:
    word = "zorblatt"  # in neither dictionary
    audio, rate = _render(tmp_path, f"the {word} jumps over the dog")
    al = align(audio, rate, ["the", word, "jumps", "over", "the", "dog"])
    assert al is not None and al.unaligned == ()
    assert al.words[1].word == word and len(al.words[1].phones) >= 5


def test_align_fails_cleanly_when_audio_is_too_short(speech: tuple[np.ndarray, int]) -> None:
    audio, rate = speech
    assert align(audio[: rate // 4], rate, (SENTENCE + " " + SENTENCE).split()) is None


def test_bad_input_errors() -> None:
    with pytest.raises(AudioInputError):
        recognize(np.zeros(0, np.float32), 16000)
    with pytest.raises(AudioInputError):
        recognize(np.full(100, np.nan, np.float32), 16000)
    with pytest.raises(AudioInputError):
        recognize(np.zeros((2, 100), np.float32), 16000)
    with pytest.raises(NothingToSpeakError):
        align(np.zeros(16000, np.float32), 16000, ["...", ""])
    assert recognize(np.zeros(1600, np.float32), 16000) == ""


@pytest.mark.parametrize(("raw", "norm"), [("Dog.", "dog"), ("DON'T", "don't"), ("'quoted'", "quoted"), ("--", "")])
def test_normalize_word(raw: str, norm: str) -> None:
    assert normalize_word(raw) == norm


def test_int16_and_float_inputs_agree() -> None:
    x = (np.sin(np.arange(1600) / 5.0) * 0.5).astype(np.float32)
    a = to_sphinx_pcm(x, 16000)
    b = to_sphinx_pcm((x * 32767).astype(np.int16), 16000)
    assert a.dtype == np.int16 and np.max(np.abs(a.astype(int) - b.astype(int))) <= 2


def test_results_do_not_depend_on_what_came_before(speech: tuple[np.ndarray, int], tmp_path: Path) -> None:
    # PocketSphinx's noise-removal front end keeps state across utterances; each call starts fresh,
    # so a verdict cannot change with the order clips are checked in.
    audio, rate = speech
    first_hyp, first_al = recognize(audio, rate), align(audio, rate, SENTENCE.split())
    other, orate = _render(tmp_path, "a completely different sentence about loud noise", voice="slt")
    noisy = other + 0.2 * np.random.default_rng(0).standard_normal(other.shape).astype(np.float32)
    recognize(noisy, orate)
    align(noisy, orate, "a completely different sentence about loud noise".split())
    assert recognize(audio, rate) == first_hyp
    again = align(audio, rate, SENTENCE.split())
    assert first_al is not None and again is not None
    assert [w.score for w in again.words] == [w.score for w in first_al.words]


def test_int16_at_16k_passes_through_bit_exact() -> None:
    pcm = np.array([0, 1, -1, 32767, -32768, 12345], dtype=np.int16)
    assert to_sphinx_pcm(pcm, 16000) is pcm or np.array_equal(to_sphinx_pcm(pcm, 16000), pcm)
    # float input rounds to the nearest sample value instead of truncating towards zero
    assert to_sphinx_pcm(np.array([0.99999 / 32767, -0.6 / 32767]), 16000).tolist() == [1, -1]


def test_checker_hears_exactly_what_recognize_hears(speech: tuple[np.ndarray, int]) -> None:
    # Auto mode's promise (no output that recognition finds broken is delivered as passed) needs the
    # checker's recognition of a clip to equal a plain recognize() of the same audio.
    from audiopd.checker import CheckerConfig, score
    from audiopd.text.wer import text_to_words, wer

    audio, rate = speech
    rng = np.random.default_rng(1)
    for noise in (0.0, 0.02, 0.05):
        x = (audio + noise * rng.standard_normal(audio.shape)).astype(np.float32)
        v = score(x, rate, SENTENCE, config=CheckerConfig(asr="always"))
        assert v.metrics["asr_wer"] == pytest.approx(wer([text_to_words(SENTENCE)], [text_to_words(recognize(x, rate))]))
