"""audiopd.checker.phones: features, labels, the recogniser's shapes, and its artifact's save/load/reject."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import yaml

from audiopd.checker.phones import NUM_CLASSES, PHONES, RecognizerConfig, labels_of_ids, log_mel, to_16k
from audiopd.checker.phones_torch import PhoneRecognizer, load_recognizer, save_recognizer
from audiopd.errors import ArtifactError
from audiopd.text import phonemize

TINY = RecognizerConfig(n_mels=80, d_model=16, layers=1, kernel=3, ffn=32, dropout=0.0)


def test_labels_are_the_phones_without_stress_or_pauses() -> None:
    ph = phonemize("Hi, cat.")
    pairs = labels_of_ids(ph.ids)
    assert [PHONES[lbl - 1] for lbl, _ in pairs] == ["HH", "AY", "K", "AE", "T"]
    assert all(ph.tokens[k][0] == PHONES[lbl - 1][0] for lbl, k in pairs)  # token index points at the phone


def test_log_mel_rate_shape_and_level_invariance() -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(16000) * 0.1).astype(np.float32)
    f = log_mel(x)
    assert f.shape == (101, 80) and f.dtype == np.float32
    # 12 dB quieter: the same features, but for bins near the log floor (energy below 1e-6)
    assert np.quantile(np.abs(log_mel(x * 0.25) - f), 0.95) < 1e-3
    assert log_mel(x[:100]).shape[0] >= 1  # shorter than a window still gives a frame


def test_to_16k_resamples_and_keeps_16k() -> None:
    x = np.sin(np.arange(22050) / 22050 * 2 * np.pi * 440).astype(np.float32)
    assert to_16k(x, 22050).shape == (16000,)
    assert to_16k(x[:16000], 16000) is not None and to_16k(x[:16000], 16000).shape == (16000,)


def test_model_gives_log_posteriors_at_half_the_frame_rate() -> None:
    torch.manual_seed(0)
    model = PhoneRecognizer(TINY).eval()
    lp = model.posteriors(np.zeros(16000, dtype=np.float32) + 1e-3, 16000)
    assert lp.shape == (51, NUM_CLASSES)
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, rtol=1e-4)
    assert PhoneRecognizer.out_lengths(torch.tensor([101, 100])).tolist() == [51, 50]


def test_artifact_round_trip_and_rejections(tmp_path) -> None:
    torch.manual_seed(0)
    model = PhoneRecognizer(TINY).eval()
    d = save_recognizer(model, tmp_path / "rec", info={"recipe": "test"})
    loaded = load_recognizer(d)
    x = np.random.default_rng(1).standard_normal(8000).astype(np.float32) * 0.1
    np.testing.assert_allclose(loaded.posteriors(x, 16000), model.posteriors(x, 16000), atol=1e-5)

    cfg = yaml.safe_load((d / "config.yaml").read_text())
    bad = tmp_path / "bad"
    for name, edit in {"version": {"format_version": 99}, "key": {"model": {**cfg["model"], "heads": 2}},
                       "phones": {"phones": list(PHONES[:-1])}}.items():
        target = bad / name
        save_recognizer(model, target)
        (target / "config.yaml").write_text(yaml.safe_dump({**cfg, **edit}))
        from audiopd import artifacts

        artifacts.write_checksums(target)
        with pytest.raises(ArtifactError):
            load_recognizer(target)
    tampered = bad / "tampered"
    save_recognizer(model, tampered)
    with open(tampered / "model.safetensors", "r+b") as fh:
        fh.seek(-4, 2)
        fh.write(b"\x00\x01\x02\x03")
    with pytest.raises(ArtifactError, match="(?i)checksum|sha"):
        load_recognizer(tampered)
