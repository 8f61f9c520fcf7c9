"""The WORLD codec: level-0 prosody quantisation, residual VQ, round trip on a synthetic voiced signal."""

from __future__ import annotations

import numpy as np
import pytest
from world_fixtures import small_world_codec, vowel

from audiopd.codec.world import (
    WorldCodec,
    WorldCodecConfig,
    WorldFeatures,
    _full_aperiodicity,
    analyze,
    dequantize_prosody,
    f0_grid,
    quantize_prosody,
    rvq_encode,
    split_points,
    synthesize_pieces,
)
from audiopd.codec.world_fit import fit_rvq, kmeans, write_codec_artifact
from audiopd.errors import ArtifactError


@pytest.fixture(scope="module")
def small_codec() -> WorldCodec:
    return small_world_codec()


def test_prosody_tokens_round_trip_within_half_a_bin() -> None:
    cfg = WorldCodecConfig(name="t")
    f0 = np.array([0.0, 80.0, 123.4, 250.0, 499.0, 0.0])
    c0 = np.array([-19.0, -15.0, -10.0, -8.0, -6.5, -30.0])
    tok = quantize_prosody(f0, c0, cfg)
    assert tok.min() >= 0 and tok.max() < cfg.cardinality
    f0_hat, _ = dequantize_prosody(tok, cfg)
    assert (f0_hat == 0).tolist() == (f0 == 0).tolist()
    step_cents = 1200 * np.log2(f0_grid(cfg)[1] / f0_grid(cfg)[0])
    voiced = f0 > 0
    cents = np.abs(1200 * np.log2(f0_hat[voiced] / f0[voiced]))
    assert cents.max() <= step_cents / 2 + 1e-6


def test_full_aperiodicity_interpolates_each_frame_between_band_centres() -> None:
    # The two-tap form must equal per-frame np.interp in dB (flat beyond the outer centres), capped at 0 dB.
    cfg = WorldCodecConfig(name="t")
    rng = np.random.default_rng(1)
    ap_db = rng.uniform(-45.0, 6.0, size=(37, len(cfg.ap_band_edges_hz) - 1))
    freqs = np.linspace(0, cfg.sample_rate / 2, cfg.fft_size // 2 + 1)
    edges = np.asarray(cfg.ap_band_edges_hz)
    centres = 0.5 * (edges[:-1] + edges[1:])
    ref_db = np.stack([np.interp(freqs, centres, row) for row in ap_db])
    ref = np.clip(10.0 ** (np.minimum(ref_db, 0.0) / 20.0), 1e-3, 1.0)
    out = _full_aperiodicity(ap_db, cfg)
    assert out.shape == (37, cfg.fft_size // 2 + 1)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=0)


def test_rvq_more_levels_reduce_error() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 6)).astype(np.float32)
    books = fit_rvq(x, 3, 32, iters=6, log=None)
    errs = []
    for q in range(1, 4):
        codes = rvq_encode(x, books[:q])
        recon = sum(books[i][codes[i]] for i in range(q))
        errs.append(float(((x - recon) ** 2).mean()))
    assert errs[0] > errs[1] > errs[2]


def test_kmeans_needs_enough_points() -> None:
    with pytest.raises(ValueError):
        kmeans(np.zeros((10, 2), np.float32), 16)


def test_round_trip_shapes_pitch_and_levels(small_codec: WorldCodec) -> None:
    x = vowel(150.0, 0.8)
    codes = small_codec.encode(x)
    assert codes.shape == (1, 3, small_codec.num_frames(len(x)))
    y = small_codec.decode(codes)
    assert y.shape == (1, codes.shape[2] * small_codec.cfg.hop) and y.dtype == np.float32
    assert np.isfinite(y).all() and np.abs(y).max() > 0.01
    f0_in = analyze(x, small_codec.cfg).f0
    f0_out = analyze(y[0], small_codec.cfg).f0
    both = (f0_in > 0) & (f0_out[: len(f0_in)] > 0)
    assert both.mean() > 0.5
    cents = np.abs(1200 * np.log2(f0_out[: len(f0_in)][both] / f0_in[both]))
    assert np.median(cents) < 30.0
    # Fewer levels decode too (coarsest first), and the envelope error shrinks with more levels.
    feats = analyze(x, small_codec.cfg)
    err = [np.abs(small_codec.decode_features(codes[0, :q]).mcep - feats.mcep)[:, 1:].mean() for q in (1, 3)]
    assert err[1] < err[0]


def test_refit_keeps_hand_written_readme_notes(tmp_path, small_codec: WorldCodec) -> None:
    from audiopd.artifacts import verify_checksums
    from audiopd.codec.world_fit import NOTES_MARKER

    d = write_codec_artifact(tmp_path / "tiny", small_codec.cfg, small_codec.codebooks, "# tiny v1\n")
    text = (d / "README.md").read_text()
    assert text.startswith("# tiny v1") and NOTES_MARKER in text
    (d / "README.md").write_text(text + "## Measured by hand\nWER 21.4\n")
    write_codec_artifact(d, small_codec.cfg, small_codec.codebooks, "# tiny v2\n")
    text = (d / "README.md").read_text()
    assert text.startswith("# tiny v2") and "v1" not in text  # the head is regenerated...
    assert text.endswith("## Measured by hand\nWER 21.4\n")  # ...the notes survive, once
    assert text.count(NOTES_MARKER) == 1
    verify_checksums(d)  # the artifact stays loadable (README.md is documentation, outside SHA256SUMS)


def test_artifact_round_trip_and_rejects_bad_version(tmp_path, small_codec: WorldCodec, monkeypatch) -> None:
    from audiopd.codec import load_codec

    d = write_codec_artifact(tmp_path / "tiny", small_codec.cfg, small_codec.codebooks, "# tiny\n")
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path))
    codec = load_codec("tiny")
    assert np.array_equal(codec.codebooks, small_codec.codebooks)
    assert codec.token_fingerprint == small_codec.token_fingerprint  # the artifact means the same tokens
    cfg_text = (d / "config.yaml").read_text().replace("format_version: 1", "format_version: 99")
    (d / "config.yaml").write_text(cfg_text)
    with pytest.raises(ArtifactError, match="checksum|format_version"):
        load_codec("tiny")


def test_config_rejects_impossible_level0() -> None:
    with pytest.raises(ArtifactError):
        WorldCodecConfig(name="x", f0_bins=200, energy_bins=8, cardinality=1024)


@pytest.mark.parametrize("smooth", [-0.1, 0.4, 1.0])
def test_config_rejects_smoothing_outside_its_range(smooth: float) -> None:
    with pytest.raises(ArtifactError, match="smooth"):
        WorldCodecConfig(name="x", smooth=smooth)


def test_smoothing_removes_frame_jitter_and_keeps_level(small_codec: WorldCodec) -> None:
    import dataclasses

    rng = np.random.default_rng(0)
    t = 200
    codes = rng.integers(0, small_codec.cardinality, size=(small_codec.num_codebooks, t))  # per-frame noise
    plain = small_codec.decode_features(codes)
    boxed = WorldCodec(dataclasses.replace(small_codec.cfg, smooth=1.0 / 3.0), small_codec.codebooks).decode_features(codes)

    def jitter(mcep: np.ndarray) -> float:  # frame-to-frame change of c1.., the envelope's shape
        return float(np.abs(np.diff(mcep[:, 1:], axis=0)).mean())

    assert jitter(boxed.mcep) < 0.7 * jitter(plain.mcep)
    np.testing.assert_allclose(boxed.mcep[1:-1, 1:].mean(0), plain.mcep[1:-1, 1:].mean(0), atol=0.05)
    np.testing.assert_array_equal(boxed.f0, plain.f0)  # level 0 (pitch) is never smoothed


def test_token_fingerprint_follows_what_decoding_uses(small_codec: WorldCodec) -> None:
    import dataclasses

    fp = small_codec.token_fingerprint
    assert len(fp) == 64 and fp == WorldCodec(small_codec.cfg, small_codec.codebooks.copy()).token_fingerprint
    # Analysis-only settings and names leave the tokens' meaning alone...
    same = dataclasses.replace(small_codec.cfg, f0_method="harvest", smooth=0.2, name="renamed", description="x")
    assert WorldCodec(same, small_codec.codebooks).token_fingerprint == fp
    # ...one moved codeword or another bin table does not.
    books = small_codec.codebooks.copy()
    books[1, 5, 0] += 1e-3
    assert WorldCodec(small_codec.cfg, books).token_fingerprint != fp
    other = dataclasses.replace(small_codec.cfg, f0_ceil=400.0)
    assert WorldCodec(other, small_codec.codebooks).token_fingerprint != fp


def test_split_points_pick_the_quietest_frame_near_each_share() -> None:
    assert split_points(np.zeros(199), 2) == []  # two pieces need 2 x MIN_PIECE_FRAMES
    assert split_points(np.zeros(500), 1) == []
    energy = np.zeros(400)
    energy[180:186] = -30.0  # a pause near the middle
    energy[300:306] = -40.0  # a quieter one, but outside the middle's window
    assert split_points(energy, 2) in ([182], [183])  # inside the pause (5-frame mean)
    cuts = split_points(np.random.default_rng(0).normal(size=900), 3)
    assert len(cuts) == 2 and 225 <= cuts[0] <= 375 and 525 <= cuts[1] <= 675


def test_pieces_cross_fade_back_to_the_whole() -> None:
    # A frame-local synthesis (each frame's samples depend on that frame only): the cross-faded pieces must
    # equal the whole, so the weights sum to one everywhere and every sample lands where it belongs.
    hop, t = 4, 650
    rng = np.random.default_rng(2)
    feats = WorldFeatures(f0=rng.uniform(80, 200, t), mcep=rng.normal(size=(t, 3)), ap_db=np.zeros((t, 2)))

    def local(f: WorldFeatures) -> np.ndarray:
        return np.repeat(f.f0 + f.mcep[:, 0], hop).astype(np.float32)

    out = synthesize_pieces(local, feats, [210, 430], hop)
    np.testing.assert_allclose(out, local(feats), rtol=1e-5)


def test_decode_split_keeps_length_and_level(small_codec: WorldCodec) -> None:
    audio = np.concatenate([vowel(f0, 1.2) for f0 in (110.0, 150.0)] + [np.zeros(1600, np.float32)] +
                           [vowel(220.0, 1.2)])
    codes = small_codec.encode(audio)[0]
    whole = small_codec.decode(codes)[0]
    np.testing.assert_array_equal(small_codec.decode_split(codes, 1), whole)
    split = small_codec.decode_split(codes, 2)
    assert split.shape == whole.shape and split.dtype == np.float32 and np.isfinite(split).all()
    hop = small_codec.cfg.hop
    level = [10 * np.log10(np.square(y.reshape(-1, hop)).mean(1) + 1e-10) for y in (whole, split)]
    # Only pulse phase and noise differ: the frame energies agree (to 1 dB on 90% of frames).
    assert np.percentile(np.abs(level[0] - level[1]), 90) < 1.0
    with pytest.raises(ValueError):
        small_codec.decode_split(codes[None], 2)  # one item only
