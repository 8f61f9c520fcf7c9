"""--voice resolution (audiopd.cli._load_voice): which voice artifact and speaker a spec names, and the name that
reports, /health and bench carry for it (``Synthesizer.voice_name``)."""

from __future__ import annotations

import pytest
from voice_fixtures import install_voices

from audiopd.artifacts import DEFAULT_VOICE
from audiopd.cli import _load_voice
from audiopd.errors import ArtifactError
from audiopd.model.voice import speaker_owner


@pytest.fixture
def voices(tmp_path, monkeypatch):
    # alice belongs to the default voice and to "later", so the default voice must win for her.
    return install_voices(tmp_path, monkeypatch, {DEFAULT_VOICE: ("alice",), "later": ("alice", "bob"),
                                                   "other": ("carol",)})


@pytest.mark.parametrize("spec, voice, speaker", [
    (None, DEFAULT_VOICE, None),
    ("other", "other", None),
    ("alice", DEFAULT_VOICE, "alice"),
    ("bob", "later", "bob"),
    ("carol", "other", "carol"),
    ("later:alice", "later", "alice"),
    (":alice", DEFAULT_VOICE, "alice"),
])
def test_a_spec_names_a_voice_and_a_speaker(voices, spec, voice, speaker) -> None:
    tts, got = _load_voice(spec)
    assert (tts.voice_name, got) == (voice, speaker)
    assert got is None or got in tts.voices


def test_a_directory_path_is_loaded_by_its_name(voices) -> None:
    tts, speaker = _load_voice(str(voices["other"]))
    assert (tts.voice_name, speaker) == ("other", None)
    with pytest.raises(ArtifactError, match="no voice artifact at"):
        _load_voice(str(voices["other"].parent / "absent"))


def test_an_unknown_name_is_refused_with_the_shipped_voices(voices) -> None:
    with pytest.raises(ArtifactError, match="no speaker of a shipped voice has that name") as err:
        _load_voice("zed")
    assert "other" in str(err.value) and DEFAULT_VOICE in str(err.value)


def test_the_flite_speakers_belong_to_the_shipped_flite_voice() -> None:
    # The repository's own voices: `--voice slt` keeps meaning flite's slt, `--voice joe` the voice joe (a voice's
    # name comes first), while the speaker joe belongs to the default voice (`--voice natural:joe`).
    assert DEFAULT_VOICE == "natural"
    assert speaker_owner("joe") == "natural"
    tts, speaker = _load_voice("joe")
    assert tts.voice_name == "joe" and speaker is None
    assert {speaker_owner(s) for s in ("slt", "rms", "awb", "kal16")} == {"flite"}
    assert speaker_owner("heart") == speaker_owner("adam") == "natural"  # `--voice heart`: the Kokoro-taught voice
    assert speaker_owner("nobody") is None
