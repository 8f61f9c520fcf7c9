"""audiopd.eval.oracle on the tiny fixture voice, a fixture-codec test shard and a fixed recognizer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from voice_fixtures import FRAMES_PER_TOKEN, HOP, install_voices

import audiopd
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.eval.oracle import (
    OracleInputError,
    decode_system,
    evaluate,
    main,
    markdown_table,
)
from audiopd.text import INVENTORY_VERSION, phonemize
from audiopd.train.shards import ShardMeta, Utterance, write_shard

SPEAKERS = ("slt", "rms")
TEXTS = {"a1": "Please call me tomorrow.", "b2": "It was a very good year."}


@pytest.fixture
def env(tmp_path, monkeypatch) -> Path:
    install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: SPEAKERS})
    data = tmp_path / "data"
    rows, utts = [], []
    rng = np.random.default_rng(0)
    for sid, text in TEXTS.items():
        ids = np.array(phonemize(text).ids, dtype=np.int64)
        durations = rng.integers(2, 9, size=len(ids))  # not the voice's 5 frames per token
        for k, sp in enumerate(SPEAKERS):
            wav = data / "corpus" / "wav" / sp / f"{sid}.wav"
            wav.parent.mkdir(parents=True, exist_ok=True)
            sf.write(str(wav), 0.1 * np.sin(np.arange(4000) / 5.0).astype(np.float32), 16000)
            rows.append({"id": sid, "voice": sp, "split": "test", "text": text,
                         "wav": str(wav.relative_to(data)), "seconds": 0.25})
            codes = rng.integers(0, 64, size=(4, int(durations.sum())))
            utts.append(Utterance(utt_id=f"{sp}/{sid}", speaker=k, phonemes=ids, durations=durations, codes=codes))
    (data / "corpus" / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = ShardMeta(codec="fx", sample_rate=16000, frame_rate=100.0, num_codebooks=4, cardinality=64,
                     inventory_version=str(INVENTORY_VERSION), voices=SPEAKERS)
    write_shard(data / "tokens" / "fx" / "test-000.safetensors", utts, meta)
    write_shard(data / "tokens" / "fx" / "train-000.safetensors", utts[:1], meta)  # never read
    return data


def first_utt(data: Path):
    from audiopd.train.shards import Shard

    return Shard(data / "tokens" / "fx" / "test-000.safetensors").utterance(0)


def test_systems_keep_exactly_their_ground_truth(env) -> None:
    tts = audiopd.load()
    u = first_utt(env)
    assert np.array_equal(decode_system("codec", tts, u, 0, 0), u.codes)
    fine = decode_system("fine", tts, u, 0, 0)
    assert fine.shape == u.codes.shape and np.array_equal(fine[0], u.codes[0])
    assert not np.array_equal(fine[1:], u.codes[1:])  # the model's guesses, not the truth
    for system in ("gt_dur_parallel", "gt_dur_serial"):
        assert decode_system(system, tts, u, 0, 0).shape == u.codes.shape  # ground-truth timing
    for system in ("parallel", "serial"):  # the voice's own timing: 5 frames per token
        assert decode_system(system, tts, u, 0, 0).shape == (4, len(u.phonemes) * FRAMES_PER_TOKEN)
    a = decode_system("parallel", tts, u, 0, 7)
    assert np.array_equal(a, decode_system("parallel", tts, u, 0, 7))  # deterministic for a seed


def test_wer_rows_per_speaker_and_pooled(env) -> None:
    tts = audiopd.load()
    heard = []

    def recognizer(audio, rate):  # the teacher clip (4000 samples) is heard right, the rest as one wrong word
        heard.append(audio.size)
        return "please call me tomorrow" if audio.size == 4000 else "wrong"

    report = evaluate(tts, env, n=1, systems=["teacher", "codec", "parallel"], recognizer=recognizer)
    assert report["speakers"] == list(SPEAKERS)
    by = {(r["speaker"], r["system"]): r for r in report["rows"]}
    # n=1: the first test utterance of each speaker ("Please call me tomorrow.", 4 words).
    assert by[("slt", "teacher")]["wer"] == 0.0 and by[("rms", "teacher")]["wer"] == 0.0
    assert by[("slt", "codec")]["wer"] == 100.0  # 1 substitution + 3 deletions of 4 words
    assert by[("all", "parallel")] == {"speaker": "all", "system": "parallel", "n": 2, "wer": 100.0,
                                       "distillmos": None, "dnsmos_ovrl": None, "dnsmos_p808": None}
    u = first_utt(env)
    assert u.codes.shape[1] * HOP in heard  # the codec system decoded the ground-truth frames
    assert len(phonemize(TEXTS["a1"]).ids) * FRAMES_PER_TOKEN * HOP in heard
    table = markdown_table(report)
    assert table.splitlines()[0] == "| speaker | n | teacher | codec | parallel |"
    assert "| all | 2 | 0.00 | 100.00 | 100.00 |" in table


def test_bad_inputs_are_clear_errors(env, tmp_path) -> None:
    tts = audiopd.load()
    with pytest.raises(OracleInputError, match="systems must be"):
        evaluate(tts, env, systems=["magic"])
    with pytest.raises(OracleInputError, match="unknown speaker"):
        evaluate(tts, env, speakers=["zed"], systems=["teacher"])
    with pytest.raises(OracleInputError, match="n must be"):
        evaluate(tts, env, n=0)
    empty = tmp_path / "empty"
    (empty / "corpus").mkdir(parents=True)
    (empty / "corpus" / "manifest.jsonl").write_text("")
    with pytest.raises(OracleInputError, match="no held-out token shard"):
        evaluate(tts, empty, systems=["teacher"])
    assert main(["--data", str(tmp_path / "nowhere")]) == 2



def test_naturalness_rows_and_tables(env) -> None:
    from audiopd.eval.judging import EvalJudge

    # A fake naturalness scorer: 4.0 for the teacher clip (4000 samples), 2.0 for everything decoded.
    judge = EvalJudge(lambda a, r: "", lambda a, r: {"distillmos": 4.0 if a.size == 4000 else 2.0,
                                                       "dnsmos_ovrl": 3.0, "dnsmos_p808": 3.5})
    report = evaluate(audiopd.load(), env, n=1, systems=["teacher", "codec"], judge=judge)
    by = {(r["speaker"], r["system"]): r for r in report["rows"]}
    assert by[("all", "teacher")]["distillmos"] == 4.0 and by[("slt", "codec")]["distillmos"] == 2.0
    assert report["judge"]["asr"] == "custom" and report["judge"]["mos"] is True
    table = markdown_table(report, "distillmos")
    assert table.splitlines()[0] == "| speaker (distillmos) | n | teacher | codec |"
    assert "| all | 2 | 4.00 | 2.00 |" in table


def test_dev_split_and_a_corpus_speaker_table(env) -> None:
    # A natural corpus's shard carries its own speaker table (every teacher of the corpus, in its order): each
    # utterance is matched to the voice's speaker by name, whatever its index there.
    from audiopd.train.shards import Shard

    test = Shard(env / "tokens" / "fx" / "test-000.safetensors")
    table = ("other", "rms", "slt")
    utts = []
    for i in range(len(test)):
        u = test.utterance(i)
        utts.append(Utterance(utt_id=u.utt_id, speaker=table.index(SPEAKERS[u.speaker]), phonemes=u.phonemes,
                              durations=u.durations, codes=u.codes))
    meta = ShardMeta(codec="fx", sample_rate=16000, frame_rate=100.0, num_codebooks=4, cardinality=64,
                     inventory_version=str(INVENTORY_VERSION), voices=table)
    write_shard(env / "tokens" / "fx" / "dev-000.safetensors", utts[:3], meta)
    tts = audiopd.load()
    report = evaluate(tts, env, systems=["codec"], split="dev", recognizer=lambda a, r: "please call me tomorrow")
    assert report["split"] == "dev"
    by = {r["speaker"]: r["n"] for r in report["rows"]}
    assert by == {"slt": 2, "rms": 1, "all": 3}
    # The codec row decodes the ground-truth tokens of the right utterance for each speaker.
    assert [u["id"] for u in report["utterances"]] == sorted([u.utt_id for u in utts[:3]],
                                                            key=lambda x: (SPEAKERS.index(x.split("/")[0]),))
    with pytest.raises(OracleInputError, match="split must be"):
        evaluate(tts, env, systems=["teacher"], split="train")
