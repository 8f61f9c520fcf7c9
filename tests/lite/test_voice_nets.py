"""audiopd.lite.voice against the torch voice: conditioner, masked model, heads, greedy and the mel refiner, on a tiny
random voice saved in float32 and float16 and on the shipped voices/natural; the loader's checks; no torch import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from audiopd import artifacts
from audiopd.errors import ArtifactError
from audiopd.lite.voice import LiteVoice
from audiopd.model.config import ModelConfig
from audiopd.model.encoder import durations_from_log
from audiopd.model.refiner import MelRefiner, save_refiner
from audiopd.model.refiner import RefinerConfig as TorchRefinerConfig
from audiopd.model.voice import VoiceInfo, VoiceModel, load_voice, save_voice

CFG = ModelConfig(num_symbols=20, num_codebooks=4, cardinality=32, num_speakers=3, d_model=32, n_heads=2, ff_mult=2,
                  dropout=0.0, encoder_layers=2, duration_channels=16, masked_layers=2, serial_layers=2, max_frames=64)
VOICES = ("a", "b", "c")
IDS = np.array([3, 5, 7, 2, 9, 11, 4, 19, 1], dtype=np.int64)


def _save(directory: Path, dtype: str) -> Path:
    """A random tiny voice with a random (non-identity) refiner, written to ``directory``."""
    torch.manual_seed(0)
    info = VoiceInfo(codec="fx", sample_rate=16000, frame_rate=100.0, num_codebooks=4, cardinality=32, voices=VOICES)
    model = VoiceModel(CFG, info).eval()
    with torch.no_grad():  # durations of a few frames per token, so the regulated lengths are interesting
        model.conditioner.duration.proj.bias.fill_(1.2)
    save_voice(model, directory, dtype=dtype)
    refiner = MelRefiner(TorchRefinerConfig(n_mels=8, dim=16, layers=2, kernel=3, voices=VOICES,
                                            voice_sha256=artifacts.read_checksums(directory)["model.safetensors"]))
    with torch.no_grad():
        for p in refiner.parameters():
            p.normal_(0.0, 0.3)
    save_refiner(refiner, directory, dtype=dtype)
    artifacts.write_checksums(directory)
    return directory


@pytest.fixture(scope="module", params=["float32", "float16"])
def pair(request, tmp_path_factory) -> tuple[VoiceModel, LiteVoice]:
    d = _save(tmp_path_factory.mktemp("v") / "tiny", request.param)
    return load_voice(d), LiteVoice.load(d)


def _close(got: np.ndarray, ref: torch.Tensor, atol: float = 1e-4) -> None:
    np.testing.assert_allclose(got, ref.numpy(), atol=atol, rtol=1e-4)


def test_metadata(pair) -> None:
    model, lite = pair
    assert (lite.info, lite.cfg, lite.artifact_name) == (model.info, model.cfg, model.artifact_name)
    assert (lite.num_codebooks, lite.cardinality, lite.mask_id) == (4, 32, 32)
    assert lite.checker_config == model.checker_config and lite.training_record == model.training_record


@pytest.mark.parametrize("ids", [IDS, np.array([4, 0, 6, 8, 0], dtype=np.int64)], ids=["plain", "padding"])
def test_conditioner_matches_torch(pair, ids: np.ndarray) -> None:
    model, lite = pair
    ph = torch.from_numpy(ids)[None]
    spk = torch.tensor([1])
    with torch.no_grad():
        states, log_dur = model.conditioner.encode(ph, ph != 0, spk)
    got_states, got_log = lite.encode(ids, 1)
    _close(got_states, states[0])
    _close(got_log, log_dur[0])
    for speed in (0.7, 1.0, 1.6):
        ref = durations_from_log(log_dur, ph != 0, speed)[0]
        assert np.array_equal(lite.durations(got_log, speed), ref.numpy())
        with torch.no_grad():
            cond = model.condition(ph, spk, speed=speed)
        frames, dur = lite.condition(ids, 1, speed)
        assert np.array_equal(dur, cond.durations[0].numpy())
        assert frames.dtype == np.float32
        _close(frames, cond.frames[0])
    given = np.array([2, 0, 5, 1, 3][: len(ids)] + [1] * (len(ids) - 5), dtype=np.int64)
    with torch.no_grad():
        ref = model.conditioner.frames(states, torch.from_numpy(given)[None], spk).frames[0]
    _close(lite.frames(got_states, given, 1), ref)
    assert np.array_equal(lite.condition(ids, 1, durations=given)[1], given)


def test_durations_rounding_and_empty_item() -> None:
    log_dur = torch.linspace(-1.0, 4.0, 4001)  # crosses many .5 boundaries for each speed
    for speed in (0.5, 0.9, 1.0, 1.3, 2.0):
        ref = durations_from_log(log_dur[None], torch.ones(1, 4001, dtype=torch.bool), speed)[0].numpy()
        assert np.array_equal(LiteVoice.durations(log_dur.numpy(), speed), ref)
    assert LiteVoice.durations(np.full(4, -0.5, np.float32)).tolist() == [1, 0, 0, 0]
    with pytest.raises(ValueError):
        LiteVoice.durations(np.zeros(3, np.float32), 0.0)


def _durs(t: int) -> np.ndarray:
    dur = np.full(len(IDS), t // len(IDS), dtype=np.int64)
    dur[: t % len(IDS)] += 1
    return dur


def _inputs(lite: LiteVoice, t: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Frames of ``t`` frames and codes [Q, t] with ~40% masked, level 0 and 1 mostly given."""
    rng = np.random.default_rng(seed)
    frames, _ = lite.condition(IDS, 2, durations=_durs(t))
    codes = rng.integers(0, lite.cardinality, (lite.num_codebooks, t))
    codes[rng.random(codes.shape) < 0.4] = lite.mask_id
    return frames, codes


@pytest.mark.parametrize("window,t", [(0, 37), (4, 37), (4, 36), (4, 8), (5, 16)])
def test_masked_model_matches_torch(pair, window: int, t: int) -> None:
    model, lite = pair
    frames, codes = _inputs(lite, t, seed=window + t)
    with torch.no_grad():
        cond = model.condition(torch.from_numpy(IDS), torch.tensor([2]), durations=torch.from_numpy(_durs(t))[None])
        _close(frames, cond.frames[0])
        c = torch.from_numpy(codes)[None]
        _close(lite.hidden(codes, frames, 1, window), model.masked.hidden(c, cond, 1, window)[0])
        rows = np.zeros(t, dtype=bool)
        rows[[0, 3, t // 2, t - 1]] = True
        for levels in ([0], [1, 2], [0, 3], [3, 1]):
            ref = model.masked(c, cond, levels, window)[0]
            _close(lite.logits(codes, frames, levels, window), ref)
            ref_rows = model.masked(c, cond, levels, window, frames=torch.from_numpy(rows)[None])
            _close(lite.logits(codes, frames, levels, window, rows=rows), ref_rows)
            greedy = lite.greedy(codes, frames, levels, window, chunk=5)
            assert greedy.dtype == np.int64 and greedy.shape == (len(levels), t)
            assert np.array_equal(greedy, model.masked.greedy(c, cond, levels, window, chunk=7)[0].numpy())


def test_refiner_matches_torch(pair) -> None:
    model, lite = pair
    assert lite.refiner is not None and lite.refiner.cfg.voices == VOICES
    mel = np.random.default_rng(1).normal(size=(23, 8)).astype(np.float32)
    for speaker in range(3):
        np.testing.assert_allclose(lite.refiner.for_speaker(speaker)(mel), model.refiner.for_speaker(speaker)(mel),
                                   atol=1e-4, rtol=1e-4)
    assert lite.refiner.refine(mel[:0], 0).shape == (0, 8)
    with pytest.raises(ValueError):
        lite.refiner.refine(mel, 3)


def test_shipped_voice_matches_torch() -> None:
    model, lite = load_voice("natural"), LiteVoice.load("natural")
    assert lite.artifact_name == "natural" and lite.checker_config == model.checker_config
    ids = np.array([5, 20, 31, 7, 44, 12, 60, 3, 27, 15, 9, 50], dtype=np.int64)
    with torch.no_grad():
        cond = model.condition(torch.from_numpy(ids), torch.tensor([1]))
    frames, dur = lite.condition(ids, 1)
    assert np.array_equal(dur, cond.durations[0].numpy())
    np.testing.assert_allclose(frames, cond.frames[0].numpy(), atol=1e-3)
    t = frames.shape[0]
    codes = np.random.default_rng(0).integers(0, lite.cardinality, (lite.num_codebooks, t))
    codes[1:] = lite.mask_id
    with torch.no_grad():
        ref = model.masked(torch.from_numpy(codes)[None], cond, [0, 1], 16)[0].numpy()
    np.testing.assert_allclose(lite.logits(codes, frames, [0, 1], 16), ref, atol=1e-3, rtol=1e-4)
    mel = np.random.default_rng(2).normal(-4.0, 2.0, size=(40, 80)).astype(np.float32)
    np.testing.assert_allclose(lite.refiner.refine(mel, 2), model.refiner.refine(mel, 2), atol=1e-3)


def _rewrite(directory: Path, change) -> None:
    state = load_file(str(directory / "model.safetensors"))
    change(state)
    save_file(state, str(directory / "model.safetensors"))
    artifacts.write_checksums(directory)


def test_loader_checks(tmp_path: Path) -> None:
    d = _save(tmp_path / "v", "float16")
    for name in ("refiner.yaml", "refiner.safetensors"):  # it is tied to the weights' digest, which changes here
        (d / name).unlink()
    _rewrite(d, lambda s: [s.pop(k) for k in [k for k in s if k.startswith("serial.")]])
    LiteVoice.load(d)  # the serial model's weights are not needed
    _rewrite(d, lambda s: s.pop("masked.cond_proj.bias"))
    with pytest.raises(ArtifactError, match=r"missing 1, unexpected 0"):
        LiteVoice.load(d)
    _rewrite(d, lambda s: s.update({"masked.cond_proj.bias": torch.zeros(32), "masked.extra": torch.zeros(2)}))
    with pytest.raises(ArtifactError, match=r"missing 0, unexpected 1"):
        LiteVoice.load(d)
    _rewrite(d, lambda s: (s.pop("masked.extra"), s.update({"masked.cond_proj.bias": torch.zeros(31)})))
    with pytest.raises(ArtifactError, match=r"masked.cond_proj.bias"):
        LiteVoice.load(d)
    _rewrite(d, lambda s: s.update({"masked.cond_proj.bias": torch.zeros(32, dtype=torch.bfloat16)}))
    with pytest.raises(ArtifactError, match="BF16"):
        LiteVoice.load(d)
    _rewrite(d, lambda s: s.update({"masked.cond_proj.bias": torch.zeros(32)}))
    LiteVoice.load(d)
    with open(d / "model.safetensors", "r+b") as f:  # tamper with the weights after SHA256SUMS was written
        f.seek(-3, 2)
        f.write(b"\x01\x02\x03")
    with pytest.raises(ArtifactError, match="checksum"):
        LiteVoice.load(d)


def test_refiner_loader_checks(tmp_path: Path) -> None:
    d = _save(tmp_path / "v", "float32")
    state = load_file(str(d / "refiner.safetensors"))
    state.pop("norms.1.bias")
    save_file(state, str(d / "refiner.safetensors"))
    artifacts.write_checksums(d)
    with pytest.raises(ArtifactError, match="refiner.safetensors does not match"):
        LiteVoice.load(d)
    (d / "refiner.yaml").write_text((d / "refiner.yaml").read_text().replace("voice_sha256: ", "voice_sha256: 0"))
    artifacts.write_checksums(d)
    with pytest.raises(ArtifactError, match="mistakes of other weights"):
        LiteVoice.load(d)


def test_import_leaves_torch_out() -> None:
    code = ("import sys, audiopd.lite.voice as v; v.LiteVoice.load('natural'); "
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


@pytest.mark.parametrize("t,w", [(7, 3), (9, 3), (10, 3), (11, 3), (36, 4), (37, 4), (13, 6)])
def test_attention_kernels_match_torch(t: int, w: int) -> None:
    from audiopd.lite.transformer import block_local_attention, full_attention
    from audiopd.model.layers import block_key_mask
    from audiopd.model.layers import block_local_attention as torch_local

    q, k, v = torch.randn(3, 1, 2, t, 8, generator=torch.Generator().manual_seed(t * w))
    scaled = q[0].numpy() / np.sqrt(8.0)
    ref = torch_local(q, k, v, block_key_mask(None, 1, t, 2, w, q.device), w)[0]
    _close(block_local_attention(scaled, k[0].numpy(), v[0].numpy(), w), ref, atol=1e-5)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)[0]
    _close(full_attention(scaled, k[0].numpy(), v[0].numpy()), ref, atol=1e-5)
