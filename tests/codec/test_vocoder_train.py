"""The fast vocoder's training: segments line up with their audio, losses fall, a stopped run resumes exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from mel_fixtures import chirp, write_mel_artifact

from audiopd.codec import load_codec
from audiopd.codec.mel_vocoders import new_fast, num_parameters
from audiopd.codec.vocoder_train import Corpus, Losses, TrainConfig, load_checkpoint, train

HOP = 256


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    codec = load_codec(write_mel_artifact(tmp_path_factory.mktemp("c") / "mel-fx"))
    return Corpus([chirp(0.5), chirp(0.2), chirp(0.05)], codec)


def test_segments_are_aligned_and_padded(corpus: Corpus) -> None:
    tc = TrainConfig(segment_frames=8, batch=16, quantized_p=0.0)
    mel, audio, f0 = corpus.batch(np.random.default_rng(0), tc)
    assert mel.shape == (16, 80, 8) and audio.shape == (16, 8 * HOP) and f0 is None
    # Unquantised segments are slices of the analysis of their own audio: re-analysing agrees inside the segment.
    losses = Losses(corpus.cfg)
    remel = losses.log_mel(audio)[..., :8]
    inner = (slice(None), slice(None), slice(2, 6))  # away from the segment's edges, where padding differs
    assert torch.allclose(remel[inner], mel[inner], atol=1e-3)


def test_default_fast_vocoder_is_about_a_million_parameters() -> None:
    from audiopd.codec.mel import MelCodecConfig

    assert 0.7e6 < num_parameters(new_fast(MelCodecConfig(name="x"))) < 1.5e6


def test_training_lowers_the_loss_and_resumes(corpus: Corpus, tmp_path) -> None:
    run = tmp_path / "run"
    tc = TrainConfig(segment_frames=8, batch=4, lr=3e-3, max_steps=30, log_every=10, checkpoint_every_s=1e9)
    state = train(corpus, run, tc, log=lambda m: None)
    assert state["step"] == 30 and (run / "model.safetensors").is_file()
    hist = state["history"]
    assert len(hist) == 3 and hist[-1]["logmag"] < hist[0]["logmag"] and "phase" in hist[0]
    more = train(corpus, run, TrainConfig(segment_frames=8, batch=4, max_steps=40, log_every=10), log=lambda m: None)
    assert more["step"] == 40 and len(more["history"]) == 4
    saved = json.loads((run / "state.json").read_text())
    assert saved["step"] == 40 and saved["adam_step"] == 40
    model = new_fast(corpus.cfg)
    opt = torch.optim.AdamW(model.parameters())
    assert load_checkpoint(run, model, opt)["step"] == 40 and len(opt.state) == len(list(model.parameters()))


def test_teacher_targets_follow_the_input_mel(corpus: Corpus) -> None:
    clean = [np.full(len(a), 0.25, np.float32) for a in corpus.audio]
    quantized = [np.full(len(a), -0.5, np.float32) for a in corpus.audio]
    corpus.set_targets(clean, quantized)
    try:
        for p, want in ((0.0, 0.25), (1.0, -0.5)):
            _, audio, _ = corpus.batch(np.random.default_rng(1), TrainConfig(segment_frames=4, batch=6, quantized_p=p))
            inside = audio[:, : 4 * HOP][audio[:, : 4 * HOP] != 0]  # padding past a short clip's end stays 0
            assert inside.numel() and torch.all(inside == want)
        with pytest.raises(ValueError, match="one waveform"):
            corpus.set_targets(clean[:1], quantized)
    finally:
        corpus.set_targets(corpus.audio, corpus.audio)


def test_compressed_complex_loss_is_zero_on_the_target_and_sees_phase(corpus: Corpus) -> None:
    losses = Losses(corpus.cfg)
    y = torch.from_numpy(corpus.audio[0][None, : 16 * HOP].copy())
    spec = torch.stft(y, 1024, HOP, 1024, window=torch.hann_window(1024), center=True, return_complex=True)
    assert losses.compressed_complex(spec, y).item() < 1e-5
    flipped = losses.compressed_complex(spec * 1j, y).item()  # same magnitudes, phase turned by 90 degrees
    assert flipped > 0.1 and losses(torch.zeros_like(y), y, 1.0)[0].item() > 0


def test_training_with_the_complex_loss_logs_it(corpus: Corpus, tmp_path) -> None:
    tc = TrainConfig(segment_frames=8, batch=2, max_steps=2, log_every=2, checkpoint_every_s=1e9, complex_weight=1.0)
    state = train(corpus, tmp_path / "run", tc, log=lambda m: None)
    assert state["history"][-1]["complex"] > 0


def test_spectrum_loss_is_zero_on_the_target_and_ignores_phase(corpus: Corpus) -> None:
    losses = Losses(corpus.cfg)
    y = torch.from_numpy(corpus.audio[0][None, : 16 * HOP].copy())
    spec = torch.stft(y, 1024, HOP, 1024, window=torch.hann_window(1024), center=True, return_complex=True)
    assert losses.spectrum(spec, y)[0].item() < 1e-4
    assert losses.spectrum(spec * 1j, y)[0].item() < 1e-4  # the magnitude is its whole target
    assert losses.spectrum(spec * 2, y)[0].item() > 0.5


def test_magnitude_only_training_skips_the_waveform_losses(corpus: Corpus, tmp_path) -> None:
    tc = TrainConfig(segment_frames=8, batch=4, lr=3e-3, max_steps=30, log_every=10, checkpoint_every_s=1e9,
                     wave_weight=0.0, spec_weight=1.0, phase_weight=0.0)
    hist = train(corpus, tmp_path / "run", tc, log=lambda m: None)["history"]
    assert set(hist[0]) == {"step", "spec_logmag", "spec_sc"}
    assert hist[-1]["spec_logmag"] < hist[0]["spec_logmag"]


def test_harmonic_head_learns_f0_from_the_track_of_its_targets(tmp_path) -> None:
    import dataclasses

    from mel_fixtures import TINY_FAST

    from audiopd.codec.harmonic import f0_track

    art = write_mel_artifact(tmp_path / "harm", fast=False)
    codec = load_codec(art)
    codec.cfg = dataclasses.replace(codec.cfg, fast=dataclasses.replace(TINY_FAST, head="harmonic"))
    t = np.arange(11025) / 22050  # 0.5 s of a harmonic tone at 180 Hz
    tone = sum(0.1 / k * np.sin(2 * np.pi * k * 180.0 * t) for k in range(1, 10)).astype(np.float32)
    harm = Corpus([tone, chirp(0.5)], codec)
    tc = TrainConfig(segment_frames=8, batch=4, lr=3e-3, max_steps=40, log_every=10, checkpoint_every_s=1e9,
                     wave_weight=0.0, spec_weight=1.0, phase_weight=0.0)
    with pytest.raises(ValueError, match="F0 targets"):
        train(harm, tmp_path / "no-f0", tc, log=lambda m: None)
    track = f0_track(tone, sample_rate=22050, hop=HOP, frames=len(harm.mel[0]), n_fft=1024)
    assert np.median(track[track > 0]) == pytest.approx(180.0, rel=0.02)
    with pytest.raises(ValueError, match="one value per frame"):
        harm.set_f0([track])
    harm.set_f0([track, f0_track(chirp(0.5), sample_rate=22050, hop=HOP, frames=len(harm.mel[1]), n_fft=1024)])
    hist = train(harm, tmp_path / "run", tc, log=lambda m: None)["history"]
    assert {"f0", "voicing", "spec_logmag"} <= set(hist[0])
    assert hist[-1]["f0"] < hist[0]["f0"] and hist[-1]["spec_logmag"] < hist[0]["spec_logmag"]
    # with the waveform losses on as well, the log keeps both heads of figures
    both = dataclasses.replace(tc, wave_weight=1.0, max_steps=10)
    assert {"f0", "voicing", "mel_l1", "spec_sc"} <= set(train(harm, tmp_path / "both", both, log=lambda m: None)
                                                         ["history"][0])


def test_waveform_losses_train_the_magnitude_with_the_fast_griffin_lim_phase(tmp_path) -> None:
    """With phase_iters > 0 the waveform losses see the decoder's own output, the magnitude with FGLA's phase,
    and their gradient reaches the magnitude head (not the iterations: it stays finite and of the spectrum loss's
    order)."""
    import dataclasses

    from mel_fixtures import TINY_FAST

    codec = load_codec(write_mel_artifact(tmp_path / "fgla", fast=False))
    codec.cfg = dataclasses.replace(codec.cfg, fast=dataclasses.replace(TINY_FAST, phase_iters=3))
    model = new_fast(codec.cfg)
    mel = torch.from_numpy(codec.analyzer(chirp(0.3)).T[None].copy())
    spec = model.spectrum(mel)
    y_hat = model.synthesize(spec)
    assert torch.equal(y_hat.detach(), model(mel).detach())  # training sees what the codec decodes
    assert not torch.allclose(y_hat, model.waveform(spec), atol=1e-4)  # ... which is not the plain iSTFT
    y = torch.from_numpy(np.pad(chirp(0.3), (0, y_hat.shape[-1] - len(chirp(0.3)))))[None]
    loss, _ = Losses(codec.cfg)(y_hat, y, 1.0)
    loss.backward()
    magnitude_rows = model.head.weight.grad[: codec.cfg.n_fft // 2 + 1]
    assert magnitude_rows.abs().sum() > 0 and torch.isfinite(model.head.weight.grad).all()
    wave_norm = torch.linalg.norm(model.head.weight.grad)
    model.zero_grad()
    Losses(codec.cfg).spectrum(model.spectrum(mel), y)[0].backward()
    assert wave_norm < 20 * torch.linalg.norm(model.head.weight.grad)
    corpus = Corpus([chirp(0.5), chirp(0.2)], codec)
    tc = TrainConfig(segment_frames=8, batch=4, lr=3e-3, max_steps=30, log_every=10, checkpoint_every_s=1e9,
                     phase_weight=0.0)
    hist = train(corpus, tmp_path / "run", tc, log=lambda m: None)["history"]
    assert hist[-1]["mel_l1"] < hist[0]["mel_l1"]


def test_discriminators_judge_every_period_and_resolution() -> None:
    from audiopd.codec.vocoder_gan import PERIODS, RESOLUTIONS, Discriminators, discriminator_loss, generator_losses

    torch.manual_seed(0)
    d = Discriminators()
    real, fake = torch.randn(2, 4096) * 0.1, torch.zeros(2, 4096)
    judged_real, judged_fake = d(real), d(fake)
    assert len(judged_real) == len(PERIODS) + len(RESOLUTIONS)
    assert all(logits.shape[0] == 2 and len(fmaps) >= 2 for logits, fmaps in judged_real)
    adv, fm = generator_losses(judged_real, judged_real)
    assert fm.item() == 0.0 and adv.item() > 0  # identical features match exactly; an untrained D does not say 1
    # A few discriminator steps learn to tell the two apart: its loss falls.
    opt = torch.optim.AdamW(d.parameters(), lr=1e-3)
    first = None
    for _ in range(8):
        loss = discriminator_loss(d(real), d(fake))
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < first


def test_adversarial_phase_trains_and_resumes_its_discriminators(corpus: Corpus, tmp_path) -> None:
    run = tmp_path / "gan"
    tc = TrainConfig(segment_frames=8, batch=2, max_steps=6, log_every=2, gan_from_step=3, checkpoint_every_s=1e9)
    state = train(corpus, run, tc, log=lambda m: None)
    assert "adv" not in state["history"][0] and {"adv", "fm", "d"} <= set(state["history"][-1])
    assert (run / "disc.safetensors").is_file() and state["disc_adam_step"] == 3
    more = train(corpus, run, TrainConfig(segment_frames=8, batch=2, max_steps=8, log_every=2, gan_from_step=3),
                 log=lambda m: None)
    assert more["step"] == 8 and more["disc_adam_step"] == 5  # the discriminators' optimiser resumed, not restarted
    # Each run's settings are kept with the step it began at.
    assert [(r["from_step"], r["gan_from_step"]) for r in more["runs"]] == [(0, 3), (6, 3)]
