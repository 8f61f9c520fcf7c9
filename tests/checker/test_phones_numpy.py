"""The phone recogniser without torch: audiopd.lite.recognizer and the NumPy log-mel against the torch reference,
its loader's checks, and a fast check that never imports torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from audiopd import artifacts
from audiopd.checker import phones
from audiopd.checker.ctc import greedy
from audiopd.checker.phones import RecognizerConfig, log_mel, to_16k, weight_shapes
from audiopd.checker.phones_torch import PhoneRecognizer, save_recognizer
from audiopd.checker.phones_torch import load_recognizer as load_torch
from audiopd.errors import ArtifactError
from audiopd.lite import recognizer as lite

TINY = RecognizerConfig(n_mels=40, d_model=16, layers=2, kernel=5, ffn=24, dropout=0.0)
SPEECH = Path(__file__).resolve().parents[2] / "samples" / "codec" / "fast" / "piper-joe.flac"


def torch_log_mel(audio16k: np.ndarray, n_mels: int = 80) -> np.ndarray:
    """The features as torch computed them before the split (and as the shipped recogniser was trained on)."""
    x = torch.from_numpy(np.ascontiguousarray(audio16k, dtype=np.float32))
    if x.numel() < phones.WIN:
        x = torch.nn.functional.pad(x, (0, phones.WIN - x.numel()))
    spec = torch.stft(x, phones.N_FFT, phones.HOP, phones.WIN, window=torch.hann_window(phones.WIN), center=True,
                      return_complex=True)
    mel = (spec.abs() ** 2).T @ torch.from_numpy(np.array(phones.mel_matrix(n_mels)))
    feats = torch.log(mel + 1e-6)
    return (feats - feats.mean(dim=0, keepdim=True)).numpy()


@torch.inference_mode()
def torch_posteriors(model: PhoneRecognizer, audio: np.ndarray, rate: int) -> np.ndarray:
    return model(torch.from_numpy(torch_log_mel(to_16k(audio, rate), model.cfg.n_mels))[None])[0].numpy()


def synthetic_clip(seconds: float, rate: int, seed: int = 0) -> np.ndarray:
    """Voiced-like audio: a gliding harmonic tone, syllable-rate amplitude, a little noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    f0 = 120 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    tone = sum(np.sin(k * phase) / k for k in range(1, 12))
    env = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t) ** 2
    return (0.1 * tone * env + 0.003 * rng.standard_normal(t.size)).astype(np.float32)


@pytest.mark.parametrize("n", [100, 400, 401, 16000, 33333])
def test_log_mel_equals_the_torch_features(n: int) -> None:
    x = (np.random.default_rng(n).standard_normal(n) * 0.1).astype(np.float32)
    got, ref = log_mel(x), torch_log_mel(x)
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, atol=1e-4)
    np.testing.assert_allclose(log_mel(x, 40), torch_log_mel(x, 40), atol=1e-4)


def test_weight_shapes_are_the_torch_state_dict() -> None:
    for cfg in (RecognizerConfig(), TINY):
        state = PhoneRecognizer(cfg).state_dict()
        assert weight_shapes(cfg) == {k: tuple(v.shape) for k, v in state.items()}


@pytest.mark.parametrize("name", ["phones16k", "phones16k_natural"])
@pytest.mark.parametrize("clip", ["synthetic", "speech"])
def test_shipped_recognizer_matches_torch(clip: str, name: str) -> None:
    if clip == "speech":
        if not SPEECH.is_file():
            pytest.skip("samples/ not in this checkout")
        import soundfile as sf

        audio, rate = sf.read(str(SPEECH), dtype="float32")
    else:
        audio, rate = synthetic_clip(3.0, 22050), 22050
    ref = torch_posteriors(load_torch(name), audio, rate)
    got = lite.load_recognizer(name).posteriors(audio, rate)
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, atol=1e-3)
    assert greedy(got) == greedy(ref)
    if clip == "speech":
        assert len(greedy(got)) > 5  # real speech: the comparison covers actual phone decisions


def test_tiny_random_recognizer_matches_torch(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = PhoneRecognizer(TINY).eval()
    d = save_recognizer(model, tmp_path / "tiny")
    rec = lite.load_recognizer(d)
    assert rec.frame_s == model.frame_s
    for seconds in (0.01, 0.3, 2.0):  # a clip shorter than one window still gives frames
        x = synthetic_clip(seconds, 16000, seed=1)
        ref = torch_posteriors(model, x, 16000)
        got = rec.posteriors(x, 16000)
        np.testing.assert_allclose(got, ref, atol=1e-4)
        assert greedy(got) == greedy(ref)
    # the torch model's own posteriors (NumPy features since the split) agree too
    np.testing.assert_allclose(model.posteriors(x, 16000), got, atol=1e-4)


def test_loader_is_cached() -> None:
    assert lite.load_recognizer() is lite.load_recognizer(phones.DEFAULT_RECOGNIZER)


def _copy_with(src: Path, dst: Path, *, config: dict | None = None, weights: dict | None = None) -> Path:
    from safetensors.numpy import save_file

    dst.mkdir(parents=True)
    cfg = yaml.safe_load((src / "config.yaml").read_text())
    (dst / "config.yaml").write_text(yaml.safe_dump({**cfg, **(config or {})}))
    state = lite.load_weights(src / "model.safetensors") if weights is None else weights
    save_file(state, str(dst / "model.safetensors"))
    artifacts.write_checksums(dst)
    return dst


def test_loader_rejects_what_the_torch_loader_rejects(tmp_path: Path) -> None:
    torch.manual_seed(0)
    src = save_recognizer(PhoneRecognizer(TINY), tmp_path / "src")
    cfg = yaml.safe_load((src / "config.yaml").read_text())
    state = lite.load_weights(src / "model.safetensors")
    bad = {
        "version": {"config": {"format_version": 99}},
        "kind": {"config": {"kind": "voice"}},
        "key": {"config": {"model": {**cfg["model"], "heads": 2}}},
        "phones": {"config": {"phones": list(phones.PHONES[:-1])}},
        "rate": {"config": {"sample_rate": 22050}},
        "missing": {"weights": {k: v for k, v in state.items() if k != "out.bias"}},
        "extra": {"weights": {**state, "blocks.9.pw.weight": state["blocks.0.pw.weight"]}},
        "shape": {"config": {"model": {**cfg["model"], "ffn": 32}}},
    }
    for name, edit in bad.items():
        d = _copy_with(src, tmp_path / name, **edit)
        with pytest.raises(ArtifactError):
            lite.load_recognizer(d)
        with pytest.raises(ArtifactError):
            load_torch(d)

    tampered = _copy_with(src, tmp_path / "tampered")
    with open(tampered / "model.safetensors", "r+b") as fh:
        fh.seek(-4, 2)
        fh.write(b"\x00\x01\x02\x03")
    with pytest.raises(ArtifactError, match="(?i)checksum|sha"):
        lite.load_recognizer(tampered)


def test_fast_check_never_imports_torch() -> None:
    code = """
import sys
import numpy as np
import audiopd
import audiopd.checker.ctc, audiopd.checker.phones, audiopd.checker.score, audiopd.lite.recognizer
from audiopd.checker import score
rate = 22050
t = np.arange(int(1.5 * rate)) / rate
audio = (0.2 * np.sin(2 * np.pi * 150 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t) ** 2)).astype(np.float32)
verdict = score(audio, rate, "Hello there, old friend.")
assert verdict.metrics["align_seconds"] > 0 and verdict.words, verdict
audiopd.check(audio, rate, "Hello there.")
assert "torch" not in sys.modules, sorted(m for m in sys.modules if m.startswith("torch"))
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
