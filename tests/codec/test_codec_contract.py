"""The ``Codec`` ABC contract (shapes, Q' < Q decoding, input validation), exercised on the fixture codec."""

from __future__ import annotations

import numpy as np
import pytest

from audiopd.codec import Codec, load_codec
from audiopd.codec.fixture import make_fixture_codec, write_fixture_artifact
from audiopd.errors import ArtifactError

SR = 16000


@pytest.fixture(scope="module")
def codec() -> Codec:
    return make_fixture_codec()


def _speechlike(seconds: float, seed: int = 0) -> np.ndarray:
    """A voiced half (harmonics of 150 Hz) followed by a fricative-like half (loud high noise)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    t = np.arange(n) / SR
    voiced = sum(0.2 / k * np.sin(2 * np.pi * 150 * k * t) for k in range(1, 6))
    noise = np.diff(rng.standard_normal(n + 1)) * 0.05  # differencing tilts noise upwards
    return np.where(t < seconds / 2, voiced, noise).astype(np.float32)


def test_attributes(codec: Codec) -> None:
    assert (codec.sample_rate, codec.frame_rate, codec.num_codebooks, codec.cardinality) == (SR, 100, 4, 64)
    assert isinstance(codec, Codec)


@pytest.mark.parametrize("num_samples", [1, 159, 160, 161, 320, 16000, 16001])
def test_shapes_round_trip_exactly(codec: Codec, num_samples: int) -> None:
    audio = np.random.default_rng(num_samples).standard_normal(num_samples).astype(np.float32) * 0.1
    codes = codec.encode(audio)
    t = -(-num_samples * 100 // SR)  # ceil(S * frame_rate / sample_rate)
    assert codes.shape == (1, 4, t) == (1, 4, codec.num_frames(num_samples))
    assert codes.dtype == np.int64
    assert codes.min() >= 0 and codes.max() < codec.cardinality
    out = codec.decode(codes)
    assert out.shape == (1, t * 160)
    assert out.dtype == np.float32
    assert np.all(np.isfinite(out))


def test_batch_matches_single(codec: Codec) -> None:
    a, b = _speechlike(0.5, seed=1), _speechlike(0.5, seed=2)
    batch = codec.encode(np.stack([a, b]))
    assert batch.shape == (2, 4, 50)
    np.testing.assert_array_equal(batch[0], codec.encode(a)[0])
    np.testing.assert_array_equal(batch[1], codec.encode(b)[0])


def test_two_dimensional_codes_are_one_batch(codec: Codec) -> None:
    codes = codec.encode(_speechlike(0.3))
    np.testing.assert_array_equal(codec.decode(codes[0]), codec.decode(codes))


def test_decoding_is_deterministic_and_code_dependent(codec: Codec) -> None:
    codes = codec.encode(_speechlike(0.5))
    np.testing.assert_array_equal(codec.decode(codes), codec.decode(codes))
    louder = codes.copy()
    louder[:, 0] = np.minimum(louder[:, 0] + 8, 63)  # two energy steps (10 dB) up, same ZCR band
    assert np.mean(codec.decode(louder) ** 2) > 3 * np.mean(codec.decode(codes) ** 2)


def _frame_db(x: np.ndarray) -> np.ndarray:
    return 10 * np.log10(np.mean(x.reshape(-1, 160) ** 2, axis=1) + 1e-10)


@pytest.mark.parametrize("levels", [1, 2, 3, 4])
def test_fewer_levels_decode_with_right_loudness(codec: Codec, levels: int) -> None:
    audio = _speechlike(1.0)
    out = codec.decode(codec.encode(audio)[:, :levels])[0]
    assert out.shape == audio.shape
    # Level 0 alone pins frame energy to a 5 dB grid; ignore the tapered first/last frames.
    err = np.abs(_frame_db(out) - _frame_db(audio))[1:-1]
    assert np.median(err) < 2.5


def test_more_levels_describe_the_spectrum_better(codec: Codec) -> None:
    audio = _speechlike(1.0)
    codes = codec.encode(audio)

    def band_error(levels: int) -> float:
        out = codec.decode(codes[:, :levels])
        ref = codec._features(audio[None].astype(np.float64))  # type: ignore[attr-defined]
        got = codec._features(out.astype(np.float64))  # type: ignore[attr-defined]
        # Relative band levels below -48 dB are off the codec's grid: compare on the grid's range.
        diffs = [np.abs(np.maximum(r, -48) - np.maximum(g, -48))[0, 1:-1] for r, g in zip(ref[2:], got[2:])]
        return float(np.mean([np.median(d) for d in diffs]))

    errors = [band_error(q) for q in (1, 2, 3)]
    assert errors[2] < errors[1] < errors[0], errors


def test_level_zero_separates_voiced_from_noise(codec: Codec) -> None:
    codes = codec.encode(_speechlike(1.0))
    zcr_band = codes[0, 0] % 4
    assert np.all(zcr_band[5:45] == 0)  # harmonics of 150 Hz rarely cross zero
    assert np.all(zcr_band[55:95] == 3)  # high-tilted noise crosses zero constantly


def test_silence_encodes_to_the_lowest_energy(codec: Codec) -> None:
    codes = codec.encode(np.zeros(1600, dtype=np.float32))
    assert np.all(codes[0, 0] // 4 == 0)
    assert np.max(np.abs(codec.decode(codes))) < 1e-3


@pytest.mark.parametrize(
    "codes, message",
    [
        (np.full((1, 4, 5), 64), "out of range"),
        (np.full((1, 4, 5), -1), "out of range"),
        (np.zeros((1, 5, 5), dtype=np.int64), "1 <= Q'"),
        (np.zeros((1, 0, 5), dtype=np.int64), "1 <= Q'"),
        (np.zeros((5,), dtype=np.int64), "expected codes"),
        (np.zeros((1, 1, 4, 5), dtype=np.int64), "expected codes"),
    ],
)
def test_bad_codes_are_rejected(codec: Codec, codes: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        codec.decode(codes)
    if codes.ndim == 3 and codes.shape[0] == 1:  # the one-item form of the same grid
        with pytest.raises(ValueError, match=message):
            codec.decode_split(codes[0], 2)


def test_decode_split_defaults_to_one_piece(codec: Codec) -> None:
    codes = codec.encode(_speechlike(1.0))[0]
    whole = codec.decode(codes)[0]
    for parts in (1, 2, 4):
        np.testing.assert_array_equal(codec.decode_split(codes, parts), whole)
    with pytest.raises(ValueError, match="one item"):
        codec.decode_split(codes[None], 2)


@pytest.mark.parametrize(
    "audio",
    [np.zeros(0, dtype=np.float32), np.zeros((1, 0), dtype=np.float32), np.zeros((1, 2, 3), dtype=np.float32)],
)
def test_bad_audio_shapes_are_rejected(codec: Codec, audio: np.ndarray) -> None:
    with pytest.raises(ValueError, match="expected audio"):
        codec.encode(audio)


def test_non_finite_audio_is_rejected(codec: Codec) -> None:
    audio = np.zeros(320, dtype=np.float32)
    audio[10] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        codec.encode(audio)


def test_other_rates_keep_the_shape_rule() -> None:
    codec = make_fixture_codec(sample_rate=24000, frame_rate=75)
    codes = codec.encode(np.ones(1000, dtype=np.float32) * 0.1)
    assert codes.shape == (1, 4, 4)  # ceil(1000 * 75 / 24000)
    assert codec.decode(codes).shape == (1, 4 * 320)


def test_load_codec_finds_a_fixture_artifact(tmp_path, monkeypatch) -> None:
    write_fixture_artifact(tmp_path / "tiny", seed=3)
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path))
    codec = load_codec("tiny")
    assert codec.name == "tiny" and codec.num_codebooks == 4
    audio = _speechlike(0.2)
    np.testing.assert_array_equal(codec.encode(audio), make_fixture_codec().encode(audio))
    # A different seed changes the noise, not the codes.
    assert not np.array_equal(codec.decode(codec.encode(audio)), make_fixture_codec().decode(codec.encode(audio)))


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"format_version": 2}, "format_version 2 is not supported"),
        ({"frame_rate": 7}, "multiple of frame_rate"),
        ({"colour": "red"}, "unknown key"),
    ],
)
def test_bad_fixture_artifacts_are_rejected(tmp_path, monkeypatch, edit: dict, message: str) -> None:
    import yaml

    from audiopd.artifacts import write_checksums

    d = write_fixture_artifact(tmp_path / "bad")
    cfg = yaml.safe_load((d / "config.yaml").read_text())
    cfg.update(edit)
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    write_checksums(d)
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path))
    with pytest.raises(ArtifactError, match=message):
        load_codec("bad")


def test_edited_artifact_fails_its_checksum(tmp_path, monkeypatch) -> None:
    d = write_fixture_artifact(tmp_path / "edited")
    (d / "config.yaml").write_text((d / "config.yaml").read_text().replace("seed: 0", "seed: 1"))
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path))
    with pytest.raises(ArtifactError, match="checksum mismatch"):
        load_codec("edited")


def test_codec_kinds_third_party_and_unknown(tmp_path, monkeypatch) -> None:
    """An artifact's ``kind`` picks its adapter: the built-in ones by name, others through ``register``."""
    import yaml

    from audiopd.artifacts import write_checksums
    from audiopd.codec import register, registry

    d = write_fixture_artifact(tmp_path / "other")
    cfg = yaml.safe_load((d / "config.yaml").read_text())
    (d / "config.yaml").write_text(yaml.safe_dump({**cfg, "kind": "mykind"}))
    write_checksums(d)
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path))
    with pytest.raises(ArtifactError, match=r"unknown codec kind 'mykind' \(known: encodec, fixture, mel, world\)"):
        load_codec("other")

    seen: list[dict] = []
    monkeypatch.setattr(registry, "_REGISTERED", {})

    @register("mykind")
    def _load(directory, config: dict) -> Codec:
        seen.append(config)
        return make_fixture_codec()

    assert isinstance(load_codec("other"), Codec) and seen[0]["kind"] == "mykind"
    with pytest.raises(ValueError, match="codec kind 'world' is built in"):
        register("world")
