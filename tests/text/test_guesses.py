"""Where each word's phones come from (``audiopd.text.guesses``), and ``audiopd phonemize --words / --guesses``: the
guessed words come out as a lexicon file that loads back, and with it they are guessed no more."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from audiopd.cli import main
from audiopd.errors import TextLimitError
from audiopd.text.guesses import DICTIONARY, GUESSED, LEXICON, as_lexicon, guesses, source_of, word_phones
from audiopd.text.lexicon import load_lexicon


def test_each_word_says_where_its_phones_come_from() -> None:
    lx = load_lexicon({"nguyen": "W IH1 N"})
    got = word_phones("Mr. Nguyen runs Kubernetes.", lexicon=lx)
    assert [(w.word, w.source) for w in got] == [("mister", DICTIONARY), ("nguyen", LEXICON), ("runs", DICTIONARY),
                                                 ("kubernetes", GUESSED)]
    assert got[1].phones == ("W", "IH1", "N") and got[3].phones == ("K", "AH1", "B", "ER0", "N", "AH0", "T", "S")
    assert source_of("nguyen") == DICTIONARY  # the CMU dictionary has it, as N UW0 Y EH1 N
    assert source_of("xkcd") == GUESSED  # spelled out: the dictionary lacks it too


def test_guesses_count_words_over_lines_and_skip_what_says_nothing() -> None:
    found = guesses(["We run it on Kubernetes.", "", "***", "Put Nginx before Kubernetes!", "The cat sat."])
    assert list(found) == ["kubernetes", "nginx"] and found["kubernetes"][1] == 2 and found["nginx"][1] == 1
    assert guesses(["Kubernetes."], lexicon=load_lexicon({"kubernetes": "K UW2 B ER0 N EH1 T IY0 Z"})) == {}
    with pytest.raises(TextLimitError, match="line 2: word 1"):
        guesses(["Fine.", "a" * 60])


def test_the_guesses_file_is_a_lexicon_that_loads_back(tmp_path: Path) -> None:
    found = guesses(["Nginx, Kubernetes and Kubernetes again."])
    text = as_lexicon(found)
    assert text.startswith(";;; 2 word(s) the dictionary lacks")
    assert text.splitlines()[1].startswith("KUBERNETES  K AH1 B ER0 N AH0 T S  # 2x")  # most frequent first
    path = tmp_path / "mine.dict"
    path.write_text(text, encoding="utf-8")
    lx = load_lexicon(path)
    assert lx.get("nginx") == found["nginx"][0] and len(lx) == 2
    assert as_lexicon({}).count("\n") == 1  # nothing guessed: the comment alone, still a valid (empty) lexicon


def test_cli_words_and_guesses(tmp_path: Path, capsys, monkeypatch) -> None:
    assert main(["phonemize", "--words", "Hi", "Kubernetes"]) == 0
    assert capsys.readouterr().out.splitlines() == ["hi\tHH AY1\tdictionary",
                                                    "kubernetes\tK AH1 B ER0 N AH0 T S\tguessed"]
    monkeypatch.setattr("sys.stdin", io.StringIO("Deploy Kubernetes.\nThen Nginx.\n"))
    assert main(["phonemize", "--guesses", "-"]) == 0
    out = capsys.readouterr().out
    (tmp_path / "mine.dict").write_text(out.replace("K AH1 B ER0 N AH0 T S", "K UW2 B ER0 N EH1 T IY0 Z"))
    assert main(["phonemize", "--guesses", "--lexicon", str(tmp_path / "mine.dict"), "Deploy Kubernetes."]) == 0
    assert capsys.readouterr().out.startswith(";;; 0 word(s)")
    assert main(["phonemize", "--words", "--guesses", "Hi"]) == 2  # one view at a time
