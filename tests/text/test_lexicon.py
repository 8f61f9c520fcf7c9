"""The user's lexicon (``audiopd.text.lexicon``): its two file formats, every refusal, and the frontend, the facade,
the checker and ``audiopd render`` all speaking a lexicon word its way."""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from voice_fixtures import tiny_voice

import audiopd
from audiopd.batch.driver import RenderOptions, request_of
from audiopd.batch.inputs import Row, read_rows
from audiopd.codec.fixture import make_fixture_codec
from audiopd.pipeline import Synthesizer
from audiopd.cli import main
from audiopd.text import lexicon as lexicon_mod
from audiopd.text.frontend import phonemize
from audiopd.text.lexicon import Lexicon, LexiconError, load_lexicon, merge_lexicons


def _tokens(text: str, lexicon: Lexicon | None = None, **kw) -> str:
    return " ".join(phonemize(text, lexicon=lexicon, **kw).tokens)


def test_cmu_format_comments_variants_and_case(tmp_path: Path) -> None:
    path = tmp_path / "my.dict"
    path.write_text(";;; names we say our way\n\nNGUYEN  W IH1 N\nnguyen(2)  N UW0 Y EH1 N\n"
                    "kubernetes\tk uw2 b er0 n eh1 t iy0 z  # the container thing\n", encoding="utf-8")
    lx = load_lexicon(path)
    assert len(lx) == 2 and lx.source == str(path)
    assert lx.get("Nguyen") == ("W", "IH1", "N") and "NGUYEN" in lx
    assert lx.get("kubernetes") == ("K", "UW2", "B", "ER0", "N", "EH1", "T", "IY0", "Z")
    assert lx.get("docker") is None


def test_json_and_mapping_give_the_same_lexicon(tmp_path: Path) -> None:
    path = tmp_path / "my.json"
    path.write_text(json.dumps({"Nguyen": "W IH1 N", "gif": ["JH", "IH1", "F"]}), encoding="utf-8")
    from_file = load_lexicon(path)
    from_map = load_lexicon({"gif": "jh ih1 f", "nguyen": ["w", "ih1", "n"]})
    assert from_file.entries == from_map.entries
    assert from_file.sha256 == from_map.sha256  # entries only: not the source, not the order
    assert load_lexicon({"gif": "G IH1 F"}).sha256 != from_map.sha256
    assert load_lexicon(from_map) is from_map and load_lexicon(None) is None
    assert pickle.loads(pickle.dumps(from_map)).entries == from_map.entries  # render workers receive it


@pytest.mark.parametrize(("entries", "message"), [
    ({"e-mail": "IY1 M EY1 L"}, "not a word the frontend can meet"),
    ({"r2d2": "AA1 R"}, "not a word the frontend can meet"),
    ({"x": "AH"}, r"needs its stress digit \(AH0, AH1 or AH2\)"),
    ({"x": "K QQ"}, "'QQ' is not an ARPAbet phone"),
    ({"x": "   "}, "no phones"),
    ({"x": 5}, "phones must be a string or a list"),
    ({"x": " ".join(["AH0"] * 65)}, "65 phones; at most 64"),
    ({"a" * 49: "AH0"}, "longer than the 48 letters"),
    ({"Gif": "G IH1 F", "GIF": "JH IH1 F"}, "'gif' is already given"),
])
def test_bad_entries_are_refused_by_name(entries: dict, message: str) -> None:
    with pytest.raises(LexiconError, match=message):
        load_lexicon(entries)


def test_bad_files_are_refused_with_file_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LexiconError, match="No such file"):
        load_lexicon(tmp_path / "missing.dict")
    with pytest.raises(LexiconError, match="not a file"):
        load_lexicon(tmp_path)
    bad = tmp_path / "bad.dict"
    bad.write_text("hello  HH AH0 L OW1\nworld\n", encoding="utf-8")
    with pytest.raises(LexiconError, match=r"bad\.dict:2: 'world' has no phones"):
        load_lexicon(bad)
    bad.write_bytes(b"caf\xe9  K AE1 F\n")
    with pytest.raises(LexiconError, match="not UTF-8"):
        load_lexicon(bad)
    js = tmp_path / "bad.json"
    js.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(LexiconError, match="one object of words to phones"):
        load_lexicon(js)
    js.write_text("{oops", encoding="utf-8")
    with pytest.raises(LexiconError, match="not JSON"):
        load_lexicon(js)
    monkeypatch.setattr(lexicon_mod, "MAX_BYTES", 4)
    with pytest.raises(LexiconError, match="5 bytes; at most 4 are read"):
        load_lexicon(js)
    with pytest.raises(TypeError, match="not int"):
        load_lexicon(3)


def test_merging_puts_the_second_over_the_first() -> None:
    base, extra = load_lexicon({"gif": "G IH1 F", "nguyen": "W IH1 N"}), load_lexicon({"gif": "JH IH1 F"})
    both = merge_lexicons(base, extra)
    assert both.get("gif") == ("JH", "IH1", "F") and both.get("nguyen") == ("W", "IH1", "N") and len(both) == 2
    assert merge_lexicons(base, None) is base and merge_lexicons(None, extra) is extra
    assert merge_lexicons(None, None) is None and merge_lexicons(base, Lexicon()) is base
    # its sha256 is that of its parts', so a few words over a large lexicon do not hash the large one again
    assert both.sha256 == hashlib.sha256(f"{base.sha256}:{extra.sha256}".encode()).hexdigest()
    assert merge_lexicons(base, load_lexicon({"gif": "G IH1 F"})).sha256 != both.sha256
    assert "sha256" in base.__dict__  # computed once per lexicon, then read from the instance


def test_a_merged_lexicon_layers_its_parts_and_counts_each_word_once() -> None:
    base = load_lexicon({"gif": "G IH1 F", "nguyen": "W IH1 N"})
    extra = load_lexicon({"gif": "JH IH1 F", "siobhan": "SH IH0 V AO1 N"})
    both = merge_lexicons(base, extra)
    assert len(both) == 3 and "siobhan" in both and "Nguyen" in both and "kubernetes" not in both
    again = merge_lexicons(both, load_lexicon({"nguyen": "N UW1 Y EH0 N", "xiaomi": "SH AW1 M IY0"}))
    assert len(again) == 4 and again.get("NGUYEN") == ("N", "UW1", "Y", "EH0", "N") and again.get("gif")[0] == "JH"
    assert base.get("nguyen") == ("W", "IH1", "N") and len(base) == 2  # the parts are left as they were
    copy = pickle.loads(pickle.dumps(again))  # render workers receive it
    assert copy.get("xiaomi") == again.get("xiaomi") and len(copy) == 4 and copy.sha256 == again.sha256
    assert dict(again.entries) == {**base.entries, **extra.entries, "nguyen": ("N", "UW1", "Y", "EH0", "N"),
                                   "xiaomi": ("SH", "AW1", "M", "IY0")}


def test_phonemize_says_lexicon_words_its_way_before_any_rule() -> None:
    lx = load_lexicon({"nguyen": "W IH1 N", "to": "T UW1"})
    assert _tokens("Mr. Nguyen went to Paris.", lx, weak_forms=True) == (
        "^ M IH1 S T ER0 _ W IH1 N _ W EH1 N T _ T UW1 _ P EH1 R IH0 S . $")
    # without it: the dictionary, and the voice's weak form of "to"
    assert "N UW0 Y EH1 N" in _tokens("Mr. Nguyen went to Paris.", weak_forms=True)
    assert "T AH0 _ P" in _tokens("Mr. Nguyen went to Paris.", weak_forms=True)
    ph = phonemize("Hi Nguyen!", lexicon=lx)
    assert [(w.word, ph.tokens[w.start:w.end]) for w in ph.words] == [("hi", ("HH", "AY1")),
                                                                      ("nguyen", ("W", "IH1", "N"))]
    # matched as the normaliser spells the text out: "Dr." is "doctor"
    assert _tokens("Dr. Who", load_lexicon({"doctor": "D AA1 K"})).startswith("^ D AA1 K _")


def test_a_lexicon_word_is_not_spelled_out_so_the_spelling_limit_spares_it() -> None:
    acronym = "BCDFGHJKLMNPQ"  # no vowel letter: the G2P would spell its 13 letters, over the 12-letter limit
    with pytest.raises(audiopd.AudiopdError, match="spelled out"):
        phonemize(f"Say {acronym}.")
    lx = load_lexicon({acronym: "AE1 B K D"})
    assert "AE1 B K D" in _tokens(f"Say {acronym}.", lx)


def test_the_facade_speaks_and_reports_its_lexicon() -> None:
    tts = Synthesizer(tiny_voice(("slt",)), make_fixture_codec())
    text = "Nguyen called."
    assert tts.lexicon is None and [it.ids for it in tts._items(text, 0)] == [phonemize(text).ids]
    tts.lexicon = load_lexicon({"nguyen": "W IH1 N"})
    assert [it.ids for it in tts._items(text, 0)] == [phonemize(text, lexicon=tts.lexicon).ids]
    result = tts.synthesize(text, mode="parallel", seed=0)
    assert result.audio.size > 0
    assert result.report["lexicon"] == {"source": "<mapping>", "words": 1, "sha256": tts.lexicon.sha256}
    assert [w.word for w in result.words] == ["nguyen", "called"]
    # a call's own words go over the voice's, for that call only
    call = tts.synthesize("Nguyen called Gif.", mode="parallel", seed=0, lexicon={"gif": "JH IH1 F"})
    assert call.report["lexicon"]["words"] == 2 and call.report["lexicon"]["source"] == "<mapping> + <mapping>"
    over = tts._lexicon_for({"nguyen": "N UW1 N"})
    assert over.get("nguyen") == ("N", "UW1", "N") and tts.lexicon.get("nguyen") == ("W", "IH1", "N")
    with pytest.raises(LexiconError, match="stress digit"):
        tts.synthesize("Nguyen called.", mode="parallel", seed=0, lexicon={"x": "AH"})


def test_both_runtimes_speak_with_the_one_lexicon() -> None:
    lx = load_lexicon({"nguyen": "W IH1 N"})
    tts = audiopd.load(runtime="auto", lexicon=lx)  # the shipped default voice, NumPy first
    assert tts.runtime == "numpy" and tts.lexicon is lx
    weak = tts.model.info.weak_forms
    assert [it.ids for it in tts._items("Nguyen called.", 0)] == [
        phonemize("Nguyen called.", weak_forms=weak, lexicon=lx).ids]
    tts.lexicon = other = load_lexicon({"nguyen": "N UW1 N"})
    assert tts.torch_synthesizer().lexicon is other  # repair and serial speak the same words
    result = tts.synthesize("Gif.", mode="parallel", seed=0, lexicon={"gif": "JH IH1 F"})
    assert result.report["runtime"] == "numpy" and result.report["lexicon"]["words"] == 2
    serial = tts.synthesize("Gif.", mode="serial", seed=0, lexicon={"gif": "JH IH1 F"})  # on torch, the same words
    assert serial.report["runtime"] == "torch" and serial.report["lexicon"] == result.report["lexicon"]


def test_load_refuses_a_bad_lexicon_before_the_voice() -> None:
    with pytest.raises(LexiconError, match="stress digit"):
        audiopd.load("no-such-voice", lexicon={"x": "AH"})  # the lexicon's error, not the voice's
    with pytest.raises(LexiconError, match="stress digit"):
        audiopd.load("no-such-voice", runtime="auto", lexicon={"x": "AH"})


def test_the_checker_expects_the_lexicon_phones() -> None:
    rate = 16000
    t = np.arange(rate) / rate
    audio = (0.3 * np.sin(2 * np.pi * 150 * t) * (1 + np.sin(2 * np.pi * 3 * t))).astype(np.float32)
    plain = audiopd.check(audio, rate, "Nguyen")
    ours = audiopd.check(audio, rate, "Nguyen", lexicon=load_lexicon({"nguyen": "W IH1 N"}))
    assert plain.metrics["phones"] == 5 and ours.metrics["phones"] == 3  # N UW0 Y EH1 N against W IH1 N


def test_render_reads_its_rows_with_the_lexicon(tmp_path: Path) -> None:
    rows = tmp_path / "rows.txt"
    rows.write_text("Say BCDFGHJKLMNPQ.\nHello.\n", encoding="utf-8")
    plain = read_rows(str(rows))
    assert "spelled out" in plain[0].error and plain[1].error is None
    ours = read_rows(str(rows), lexicon=load_lexicon({"bcdfghjklmnpq": "B IY1"}))
    assert ours[0].error is None and ours[1].error is None


def test_render_records_the_lexicon_so_a_changed_one_renders_again() -> None:
    row = Row(index=0, line=1, id="1", text="Nguyen called.")
    plain = request_of(row, RenderOptions())
    ours = request_of(row, RenderOptions(lexicon=load_lexicon({"nguyen": "W IH1 N"})))
    other = request_of(row, RenderOptions(lexicon=load_lexicon({"nguyen": "N UW1 N"})))
    assert "lexicon_sha256" not in plain  # manifests written without one stay valid
    assert ours["lexicon_sha256"] != other["lexicon_sha256"]
    assert {k: v for k, v in ours.items() if k != "lexicon_sha256"} == plain


def test_cli_phonemize_takes_a_lexicon_and_refuses_a_bad_one(tmp_path: Path, capsys) -> None:
    path = tmp_path / "my.dict"
    path.write_text("NGUYEN  W IH1 N\n", encoding="utf-8")
    assert main(["phonemize", "--lexicon", str(path), "Hi", "Nguyen"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "^ HH AY1 _ W IH1 N $"
    path.write_text("NGUYEN  W IH N\n", encoding="utf-8")
    assert main(["say", "--lexicon", str(path), "-o", str(tmp_path / "x.wav"), "Hi"]) == 2
    assert "my.dict:1: vowel 'IH' needs its stress digit" in capsys.readouterr().err
    assert not (tmp_path / "x.wav").exists()
