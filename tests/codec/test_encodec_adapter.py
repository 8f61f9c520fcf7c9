"""EnCodec adapter: plumbing on randomly initialised weights; real weights only when present locally."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("encodec", reason="optional dependency encodec (audiopd[encodec]) is not installed")
torch = pytest.importorskip("torch")

from audiopd.artifacts import verify_checksums, write_checksums  # noqa: E402
from audiopd.codec import load_codec  # noqa: E402
from audiopd.codec import encodec_adapter as ea  # noqa: E402
from audiopd.errors import ArtifactError  # noqa: E402

REPO_ARTIFACT = Path(__file__).resolve().parents[2] / "codecs" / "encodec24k"


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to fetch weights fails the test instead of touching the network."""

    def refuse(*args, **kwargs):
        raise AssertionError("audiopd tried to download weights")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", refuse)
    monkeypatch.setattr(torch.hub, "download_url_to_file", refuse)


@pytest.fixture(scope="module")
def random_model():
    torch.manual_seed(0)
    model = ea.build_model()
    # encodec initialises codebooks to zeros (filled by k-means in training), which would make every
    # code decode alike; random codebooks make the plumbing tests able to tell codes apart.
    for layer in model.quantizer.vq.layers:
        layer._codebook.embed.normal_()
        layer._codebook.inited.fill_(1)
    return model


@pytest.mark.parametrize("bandwidth, levels", [(1.5, 2), (3, 4), (6.0, 8), (12, 16), (24.0, 32)])
def test_bandwidth_to_levels(random_model, bandwidth: float, levels: int) -> None:
    assert ea.bandwidth_to_levels(bandwidth) == levels
    codec = ea.EncodecCodec(random_model, bandwidth=bandwidth)
    assert codec.num_codebooks == levels
    codes = codec.encode(np.zeros(640, dtype=np.float32))
    assert codes.shape == (1, levels, 2)  # what the network emits, not just the table


@pytest.mark.parametrize("bandwidth", [0, 2.0, 48.0, "six", None])
def test_unsupported_bandwidth(bandwidth) -> None:
    with pytest.raises(ValueError, match="unsupported EnCodec bandwidth"):
        ea.bandwidth_to_levels(bandwidth)


@pytest.mark.parametrize("num_samples", [1, 320, 321, 2400])
def test_shapes(random_model, num_samples: int) -> None:
    codec = ea.EncodecCodec(random_model, bandwidth=6.0)
    assert (codec.sample_rate, codec.frame_rate, codec.cardinality) == (24000, 75, 1024)
    audio = np.random.default_rng(0).standard_normal(num_samples).astype(np.float32) * 0.1
    codes = codec.encode(audio)
    t = -(-num_samples // 320)
    assert codes.shape == (1, 8, t) == (1, 8, codec.num_frames(num_samples))
    assert codes.dtype == np.int64 and codes.min() >= 0 and codes.max() < 1024
    out = codec.decode(codes)
    assert out.shape == (1, t * 320) and out.dtype == np.float32
    assert np.all(np.isfinite(out))


def test_round_trip_plumbing_matches_the_model(random_model) -> None:
    """Our encode/decode equal encodec's own forward pass, for Q' = Q and for the coarsest levels."""
    codec = ea.EncodecCodec(random_model, bandwidth=6.0)
    audio = np.random.default_rng(1).standard_normal((2, 1600)).astype(np.float32) * 0.1
    codes = codec.encode(audio)
    with torch.no_grad():
        ref_codes = random_model.encode(torch.from_numpy(audio)[:, None])[0][0].numpy()
        np.testing.assert_array_equal(codes, ref_codes)
        for q in (2, 8):
            ref = random_model.decode([(torch.from_numpy(codes[:, :q]), None)])[:, 0].numpy()
            np.testing.assert_allclose(codec.decode(codes[:, :q]), ref, rtol=1e-5, atol=1e-6)
    assert not np.allclose(codec.decode(codes[:, :2]), codec.decode(codes))
    with pytest.raises(ValueError, match="1 <= Q'"):
        codec.decode(np.zeros((1, 9, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="out of range"):
        codec.decode(np.full((1, 8, 3), 1024))


def test_building_the_random_model_does_not_download(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    ea.build_model()
    assert not any(tmp_path.rglob("*"))


def _artifact(tmp_path: Path, **edits) -> Path:
    import yaml

    d = tmp_path / "codecs" / "enc"
    shutil.copytree(REPO_ARTIFACT, d)
    cfg = yaml.safe_load((d / "config.yaml").read_text())
    cfg.update(edits)
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    write_checksums(d)
    return d


def test_shipped_artifact_is_consistent() -> None:
    import yaml

    verify_checksums(REPO_ARTIFACT)
    cfg = yaml.safe_load((REPO_ARTIFACT / "config.yaml").read_text())
    assert cfg == {"kind": "encodec", "format_version": 1, "bandwidth": 6.0, "checkpoint": None}


def test_missing_weights_name_the_file(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(ea.ENV_CHECKPOINT, raising=False)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    _artifact(tmp_path)
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path / "codecs"))
    expected = tmp_path / "torch" / "hub" / "checkpoints" / "encodec_24khz-d7cc33bc.th"
    with pytest.raises(ArtifactError, match="EnCodec weights not found") as err:
        load_codec("enc")
    assert str(expected) in str(err.value) and ea.CHECKPOINT_URL in str(err.value)


def test_env_checkpoint_that_is_missing_is_an_error(tmp_path, monkeypatch) -> None:
    missing = tmp_path / "nowhere.th"
    monkeypatch.setenv(ea.ENV_CHECKPOINT, str(missing))
    with pytest.raises(ArtifactError, match=r"\$AUDIOPD_ENCODEC_CHECKPOINT points to .*nowhere\.th"):
        ea.resolve_checkpoint(None)


def test_configured_checkpoint_is_relative_to_the_artifact(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(ea.ENV_CHECKPOINT, str(tmp_path / "ignored.th"))
    d = _artifact(tmp_path, checkpoint="weights/enc.th")
    with pytest.raises(ArtifactError, match="codec config's 'checkpoint'"):
        ea.resolve_checkpoint("weights/enc.th", base=d)
    (d / "weights").mkdir()
    (d / "weights" / "enc.th").write_bytes(b"x")
    assert ea.resolve_checkpoint("weights/enc.th", base=d) == d / "weights" / "enc.th"


def test_corrupt_checkpoint_is_rejected(tmp_path, monkeypatch) -> None:
    bad = tmp_path / ea.CHECKPOINT_NAME
    torch.save({"not": torch.zeros(1)}, bad)
    monkeypatch.setenv(ea.ENV_CHECKPOINT, str(bad))
    _artifact(tmp_path)
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path / "codecs"))
    with pytest.raises(ArtifactError, match="does not start with d7cc33bc"):
        load_codec("enc")


@pytest.mark.parametrize(
    "edits, message",
    [
        ({"bandwidth": 5.0}, "unsupported EnCodec bandwidth"),
        ({"format_version": 9}, "format_version 9 is not supported"),
        ({"checkpoint": 5}, "must be a path string"),
        ({"extra": 1}, "unknown key"),
    ],
)
def test_bad_configs(tmp_path, monkeypatch, edits: dict, message: str) -> None:
    _artifact(tmp_path, **edits)
    monkeypatch.setenv("AUDIOPD_CODECS_PATH", str(tmp_path / "codecs"))
    with pytest.raises(ArtifactError, match=message):
        load_codec("enc")


def _real_checkpoint() -> Path | None:
    try:
        return ea.resolve_checkpoint(None)
    except ArtifactError:
        return None


@pytest.mark.skipif(
    _real_checkpoint() is None,
    reason=f"EnCodec weights {ea.CHECKPOINT_NAME} not found ($AUDIOPD_ENCODEC_CHECKPOINT or torch hub cache)",
)
def test_real_weights_reconstruct_speechlike_audio() -> None:
    codec = load_codec("encodec24k")
    sr = 24000
    t = np.arange(sr) / sr
    # Harmonics of 140 Hz with a 3 Hz syllable-rate envelope, then a noise burst: speech-ish.
    harmonics = sum(0.15 / k * np.sin(2 * np.pi * 140 * k * t) for k in range(1, 8))
    voiced = harmonics * (0.6 + 0.4 * np.sin(6 * np.pi * t))
    noise = np.random.default_rng(0).standard_normal(sr) * 0.03
    audio = np.concatenate([voiced, noise]).astype(np.float32)
    out = codec.decode(codec.encode(audio))[0, : audio.size]

    def mag(x: np.ndarray) -> np.ndarray:
        window = torch.hann_window(1024)
        return torch.stft(torch.from_numpy(x), 1024, 256, window=window, return_complex=True).abs()

    ref, got = mag(audio), mag(out)
    convergence = float(torch.linalg.norm(ref - got) / torch.linalg.norm(ref))
    envelope = np.corrcoef(ref.pow(2).sum(0).log().numpy(), got.pow(2).sum(0).log().numpy())[0, 1]
    # A trained EnCodec at 6 kbps keeps the spectrum and the loudness contour; random weights do neither.
    assert convergence < 0.5, convergence
    assert envelope > 0.9, envelope
