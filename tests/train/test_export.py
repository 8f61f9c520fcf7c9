"""Export a run as a voice artifact; load it back; reject tampering and unknown versions."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from train_fixtures import META, tiny_train_config

from audiopd.errors import ArtifactError
from audiopd.model.voice import load_voice
from audiopd.train.export import export_voice, main as export_main
from audiopd.train.loop import train


@pytest.fixture
def voice_dir(shard_dir: Path, tmp_path: Path) -> Path:
    train(tiny_train_config(max_steps=3), shard_dir, tmp_path / "run")
    return export_voice(tmp_path / "run", tmp_path / "voice")


def test_round_trip(voice_dir: Path, tmp_path: Path) -> None:
    cfg = yaml.safe_load((voice_dir / "config.yaml").read_text())
    assert cfg["format_version"] == 1 and cfg["kind"] == "voice"
    assert cfg["codec"] == META.codec and cfg["voices"] == list(META.voices)
    assert cfg["num_codebooks"] == META.num_codebooks and cfg["cardinality"] == META.cardinality
    assert (voice_dir / "SHA256SUMS").is_file()
    model = load_voice(voice_dir)
    assert not model.training
    assert model.info.voices == META.voices and model.info.speaker_id("b") == 1
    from safetensors.torch import load_file

    from audiopd.train.checkpoint import latest_checkpoint

    ck = load_file(str(latest_checkpoint(tmp_path / "run") / "model.safetensors"))
    for k, v in model.state_dict().items():
        assert torch.equal(v, ck[k]), k


def test_rejects_unknown_version(voice_dir: Path) -> None:
    cfg = yaml.safe_load((voice_dir / "config.yaml").read_text())
    cfg["format_version"] = 2
    (voice_dir / "config.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(ArtifactError, match="format_version"):
        load_voice(voice_dir)


def test_rejects_corrupted_weights(voice_dir: Path) -> None:
    w = voice_dir / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[-1] ^= 0xFF
    w.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="checksum"):
        load_voice(voice_dir)


def test_unknown_voice_name(voice_dir: Path) -> None:
    with pytest.raises(ArtifactError, match="unknown voice"):
        load_voice(voice_dir).info.speaker_id("zed")


def test_export_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert export_main([str(tmp_path / "empty"), str(tmp_path / "v")]) == 2
    assert "no checkpoint" in capsys.readouterr().err


def test_export_ships_checker_thresholds(shard_dir: Path, tmp_path: Path) -> None:
    train(tiny_train_config(max_steps=2), shard_dir, tmp_path / "run")
    th = tmp_path / "checker.yaml"
    th.write_text("asr: always\nmax_wer: 0.51\n")
    out = export_voice(tmp_path / "run", tmp_path / "voice", checker=th)
    model = load_voice(out)
    assert model.checker_config is not None
    assert model.checker_config.asr == "always" and model.checker_config.max_wer == 0.51
    # A re-export without --checker keeps the shipped thresholds, re-checksummed with the new weights.
    export_voice(tmp_path / "run", out)
    assert load_voice(out).checker_config.max_wer == 0.51


def test_export_rejects_bad_checker_thresholds(shard_dir: Path, tmp_path: Path) -> None:
    train(tiny_train_config(max_steps=2), shard_dir, tmp_path / "run")
    th = tmp_path / "checker.yaml"
    th.write_text("max_werr: 0.5\n")
    with pytest.raises(ArtifactError, match="checker.yaml.*max_werr"):
        export_voice(tmp_path / "run", tmp_path / "voice", checker=th)
    assert not (tmp_path / "voice").exists()  # checked before anything is written
    with pytest.raises(ArtifactError, match="not found"):
        export_voice(tmp_path / "run", tmp_path / "voice2", checker=tmp_path / "missing.yaml")


def test_export_records_the_fingerprint_of_a_matching_codec(tmp_path: Path, monkeypatch) -> None:
    import dataclasses

    from audiopd.codec import load_codec
    from audiopd.codec.fixture import write_fixture_artifact
    from audiopd.model.voice import VoiceInfo
    from audiopd.train.export import stamp_codec

    write_fixture_artifact(tmp_path / "codecs" / "fx")
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path / "codecs"))
    fx = load_codec("fx")
    info = VoiceInfo(codec="fx", sample_rate=16000, frame_rate=100.0, num_codebooks=fx.num_codebooks,
                     cardinality=fx.cardinality)
    assert stamp_codec(info).codec_fingerprint == fx.token_fingerprint
    # An existing stamp is kept; a missing codec or one of another shape leaves the voice unstamped.
    assert stamp_codec(dataclasses.replace(info, codec_fingerprint="abc")).codec_fingerprint == "abc"
    assert stamp_codec(dataclasses.replace(info, codec="nowhere")).codec_fingerprint == ""
    assert stamp_codec(dataclasses.replace(info, cardinality=fx.cardinality * 2)).codec_fingerprint == ""
    assert stamp_codec(dataclasses.replace(info, codec="nowhere"), codec="fx").codec_fingerprint == fx.token_fingerprint


def test_person_names_keep_the_teacher() -> None:
    from audiopd.train.export import person_names

    names, teachers = person_names(("kokoro:af_heart", "kokoro:bm_george", "piper:joe"))
    assert names == ("heart", "george", "joe")
    assert teachers == ("kokoro:af_heart", "kokoro:bm_george", "piper:joe")
    assert person_names(("slt", "rms")) == (("slt", "rms"), ())  # the flite voice: unchanged, no teachers
    with pytest.raises(ArtifactError, match="share a name"):
        person_names(("kokoro:af_heart", "kokoro:bf_heart"))


def test_export_names_teacher_named_speakers_after_people(tmp_path: Path) -> None:
    import dataclasses

    from train_fixtures import make_utterances

    from audiopd.train.shards import write_shard

    meta = dataclasses.replace(META, voices=("kokoro:af_heart", "piper:joe"))
    write_shard(tmp_path / "shards" / "s0.safetensors", make_utterances(12, 0), meta)
    train(tiny_train_config(max_steps=2), tmp_path / "shards", tmp_path / "run")
    model = load_voice(export_voice(tmp_path / "run", tmp_path / "voice"))
    assert model.info.voices == ("heart", "joe") and model.info.speaker_id("joe") == 1
    assert model.info.teacher("heart") == "kokoro:af_heart" and model.info.teacher("joe") == "piper:joe"
    cfg = yaml.safe_load((tmp_path / "voice" / "config.yaml").read_text())
    assert cfg["teachers"] == ["kokoro:af_heart", "piper:joe"]


def test_voice_info_rejects_teachers_that_do_not_match_the_voices() -> None:
    from audiopd.model.voice import VoiceInfo

    with pytest.raises(ArtifactError, match="1 teacher"):
        VoiceInfo(voices=("a", "b"), teachers=("kokoro:af_heart",))
    assert VoiceInfo(voices=("slt",)).teacher("slt") == "slt"


def test_export_ships_only_the_named_speakers(tmp_path: Path) -> None:
    """A corpus's speaker table can hold voices not rendered yet; export --speakers drops their untrained rows."""
    import dataclasses

    from train_fixtures import make_utterances

    from audiopd.train.shards import write_shard

    meta = dataclasses.replace(META, voices=("kokoro:af_heart", "piper:joe"))
    write_shard(tmp_path / "shards" / "s0.safetensors", make_utterances(12, 0), meta)
    train(tiny_train_config(max_steps=2), tmp_path / "shards", tmp_path / "run")
    full = load_voice(export_voice(tmp_path / "run", tmp_path / "both"))
    assert export_main([str(tmp_path / "run"), str(tmp_path / "joe"), "--speakers", "piper:joe"]) == 0
    joe = load_voice(tmp_path / "joe")
    assert joe.info.voices == ("joe",) and joe.info.teacher("joe") == "piper:joe" and joe.cfg.num_speakers == 1
    ids = torch.tensor([[3, 5, 7, 9]])
    a = full.condition(ids, torch.tensor([1]))  # joe is speaker 1 of the run, speaker 0 of the export
    b = joe.condition(ids, torch.tensor([0]))
    assert torch.equal(a.durations, b.durations) and torch.allclose(a.frames, b.frames)
    with pytest.raises(ArtifactError, match="unknown speaker 'amy'"):
        export_voice(tmp_path / "run", tmp_path / "x", speakers=("amy",))
    with pytest.raises(ArtifactError, match="twice"):
        export_voice(tmp_path / "run", tmp_path / "x", speakers=("joe", "piper:joe"))


def test_float16_export_halves_the_weights_and_loads_as_float32(voice_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    from audiopd import artifacts

    half = export_voice(tmp_path / "run", tmp_path / "half", dtype="float16")
    stored = load_file(str(half / "model.safetensors"))
    assert {v.dtype for v in stored.values() if v.is_floating_point()} == {torch.float16}
    full_size, half_size = ((d / "model.safetensors").stat().st_size for d in (voice_dir, half))
    assert half_size < 0.6 * full_size
    a, b = load_voice(voice_dir).state_dict(), load_voice(half).state_dict()
    for k in a:
        assert b[k].dtype == a[k].dtype and torch.allclose(a[k], b[k], rtol=1e-3, atol=1e-4), k
    # Any other storage type is refused by name, not half-loaded.
    odd = {k: (v.to(torch.bfloat16) if v.is_floating_point() else v) for k, v in stored.items()}
    save_file(odd, str(half / "model.safetensors"))
    artifacts.write_checksums(half)
    with pytest.raises(ArtifactError, match="bfloat16"):
        load_voice(half)
    with pytest.raises(ArtifactError, match="dtype"):
        export_voice(tmp_path / "run", tmp_path / "x", dtype="int8")


def test_export_records_each_speakers_blur(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--smooth-frames ships a decode-time blur per voice (by name or teacher); every voice must be named."""
    import dataclasses

    from train_fixtures import make_utterances

    from audiopd.train.export import parse_smoothing
    from audiopd.train.shards import write_shard

    meta = dataclasses.replace(META, voices=("kokoro:af_heart", "piper:joe"))
    write_shard(tmp_path / "shards" / "s0.safetensors", make_utterances(12, 0), meta)
    train(tiny_train_config(max_steps=2), tmp_path / "shards", tmp_path / "run")
    assert export_main([str(tmp_path / "run"), str(tmp_path / "v"), "--speakers", "piper:joe,kokoro:af_heart",
                        "--smooth-frames", "heart=1.0,piper:joe=0.7"]) == 0
    info = load_voice(tmp_path / "v").info
    assert info.voices == ("joe", "heart") and info.smooth_frames == (0.7, 1.0)
    assert yaml.safe_load((tmp_path / "v" / "config.yaml").read_text())["smooth_frames"] == [0.7, 1.0]
    with pytest.raises(ArtifactError, match="no value for joe"):
        export_voice(tmp_path / "run", tmp_path / "x", smoothing={"heart": 1.0})
    with pytest.raises(ArtifactError, match="twice"):
        export_voice(tmp_path / "run", tmp_path / "x", smoothing={"heart": 1.0, "kokoro:af_heart": 1.0, "joe": 0})
    assert export_main([str(tmp_path / "run"), str(tmp_path / "y"), "--smooth-frames", "heart:1"]) == 2
    assert "expected NAME=FRAMES" in capsys.readouterr().err
    assert parse_smoothing(" adam=0.7 , heart=1 ") == {"adam": 0.7, "heart": 1.0}


def test_export_records_the_voices_own_step_budget(shard_dir: Path, tmp_path: Path) -> None:
    train(tiny_train_config(max_steps=1), shard_dir, tmp_path / "run")
    assert load_voice(export_voice(tmp_path / "run", tmp_path / "plain")).info.parallel_steps == 0
    out = export_voice(tmp_path / "run", tmp_path / "voice", parallel_steps=2)
    assert yaml.safe_load((out / "config.yaml").read_text())["parallel_steps"] == 2
    assert load_voice(out).info.parallel_steps == 2
    with pytest.raises(ArtifactError, match="parallel_steps"):
        export_voice(tmp_path / "run", tmp_path / "bad", parallel_steps=-1)
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    cfg["parallel_steps"] = 2.5  # a typo in a hand-edited artifact is refused at load, not at decode time
    (out / "config.yaml").write_text(yaml.safe_dump(cfg))
    from audiopd.artifacts import write_checksums

    write_checksums(out)
    with pytest.raises(ArtifactError, match="parallel_steps must be int"):
        load_voice(out)


def test_export_records_the_voices_own_level0_temperature(shard_dir: Path, tmp_path: Path) -> None:
    train(tiny_train_config(max_steps=1), shard_dir, tmp_path / "run")
    assert load_voice(export_voice(tmp_path / "run", tmp_path / "plain")).info.level0_temperature is None
    out = export_voice(tmp_path / "run", tmp_path / "voice", parallel_steps=1, level0_temperature=0.0)
    assert yaml.safe_load((out / "config.yaml").read_text())["level0_temperature"] == 0.0
    assert load_voice(out).info.level0_temperature == 0.0
    with pytest.raises(ArtifactError, match="level0_temperature"):
        export_voice(tmp_path / "run", tmp_path / "bad", level0_temperature=-1.0)


def test_export_averages_the_last_checkpoints(shard_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from audiopd.train.checkpoint import checkpoints_up_to, latest_checkpoint

    train(tiny_train_config(max_steps=3, ckpt_every=1, keep_checkpoints=3), shard_dir, tmp_path / "run")
    last = latest_checkpoint(tmp_path / "run")
    kept = checkpoints_up_to(last, 3)
    assert [p.name for p in kept] == ["step_00000001", "step_00000002", "step_00000003"]
    out = export_voice(tmp_path / "run", tmp_path / "voice", average=3)
    model = load_voice(out)
    weights = [load_file(str(p / "model.safetensors")) for p in kept]
    changed = 0
    for k, v in model.state_dict().items():
        if v.is_floating_point():
            mean = sum(w[k].double() for w in weights) / 3
            assert torch.allclose(v.double(), mean, atol=1e-6), k
            changed += not torch.equal(weights[-1][k], v)
    assert changed, "the average must differ from the last checkpoint somewhere"
    assert yaml.safe_load((out / "config.yaml").read_text())["training"]["averaged"] == [p.name for p in kept]
    # the chosen checkpoint ends the window, and a run that keeps too few is refused
    assert [p.name for p in checkpoints_up_to(kept[1], 2)] == ["step_00000001", "step_00000002"]
    with pytest.raises(ArtifactError, match="fewer than the 4"):
        export_voice(tmp_path / "run", tmp_path / "bad", average=4)
    with pytest.raises(ArtifactError, match=">= 1"):
        export_voice(tmp_path / "run", tmp_path / "bad", average=0)
