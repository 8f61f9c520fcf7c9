"""Weak forms of "to" and "for" (``audiopd.text.g2p.WEAK_FORMS``): the frontend's labelling for a voice trained on
them (``VoiceInfo.weak_forms``), the facade speaking to such a voice that way, and recipes/natural stage 05, which
relabels a corpus's shards without moving a frame."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from recipe_loader import load_stage
from voice_fixtures import tiny_voice

from audiopd.codec.fixture import make_fixture_codec
from audiopd.errors import ArtifactError
from audiopd.model.info import VoiceInfo
from audiopd.pipeline import Synthesizer
from audiopd.text.frontend import phonemize
from audiopd.text.symbols import symbols_to_ids
from audiopd.train.shards import Shard, ShardMeta, Utterance, write_shard

weak_stage = load_stage("natural", "05_weak_forms.py", "natural_stage05")


def _tokens(text: str, weak: bool) -> str:
    return " ".join(phonemize(text, weak_forms=weak).tokens)


def test_weak_forms_before_another_word_strong_at_a_phrase_end() -> None:
    text = "I went to two shops for four hours. What is it for? Go to, then."
    strong, weak = _tokens(text, False), _tokens(text, True)
    assert "T AH0 _ T UW1" in weak and "F ER0 _ F AO1 R" in weak  # "to two", "for four" now differ
    assert "T UW1 _ T UW1" in strong and "F AO1 R _ F AO1 R" in strong  # the dictionary's homophones
    assert "IH1 T _ F AO1 R ?" in weak and "T UW1 , DH" in weak  # before punctuation: the strong form
    assert _tokens("Too old for it.", True).startswith("^ T UW1 _ OW1 L D _ F ER0")
    assert _tokens("Hello there.", True) == _tokens("Hello there.", False)  # nothing else changes


def test_voice_info_flag_is_a_bool() -> None:
    assert VoiceInfo(voices=("a",)).weak_forms is False
    with pytest.raises(ArtifactError, match="weak_forms"):
        VoiceInfo(voices=("a",), weak_forms="yes")


def test_the_facade_labels_text_as_its_voice_was_trained() -> None:
    model = tiny_voice(("slt",))
    plain = Synthesizer(model, make_fixture_codec())
    weak_model = tiny_voice(("slt",))
    weak_model.info = dataclasses.replace(weak_model.info, weak_forms=True)
    weak = Synthesizer(weak_model, make_fixture_codec())
    text = "Bring it to me."
    assert [it.ids for it in plain._items(text, 0)] == [phonemize(text).ids]
    assert [it.ids for it in weak._items(text, 0)] == [phonemize(text, weak_forms=True).ids]
    assert weak.synthesize(text, mode="parallel", seed=0).audio.size > 0


def _meta() -> ShardMeta:
    return ShardMeta(codec="fixture", sample_rate=16000, frame_rate=100.0, num_codebooks=2, cardinality=8,
                     inventory_version="1", voices=("kokoro:af_heart",))


def test_stage_05_relabels_ids_and_regroups_frames(tmp_path) -> None:
    texts = {"s1": "Wait for me to come.", "s2": "Hello there.", "s3": "A changed text."}
    utts = []
    for k, (sid, text) in enumerate(texts.items()):
        ph = phonemize(text if sid != "s3" else "Another text entirely.")
        durs = np.arange(len(ph.ids)) % 3 + 1
        codes = np.full((2, int(durs.sum())), k, dtype=np.int64)
        utts.append(Utterance(f"kokoro:af_heart/{sid}", 0, np.asarray(ph.ids), durs, codes))
    src = write_shard(tmp_path / "in" / "train-000.safetensors", utts, _meta())
    info = weak_stage.relabel_shard(src, tmp_path / "out", texts)
    assert info == {"shard": "train-000.safetensors", "utterances": 3, "relabelled": 1, "kept_unmapped": 1}
    out = Shard(tmp_path / "out" / "train-000.safetensors")
    first, old = out.utterance(0), utts[0]
    assert tuple(first.phonemes) == phonemize(texts["s1"], weak_forms=True).ids
    assert first.durations.sum() == old.durations.sum() and np.array_equal(first.codes, old.codes)
    # "for": F AO1 R -> F ER0, ER0 holding the frames of AO1 and R; "to": same length, same frames.
    strong = phonemize(texts["s1"])
    w = strong.words[1]
    assert len(first.phonemes) == len(old.phonemes) - 1
    assert list(first.durations[w.start:w.start + 2]) == [old.durations[w.start],
                                                           old.durations[w.start + 1] + old.durations[w.start + 2]]
    assert tuple(first.phonemes[w.start:w.start + 2]) == symbols_to_ids(["F", "ER0"])
    assert np.array_equal(out.utterance(1).phonemes, utts[1].phonemes)  # no weak word
    assert np.array_equal(out.utterance(2).phonemes, utts[2].phonemes)  # ids not its text's: kept, counted
    with pytest.raises(SystemExit, match="must not be the shards' own folder"):
        weak_stage.main([str(src), "--text", str(tmp_path / "x.tsv"), "--out", str(tmp_path / "in")])
