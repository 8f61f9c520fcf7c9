"""Tests of the corpus recipe (recipes/corpus): sentence cleaning, flite output parsing, DP alignment.

The stages have numeric file names, so they are imported by path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from recipe_loader import load_stage


def _load(filename: str, name: str):
    return load_stage("corpus", filename, name)


sentences = _load("01_sentences.py", "corpus_stage01")
render = _load("02_render.py", "corpus_stage02")
durations = _load("03_durations.py", "corpus_stage03")
encode = _load("06_encode.py", "corpus_stage06")
dev_set = _load("dev_set.py", "corpus_dev_set")


@pytest.mark.parametrize("raw, expected", [
    ("A yawn is a silent shout.", "A yawn is a silent shout."),
    ('"Whole quoted sentence here."', "Whole quoted sentence here."),
    ('"Whole quoted sentence here".', "Whole quoted sentence here."),
    ("It's a well-known fact, isn't it?", "It's a well-known fact, isn't it?"),
    ("Too short.", None),                                       # < 4 words
    (" ".join(["word"] * 31) + ".", None),                      # > 30 words
    ("There were 3 little pigs.", None),                        # digits
    ("Send mail to me @ home now.", None),                      # symbols
    ("He said \"no\" to the offer.", None),                      # inner quotation
    ("I run UNIX on my machine.", None),                        # acronym
    ("Ask Mr. Smith about the garden.", None),                  # abbreviation
    ("The book by J. Smith is dull.", None),                    # initials
    ("Q: what is the answer to this?", None),                   # speaker label
    ("Well... that is all there is.", None),                    # ellipsis
    ("It was -- as they say -- over.", None),                   # dash as punctuation
    ("lower case start is not a sentence.", None),
    ("No final punctuation in this one", None),
    ("Caf\u00e9 au lait is very nice.", None),                  # non-ASCII
])
def test_clean_sentence(raw: str, expected: str | None) -> None:
    assert sentences.clean_sentence(raw) == expected


def test_entries_drop_attributions_and_caps_lines_and_split() -> None:
    text = ("A banker is a fellow who lends you his umbrella when the sun is shining\n"
            "and wants it back the minute it begins to rain.\n\t\t-- Mark Twain\n%\n"
            "WARNING WARNING READ THIS\nThe cat sat on the mat.  Then it slept all day long!\n%\n")
    entries = sentences.split_entries(text)
    assert len(entries) == 2
    first = sentences.entry_sentences(entries[0])
    assert first == ["A banker is a fellow who lends you his umbrella when the sun is shining "
                     "and wants it back the minute it begins to rain."]
    assert sentences.entry_sentences(entries[1]) == ["The cat sat on the mat.", "Then it slept all day long!"]


def test_collect_deduplicates_case_and_punctuation_insensitively() -> None:
    texts = ["The cat sat on the mat.\n%\nthe cat sat on the mat!\n%\nThe Cat, sat on the mat?\n%\n"
             "A dog sat on the mat.\n"]
    assert list(sentences.collect(texts)) == ["The cat sat on the mat.", "A dog sat on the mat."]


def test_split_is_stable_and_about_five_percent() -> None:
    keys = [f"sentence number {w} of the test" for w in
            (f"{a}{b}{c}" for a in "abcdefghij" for b in "abcdefghij" for c in "abcdefghij")]
    splits = [sentences.split_of(k) for k in keys]
    assert splits == [sentences.split_of(k) for k in keys]
    share = splits.count("test") / len(splits)
    assert 0.03 < share < 0.07
    assert sentences.normalise_key("It's, the END!") == sentences.normalise_key("its the end")


def test_build_rows_cap_keeps_stable_subset() -> None:
    pool = [f"This is sentence {w} here." for w in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")]
    some = sentences.build_rows(pool, 3)
    assert len(some) == 3
    assert {r[0] for r in some} == {r[0] for r in sentences.build_rows(list(reversed(pool)), 3)}


def test_parse_psdur_gives_contiguous_segments() -> None:
    phones = render.parse_psdur("pau:0.164 hh:0.255 ax:0.304 l:0.547 ow:0.661 pau:0.891 \n")
    assert [p for p, _, _ in phones] == ["pau", "hh", "ax", "l", "ow", "pau"]
    assert phones[0][1] == 0.0 and phones[-1][2] == pytest.approx(0.891)
    assert all(a[2] == b[1] for a, b in zip(phones, phones[1:]))
    with pytest.raises(render.RenderError):
        render.parse_psdur("")


HELLO_TOKENS = ["^", "HH", "AH0", "L", "OW1", ",", "W", "ER1", "L", "D", ".", "$"]
HELLO_FLITE = [("pau", 0.0, 0.2), ("hh", 0.2, 0.3), ("ax", 0.3, 0.35), ("l", 0.35, 0.5), ("ow", 0.5, 0.7),
               ("pau", 0.7, 0.9), ("w", 0.9, 1.0), ("er", 1.0, 1.2), ("l", 1.2, 1.3), ("d", 1.3, 1.4),
               ("pau", 1.4, 1.6)]


def test_alignment_of_identical_sequences_copies_flite_times() -> None:
    result = durations.token_durations(HELLO_TOKENS, HELLO_FLITE, 1.6)
    got = dict(zip(range(len(HELLO_TOKENS)), result.durations_s))
    assert result.match_rate == 1.0 and (result.substitutions, result.deletions, result.insertions) == (0, 0, 0)
    assert got[0] == pytest.approx(0.2)          # leading silence -> "^"
    assert got[1] == pytest.approx(0.1)          # HH
    assert got[5] == pytest.approx(0.2)          # the comma owns the mid pause
    assert got[10] == pytest.approx(0.0)         # "." before "$": the final pau is the end's
    assert got[11] == pytest.approx(0.2)
    assert sum(result.durations_s) == pytest.approx(1.6)


def test_alignment_word_boundary_takes_an_unpunctuated_pause_and_zero_otherwise() -> None:
    tokens = ["^", "AY1", "_", "S", "IY1", "$"]
    flite = [("pau", 0.0, 0.1), ("ay", 0.1, 0.3), ("pau", 0.3, 0.4), ("s", 0.4, 0.5), ("iy", 0.5, 0.7),
             ("pau", 0.7, 0.8)]
    assert durations.token_durations(tokens, flite, 0.8).durations_s[2] == pytest.approx(0.1)
    no_pause = [s for k, s in enumerate(flite) if k != 2]
    assert durations.token_durations(tokens, no_pause, 0.8).durations_s[2] == 0.0


def test_variant_pronunciation_is_counted_and_time_spread() -> None:
    # frontend "the" = DH AH0, flite says dh iy; frontend has an extra T flite dropped; flite adds a K.
    tokens = ["^", "DH", "AH0", "_", "K", "AE1", "T", "S", "$"]
    flite = [("pau", 0.0, 0.1), ("dh", 0.1, 0.2), ("iy", 0.2, 0.3), ("k", 0.3, 0.4), ("ae", 0.4, 0.6),
             ("s", 0.6, 0.8), ("k", 0.8, 0.9), ("pau", 0.9, 1.0)]
    result = durations.token_durations(tokens, flite, 1.0)
    assert (result.substitutions, result.deletions, result.insertions) == (1, 1, 1)
    assert result.match_rate == pytest.approx(4 / 6, abs=1e-3)  # DH K AE1 S of DH AH0 K AE1 T S
    d = result.durations_s
    assert d[2] == pytest.approx(0.1)                     # AH0 took "iy"'s time
    assert d[6] > 0 and d[6] == pytest.approx(d[5])        # the missing T shares with its neighbour AE1
    assert sum(d) == pytest.approx(1.0)
    assert all(x >= 0 for x in d)


def test_durations_fit_the_audio_length() -> None:
    over = [(p, s * 1.05, e * 1.05) for p, s, e in HELLO_FLITE]   # larger than the final pause: scaled
    assert sum(durations.token_durations(HELLO_TOKENS, over, 1.6).durations_s) == pytest.approx(1.6, abs=1e-4)
    short = durations.token_durations(HELLO_TOKENS, HELLO_FLITE, 1.75)  # audio longer than flite's last end
    assert short.durations_s[-1] == pytest.approx(0.35) and sum(short.durations_s) == pytest.approx(1.75)


def test_kal16_overshoot_is_cut_from_the_final_pause() -> None:
    # kal16: flite reports its final pause ~0.12 s past the waveform's end; the phones keep flite's times.
    result = durations.token_durations(HELLO_TOKENS, HELLO_FLITE, 1.48)
    exact = durations.token_durations(HELLO_TOKENS, HELLO_FLITE, 1.6).durations_s
    assert result.durations_s[:-1] == exact[:-1]
    assert result.durations_s[-1] == pytest.approx(0.08)
    assert sum(result.durations_s) == pytest.approx(1.48)


def test_alignment_rejects_empty_inputs() -> None:
    with pytest.raises(ValueError):
        durations.token_durations([], HELLO_FLITE, 1.6)
    with pytest.raises(ValueError):
        durations.token_durations(HELLO_TOKENS, [], 1.6)


def test_encode_frames_per_token_and_sentence_list(tmp_path: Path) -> None:
    frames = encode.frames_per_token([0.104, 0.051, 0.2, 0.145], 100.0, 50)
    assert frames.tolist() == [10, 6, 20, 14] and frames.sum() == 50    # cumulative rounding, never drifting
    ids = tmp_path / "ids.txt"
    ids.write_text("# fine-tuning subset\ns0001  # first\n\ns0002\n")
    assert encode.read_ids(ids) == {"s0001", "s0002"}
    ids.write_text("# nothing\n")
    with pytest.raises(SystemExit, match="no sentence ids"):
        encode.read_ids(ids)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("flite") is None, reason="flite is not installed")
def test_render_two_sentences_end_to_end(tmp_path: Path) -> None:
    fortunes = tmp_path / "fortunes"
    fortunes.mkdir()
    (fortunes / "tiny").write_text("The cat sat on the mat.\n%\nA yawn is a silent shout.\n\t-- Someone\n%\n")
    data = tmp_path / "data"
    assert sentences.main(["--data", str(data), "--fortune-dir", str(fortunes)]) == 0
    assert render.main(["--data", str(data), "--voices", "slt,kal16"]) == 0
    manifest = [json.loads(line) for line in (data / "corpus" / "manifest.jsonl").read_text().splitlines()]
    assert len(manifest) == 4 and {m["voice"] for m in manifest} == {"slt", "kal16"}
    import soundfile as sf
    for row in manifest:
        info = sf.info(str(data / row["wav"]))
        assert info.samplerate == 16000 and info.channels == 1 and info.subtype == "PCM_16"
        assert row["seconds"] == pytest.approx(info.frames / 16000, abs=1e-3) and row["seconds"] > 0.5
        phones = render.cc.read_phones(data / row["phones"])
        assert phones[0][0] == "pau" and phones[-1][0] == "pau" and len(phones) > 8
    # Resumable: a second run is a no-op because of the done-marker; --force re-renders nothing present.
    stamp = (data / manifest[0]["wav"]).stat().st_mtime_ns
    assert render.main(["--data", str(data), "--voices", "slt,kal16", "--force"]) == 0
    assert (data / manifest[0]["wav"]).stat().st_mtime_ns == stamp
    assert durations.main(["--data", str(data), "--jobs", "1"]) == 0
    rows = [json.loads(line) for line in (data / "corpus" / "durations.jsonl").read_text().splitlines()]
    assert len(rows) == 4
    for row, man in zip(rows, manifest):
        assert sum(row["durations_s"]) == pytest.approx(man["seconds"], abs=1e-3)
        assert row["match_rate"] > 0.8
        # Speech keeps flite's times: the last word ends where flite says, whatever the waveform lacks at the end.
        phones = render.cc.read_phones(data / man["phones"])
        last_phone_end = max(e for p, _, e in phones if p != "pau")
        assert sum(row["durations_s"][:-1]) == pytest.approx(last_phone_end, abs=2e-3)


def test_dev_set_takes_unused_test_sentences_only() -> None:
    rows = [("s05", "test", "E."), ("s01", "train", "A."), ("s03", "test", "C."), ("s02", "test", "B."),
            ("s04", "test", "D.")]
    # s02 is in the corpus already: the development set never shares a sentence with it (or with training).
    assert dev_set.dev_rows(rows, {"s01", "s02"}, 2) == [("s03", "test", "C."), ("s04", "test", "D.")]
    assert dev_set.dev_rows(rows, set(), 10) == [("s02", "test", "B."), ("s03", "test", "C."),
                                                 ("s04", "test", "D."), ("s05", "test", "E.")]


def test_dev_set_refuses_to_overwrite_the_corpus(tmp_path) -> None:
    with pytest.raises(SystemExit, match="must not be the corpus"):
        dev_set.main(["--data", str(tmp_path), "--out", str(tmp_path)])
