"""Peers (Kokoro, Piper joe): names, the voice pack, missing extras, and real synthesis when the extra is there."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from audiopd.errors import ArtifactError, AudiopdError, NothingToSpeakError
from audiopd.eval import peers, teacher_packs
from audiopd.eval.peers import MissingExtraError, load_peer, parse_peer, parse_peers

TEXT = "The quick brown fox jumps over the lazy dog."


def test_parse_peer_names_and_errors():
    assert parse_peer("kokoro:af_heart").name == "kokoro:af_heart"
    assert parse_peer(" piper:joe ").system == "piper"
    assert [s.voice for s in parse_peers("kokoro:bm_george,piper:joe")] == ["bm_george", "joe"]
    for bad, says in [("kokoro", "system:voice"), ("kokoro:af_nobody", "unknown Kokoro voice"),
                      ("piper:amy", "unknown Piper voice"), ("espeak:en", "unknown peer system")]:
        with pytest.raises(AudiopdError, match=says):
            parse_peer(bad)
    with pytest.raises(AudiopdError, match="twice"):
        parse_peers("piper:joe,piper:joe")
    with pytest.raises(AudiopdError, match="names no peer"):
        parse_peers(" , ")


def test_load_peer_rejects_bad_threads():
    with pytest.raises(AudiopdError, match="threads"):
        load_peer("piper:joe", threads=0)


@pytest.mark.parametrize("name, module", [("kokoro:af_heart", "kokoro_onnx"), ("piper:joe", "piper.voice")])
def test_missing_extra_is_one_line_naming_the_extra(monkeypatch, tmp_path, name, module):
    monkeypatch.setitem(sys.modules, module, None)  # import of a None entry raises ImportError
    with pytest.raises(MissingExtraError) as info:
        load_peer(name, teachers_dir=tmp_path)
    message = str(info.value)
    assert "teachers" in message and "pip install" in message and "\n" not in message


def _fake_bins(folder, names=teacher_packs.KOKORO_VOICES):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name in names:
        rng.standard_normal(int(np.prod(teacher_packs.STYLE_SHAPE))).astype("<f4").tofile(folder / f"{name}.bin")


def test_pack_build_round_trip_and_checks(tmp_path):
    src = tmp_path / "voices"
    _fake_bins(src)
    # Random voices are not kokoro-js's: the pinned digest refuses them unless the check is off.
    with pytest.raises(ArtifactError, match="do not match"):
        teacher_packs.build_kokoro_pack(src, tmp_path / "pack.npz")
    out = teacher_packs.build_kokoro_pack(src, tmp_path / "pack.npz", check_digest=False)
    voices = teacher_packs.load_kokoro_voices(out, verify=False)
    assert voices["bm_lewis"].shape == teacher_packs.STYLE_SHAPE and voices["af_heart"].dtype == np.float32
    raw = np.fromfile(src / "af_heart.bin", dtype="<f4").reshape(teacher_packs.STYLE_SHAPE)
    np.testing.assert_array_equal(voices["af_heart"], raw)
    with pytest.raises(ArtifactError, match="checksum"):
        teacher_packs.load_kokoro_voices(out)
    assert not list(tmp_path.glob(".*tmp*")), "temp file left behind"


def test_pack_build_rejects_short_or_missing_files(tmp_path):
    src = tmp_path / "voices"
    _fake_bins(src, teacher_packs.KOKORO_VOICES[:-1])
    with pytest.raises(ArtifactError, match="bm_lewis.bin is missing"):
        teacher_packs.build_kokoro_pack(src, tmp_path / "p.npz", check_digest=False)
    np.zeros(10, "<f4").tofile(src / "bm_lewis.bin")
    with pytest.raises(ArtifactError, match="holds 10 floats"):
        teacher_packs.build_kokoro_pack(src, tmp_path / "p.npz", check_digest=False)


def test_missing_pack_names_the_install_step(tmp_path, monkeypatch):
    with pytest.raises(ArtifactError, match="recipes/teachers/install.sh") as info:
        teacher_packs.load_kokoro_voices(teacher_packs.pack_path(tmp_path))
    assert "\n" not in str(info.value)
    monkeypatch.setenv(teacher_packs.TEACHERS_ENV, str(tmp_path / "t"))
    assert teacher_packs.pack_path() == tmp_path / "t" / teacher_packs.PACK_NAME


def test_missing_pack_through_load_peer(tmp_path):
    pytest.importorskip("kokoro_onnx", reason="the 'teachers' extra is not installed")
    with pytest.raises(ArtifactError, match="install.sh"):
        load_peer("kokoro:af_heart", teachers_dir=tmp_path)


def _assert_speech(audio, rate, text_seconds=(1.5, 5.0)):
    assert audio.dtype == np.float32 and audio.ndim == 1 and np.isfinite(audio).all()
    seconds = audio.size / rate
    assert text_seconds[0] < seconds < text_seconds[1], seconds
    frame = rate // 50
    rms = np.sqrt(np.mean(audio[: audio.size // frame * frame].reshape(-1, frame) ** 2, axis=1))
    assert (rms > 0.01).mean() > 0.5, "mostly silence"
    assert np.abs(audio).max() <= 1.0


def test_kokoro_synthesizes_speech():
    pytest.importorskip("kokoro_onnx", reason="the 'teachers' extra is not installed")
    peer = load_peer("kokoro:af_heart", threads=1)
    audio, rate, durations = peer.synthesize(TEXT)
    assert rate == 24000 and durations is None
    _assert_speech(audio, rate)
    british = load_peer("kokoro:bf_emma", threads=1)
    assert british.lang == "en-gb"
    with pytest.raises(NothingToSpeakError):
        peer.synthesize("   ")


def test_piper_synthesizes_speech_with_phone_durations():
    pytest.importorskip("piper", reason="the 'teachers' extra is not installed")
    peer = load_peer("piper:joe", threads=1)
    audio, rate, durations = peer.synthesize(TEXT)
    assert rate == 22050
    _assert_speech(audio, rate)
    assert durations and durations[0][0] == "^" and durations[-1][0] == "$"
    # Piper's per-id sample counts tile the waveform exactly.
    assert sum(d for _, d in durations) == pytest.approx(audio.size / rate, abs=1e-6)
    assert all(d >= 0 for _, d in durations)
    assert {"k", "b", "f", "d"} <= {p for p, _ in durations}
    two = peer.synthesize("One sentence here. And another one!")
    assert [p for p, _ in two.durations].count("^") == 2
    assert sum(d for _, d in two.durations) == pytest.approx(two.audio.size / rate, abs=1e-6)



def test_kokoro_model_is_checked_by_hash(tmp_path):
    from types import SimpleNamespace

    model = tmp_path / "kokoro.onnx"
    model.write_bytes(b"not the model")
    (tmp_path / "model.sha256").write_text(teacher_packs.file_sha256(model) + "\n")
    core = SimpleNamespace(model_path=lambda: model, _data=tmp_path)
    assert peers._kokoro_model(core, verify=True) == model
    model.write_bytes(b"altered")
    with pytest.raises(ArtifactError, match="fails its sha256"):
        peers._kokoro_model(core, verify=True)

    def broken():
        raise RuntimeError("model parts are corrupted")

    with pytest.raises(ArtifactError, match="reinstall the 'teachers' extra"):
        peers._kokoro_model(SimpleNamespace(model_path=broken, _data=tmp_path), verify=True)
