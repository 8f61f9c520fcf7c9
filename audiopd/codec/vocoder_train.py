"""Training the mel codec's ``fast`` vocoder (``mel_vocoders.FastVocoder``) on natural speech, resumably.

Input: each fitting utterance's log-mel, or with probability ``quantized_p`` the same mel passed through the codec's
residual VQ, so the vocoder learns the mels it will be given at synthesis. Target: by default the original natural
waveform; with ``Corpus.set_targets``, the ``hq`` teacher's rendering of that very input (clean or quantised mel),
as issue 22 suggests: a mel does not fix its waveform's phase, the teacher's deterministic answer does, so the
student learns one function (HiFi-GAN's) instead of averaging over the phases natural speech could have had.
Losses (HiFi-GAN's mel L1, Kong et al. 2020, plus the multi-resolution STFT loss of Parallel WaveGAN, Yamamoto
et al. 2020): ``mel_weight`` x L1 of log-mels + spectral convergence and log-magnitude L1 at three STFT resolutions,
and ``phase_weight`` x APNet's anti-wrapping phase losses (Ai & Ling 2023: instantaneous phase, group delay,
instantaneous angular frequency) between the predicted phase and the target's, weighted by the target's magnitude:
magnitude losses alone leave the phase of an iSTFT vocoder unconstrained. ``wave_weight`` scales the losses on the
waveform the vocoder synthesises (``FastVocoder.synthesize``: with ``FastVocoderConfig.phase_iters`` > 0, the
predicted magnitude with the phase FGLA settles on, so the magnitude learns to sound right with that phase);
``spec_weight`` adds log-magnitude L1 and spectral convergence on the predicted spectrum itself, so the magnitude
is also learnt for its own sake, and the phase losses only shape FGLA's starting point. From step
``gan_from_step`` on (0: never) the adversarial phase adds Vocos's (Siuzdak 2023) multi-period and multi-resolution
discriminators (``vocoder_gan``): least-squares adversarial and feature-matching losses, the discriminators trained
in turn.

A run is a directory: ``model.safetensors``, ``optim.safetensors`` (AdamW's moments, by parameter name), once the
adversarial phase has begun ``disc.safetensors`` and ``disc-optim.safetensors`` likewise, and ``state.json`` (step,
seconds trained, loss history), written every ``checkpoint_every_s`` and at the end, each file by temp file +
rename and ``state.json`` last, so a kill at any moment resumes from the last whole checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from audiopd.codec.mel import MelCodec, MelCodecConfig
from audiopd.codec.mel_vocoders import FastVocoder, new_fast
from audiopd.codec.phase import stft

STFT_RESOLUTIONS = ((512, 128), (1024, 256), (2048, 512))  # (n_fft, hop), Parallel WaveGAN's three


@dataclass(frozen=True)
class TrainConfig:
    segment_frames: int = 32  # 8,192 samples at hop 256: HiFi-GAN's segment
    batch: int = 8
    lr: float = 5e-4
    weight_decay: float = 0.01
    mel_weight: float = 1.0
    # Scales the waveform-domain losses (mel L1, multi-resolution STFT) on the synthesised waveform, with fast
    # Griffin-Lim's phase when phase_iters > 0; 0 skips them and the synthesis.
    wave_weight: float = 1.0
    # Log-magnitude L1 + spectral convergence between the predicted spectrum and the target's STFT at the
    # vocoder's own resolution: trains the magnitude directly, whatever the predicted phase does to the waveform.
    spec_weight: float = 0.0
    phase_weight: float = 0.3
    # A harmonic head (FastVocoderConfig.head) also learns F0 (L1 of log F0 on voiced frames) and voicing (BCE)
    # from the target's F0 track (Corpus.set_f0); its magnitude loss then draws the comb at the predicted F0.
    f0_weight: float = 1.0
    voicing_weight: float = 0.1
    # L1 between power-compressed complex spectra (|S|^0.3 with S's phase; Braun & Tashev 2021's compressed
    # complex loss): with teacher targets the phase is a function of the mel, so it can be regressed directly.
    complex_weight: float = 0.0
    quantized_p: float = 0.5
    # The adversarial phase (vocoder_gan) from this step on (0 = never). HiFi-GAN weighs adversarial 1, feature
    # matching 2 and mel L1 45 (Kong et al. 2020, V1 config); here mel L1 weighs 1, so the other two are scaled.
    gan_from_step: int = 0
    adv_weight: float = 1.0 / 45
    fm_weight: float = 2.0 / 45
    d_lr: float = 2e-4  # the discriminators' AdamW (betas 0.8, 0.99), as HiFi-GAN's
    max_steps: int = 1_000_000
    max_seconds: float = 0.0  # stop after this much training time in this run (0 = no limit)
    checkpoint_every_s: float = 300.0
    log_every: int = 50
    seed: int = 0


class Corpus:
    """Fitting utterances in memory: audio, analysed log-mel and its RVQ reconstruction (all levels)."""

    def __init__(self, audios: list[np.ndarray], codec: MelCodec) -> None:
        self.cfg: MelCodecConfig = codec.cfg
        hop = self.cfg.hop
        self.audio, self.mel, self.qmel = [], [], []
        for a in audios:
            mel = codec.analyzer(a)
            self.audio.append(np.pad(a, (0, len(mel) * hop - len(a))).astype(np.float32))
            self.mel.append(mel)
            self.qmel.append(codec.decode_mel(codec.encode_mel(mel)))
        self.frames = np.array([len(m) for m in self.mel])
        self.target, self.qtarget = self.audio, self.audio
        self.f0: list[np.ndarray] | None = None

    def set_targets(self, clean: list[np.ndarray], quantized: list[np.ndarray]) -> None:
        """Train towards these waveforms (``T * hop`` samples each): ``clean[i]`` for utterance i's mel and
        ``quantized[i]`` for its RVQ reconstruction, e.g. the ``hq`` teacher's renderings of them."""
        for name, ws in (("clean", clean), ("quantized", quantized)):
            if len(ws) != len(self.mel) or any(len(w) != len(a) for w, a in zip(ws, self.audio)):
                raise ValueError(f"{name} targets must be one waveform of T * hop samples per utterance")
        self.target = [np.asarray(w, dtype=np.float32) for w in clean]
        self.qtarget = [np.asarray(w, dtype=np.float32) for w in quantized]

    def set_f0(self, f0: list[np.ndarray]) -> None:
        """Each utterance's F0 per frame (Hz, 0 = unvoiced), e.g. ``harmonic.f0_track`` of its target."""
        if len(f0) != len(self.mel) or any(len(f) != len(m) for f, m in zip(f0, self.mel)):
            raise ValueError("F0 targets must be one value per frame of every utterance")
        self.f0 = [np.asarray(f, dtype=np.float32) for f in f0]

    def batch(self, rng: np.random.Generator,
              tc: TrainConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(mel [B, n_mels, F], audio [B, F * hop], f0 [B, F] or None)`` of random segments; frame t of a
        segment sits on sample t * hop."""
        hop, f = self.cfg.hop, tc.segment_frames
        weights = np.maximum(self.frames - f, 1).astype(np.float64)
        picks = rng.choice(len(self.mel), size=tc.batch, p=weights / weights.sum())
        mels, audios, f0s = [], [], []
        for i in picks:
            start = int(rng.integers(0, max(1, self.frames[i] - f)))
            quantized = rng.random() < tc.quantized_p
            m = (self.qmel if quantized else self.mel)[i][start:start + f]
            y = (self.qtarget if quantized else self.target)[i][start * hop:(start + f) * hop]
            if len(m) < f:  # a clip shorter than a segment: pad with the floor (silence) and zeros
                m = np.pad(m, ((0, f - len(m)), (0, 0)), constant_values=np.log(self.cfg.log_floor))
                y = np.pad(y, (0, f * hop - len(y)))
            mels.append(m.T)
            audios.append(y)
            if self.f0 is not None:
                f0s.append(np.pad(self.f0[i][start:start + f], (0, max(0, f - (self.frames[i] - start)))))
        f0 = torch.from_numpy(np.stack(f0s)) if self.f0 is not None else None
        return torch.from_numpy(np.stack(mels)), torch.from_numpy(np.stack(audios)), f0


def _sc_logmag(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Spectral convergence and log-magnitude L1 of magnitudes ``a`` against ``b`` (both floored above 0)."""
    return torch.linalg.norm(b - a) / torch.linalg.norm(b).clamp(min=1e-7), (a.log() - b.log()).abs().mean()


class Losses(nn.Module):
    """Mel L1 on the codec's own log-mel + multi-resolution STFT (spectral convergence, log-magnitude L1)."""

    def __init__(self, cfg: MelCodecConfig) -> None:
        super().__init__()
        from audiopd.codec.mel import mel_basis

        self.cfg = cfg
        self.register_buffer("basis", torch.from_numpy(mel_basis(cfg)))
        self.register_buffer("win_mel", torch.hann_window(cfg.win))
        for n_fft, _ in STFT_RESOLUTIONS:
            self.register_buffer(f"win{n_fft}", torch.hann_window(n_fft))

    def _mag(self, y: torch.Tensor, n_fft: int, hop: int) -> torch.Tensor:
        return stft(y, n_fft, hop, getattr(self, f"win{n_fft}")).abs().clamp(min=1e-7)

    def log_mel(self, y: torch.Tensor) -> torch.Tensor:
        c = self.cfg
        mag = torch.stft(y, c.n_fft, c.hop, c.win, window=self.win_mel, center=True,
                         return_complex=True).abs()
        return torch.log(torch.clamp(self.basis @ mag, min=c.log_floor))

    def forward(self, y_hat: torch.Tensor, y: torch.Tensor, mel_weight: float) -> tuple[torch.Tensor, dict]:
        mel = (self.log_mel(y_hat) - self.log_mel(y)).abs().mean()
        sc = mag = 0.0
        for n_fft, hop in STFT_RESOLUTIONS:
            convergence, log_l1 = _sc_logmag(self._mag(y_hat, n_fft, hop), self._mag(y, n_fft, hop))
            sc, mag = sc + convergence, mag + log_l1
        k = len(STFT_RESOLUTIONS)
        total = mel_weight * mel + (sc + mag) / k
        return total, {"mel_l1": mel.item(), "sc": sc.item() / k, "logmag": mag.item() / k}

    def reference(self, y: torch.Tensor, frames: int) -> torch.Tensor:
        """``y``'s complex STFT at the vocoder's own resolution, its first ``frames`` frames."""
        c = self.cfg
        return stft(y, c.n_fft, c.hop, getattr(self, f"win{c.n_fft}"))[..., :frames]

    def spectrum(self, spec_hat: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """Log-magnitude L1 + spectral convergence of ``spec_hat`` ``[B, bins, T]`` against ``y``'s STFT."""
        sc, logmag = _sc_logmag(spec_hat.abs().clamp(min=1e-5),
                                self.reference(y, spec_hat.shape[-1]).abs().clamp(min=1e-5))
        return logmag + sc, {"spec_logmag": logmag.item(), "spec_sc": sc.item()}

    def compressed_complex(self, spec_hat: torch.Tensor, y: torch.Tensor, power: float = 0.3) -> torch.Tensor:
        """Mean |c(spec_hat) - c(STFT(y))| with c(S) = |S|^power e^(i angle S), at the vocoder's own STFT."""
        ref = self.reference(y, spec_hat.shape[-1])

        def compress(x: torch.Tensor) -> torch.Tensor:
            mag = x.abs().clamp(min=1e-7)
            return x * (mag ** (power - 1.0))

        return (compress(spec_hat) - compress(ref)).abs().mean()

    def phase(self, spec_hat: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, float]:
        """APNet's three anti-wrapping phase losses between ``spec_hat`` ``[B, bins, T]`` and ``y``'s STFT at the
        vocoder's own resolution, each a magnitude-weighted mean; returns (sum, its value)."""
        ref = self.reference(y, spec_hat.shape[-1])
        w = ref.abs()
        w = w / w.mean().clamp(min=1e-7)
        p_hat, p = torch.angle(spec_hat), torch.angle(ref)

        def aw(x: torch.Tensor) -> torch.Tensor:  # distance to the nearest multiple of 2 pi
            return (x - 2 * torch.pi * torch.round(x / (2 * torch.pi))).abs()

        ip = (aw(p_hat - p) * w).mean()
        gd = (aw(torch.diff(p_hat, dim=1) - torch.diff(p, dim=1)) * w[:, 1:]).mean()
        iaf = (aw(torch.diff(p_hat, dim=2) - torch.diff(p, dim=2)) * w[..., 1:]).mean()
        total = ip + gd + iaf
        return total, total.item()


# ------------------------------------------------------------------------------------------- checkpoints


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _moments(model: nn.Module, opt: torch.optim.Optimizer) -> tuple[dict, float]:
    names = {id(p): n for n, p in model.named_parameters()}
    moments, step = {}, 0.0
    for p, st in opt.state.items():
        for key in ("exp_avg", "exp_avg_sq"):
            moments[f"{key}.{names[id(p)]}"] = st[key].contiguous()
        step = float(st["step"])
    return moments, step


def _restore(model: nn.Module, opt: torch.optim.Optimizer, weights: Path, moments: Path, step: float) -> None:
    from safetensors.torch import load_file

    model.load_state_dict(load_file(str(weights)), strict=True)
    saved = load_file(str(moments))
    for n, p in model.named_parameters():
        opt.state[p] = {"step": torch.tensor(step), "exp_avg": saved[f"exp_avg.{n}"],
                        "exp_avg_sq": saved[f"exp_avg_sq.{n}"]}


def save_checkpoint(run: Path, model: FastVocoder, opt: torch.optim.Optimizer, state: dict,
                    disc: tuple[nn.Module, torch.optim.Optimizer] | None = None) -> None:
    """Write the generator (and the discriminators with their optimiser, when given), ``state.json`` last."""
    from safetensors.torch import save_file

    run.mkdir(parents=True, exist_ok=True)
    parts = [("model", "optim", "adam_step", model, opt)]
    if disc is not None:
        parts.append(("disc", "disc-optim", "disc_adam_step", *disc))
    for stem, optim_stem, key, module, optimizer in parts:
        moments, state[key] = _moments(module, optimizer)
        _atomic(run / f"{stem}.safetensors", lambda t, m=module: save_file(m.state_dict(), str(t)))
        _atomic(run / f"{optim_stem}.safetensors", lambda t, m=moments: save_file(m, str(t)))
    _atomic(run / "state.json", lambda t: t.write_text(json.dumps(state, indent=1) + "\n"))


def load_checkpoint(run: Path, model: FastVocoder, opt: torch.optim.Optimizer,
                    disc: tuple[nn.Module, torch.optim.Optimizer] | None = None) -> dict:
    """Restore model and optimizer (and the discriminators, when given and saved) from ``run``; {} when it holds
    no checkpoint yet."""
    if not (run / "state.json").is_file():
        return {}
    state = json.loads((run / "state.json").read_text())
    _restore(model, opt, run / "model.safetensors", run / "optim.safetensors", state["adam_step"])
    if disc is not None and "disc_adam_step" in state:
        _restore(*disc, run / "disc.safetensors", run / "disc-optim.safetensors", state["disc_adam_step"])
    return state


def adversarial_step(disc: tuple[nn.Module, torch.optim.Optimizer], y_hat: torch.Tensor, y: torch.Tensor,
                     tc: TrainConfig, parts: dict) -> torch.Tensor:
    """One discriminator update on (real, generated), then the generator's weighted adversarial + feature-matching
    loss against the updated discriminators (to add to its own); the three values go into ``parts``."""
    from audiopd.codec.vocoder_gan import discriminator_loss, generator_losses

    d, d_opt = disc
    real = d(y)
    d_loss = discriminator_loss(real, d(y_hat.detach()))
    d_opt.zero_grad(set_to_none=True)
    d_loss.backward()
    nn.utils.clip_grad_norm_(d.parameters(), 10.0)
    d_opt.step()
    # The real features of the step before the update serve as the matching targets: one pass fewer on a CPU.
    adv, fm = generator_losses(real, d(y_hat))
    parts.update(d=d_loss.item(), adv=adv.item(), fm=fm.item())
    return tc.adv_weight * adv + tc.fm_weight * fm


def harmonic_losses(f0_hat: torch.Tensor, voicing: torch.Tensor, f0: torch.Tensor | None,
                    tc: TrainConfig) -> tuple[torch.Tensor, dict]:
    """A harmonic head's F0 (log-F0 L1 on voiced frames) and voicing (BCE) losses against ``f0`` ``[B, T]``."""
    if f0 is None:
        raise ValueError("a harmonic head trains with F0 targets: call Corpus.set_f0 first")
    voiced = (f0 > 0).float()
    f0_loss = ((f0_hat.log() - f0.clamp(min=1.0).log()).abs() * voiced).sum() / voiced.sum().clamp(min=1.0)
    v_loss = nn.functional.binary_cross_entropy_with_logits(voicing, voiced)
    return tc.f0_weight * f0_loss + tc.voicing_weight * v_loss, {"f0": f0_loss.item(), "voicing": v_loss.item()}


def train(corpus: Corpus, run: Path, tc: TrainConfig, log: Callable[[str], None] = print,
          init: tuple[Path, dict] | None = None) -> dict:
    """Train (or resume) the fast vocoder of ``corpus``'s codec in directory ``run``; returns the final state.

    ``init = (weights, record)``: a run with no checkpoint yet starts from these generator weights (e.g. the ones an
    artifact ships) and from the step count and training time in ``record``, so training carries on across machines
    whose disks do not persist; the optimizer's moments start afresh."""
    from safetensors.torch import load_file

    torch.manual_seed(tc.seed)
    model = new_fast(corpus.cfg)
    losses = Losses(corpus.cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, betas=(0.9, 0.99), weight_decay=tc.weight_decay)
    disc = None
    if tc.gan_from_step:
        from audiopd.codec.vocoder_gan import Discriminators

        d = Discriminators()
        disc = (d, torch.optim.AdamW(d.parameters(), lr=tc.d_lr, betas=(0.8, 0.99)))
    state = load_checkpoint(run, model, opt, disc)
    if not state and init is not None:
        weights = load_file(str(init[0]))
        if weights["head.weight"].shape != model.head.weight.shape:  # another head: keep the trunk, start the head
            weights = {k: v for k, v in weights.items() if not k.startswith("head.")}
            log("warm start: the head differs from the saved one's, so only the trunk is carried over")
        model.load_state_dict(weights, strict=False)
        state = {"step": int(init[1].get("steps", 0)), "train_seconds": float(init[1].get("train_seconds", 0.0)),
                 "history": [], "init_from": str(init[0])}
        log(f"warm start from {init[0]} (step {state['step']})")
    state = state or {"step": 0, "train_seconds": 0.0, "history": []}
    # Each run's settings, from the step it began at: a run may switch losses (e.g. join the GAN phase) midway.
    state.setdefault("runs", []).append({"from_step": state["step"], **dataclasses.asdict(tc)})
    rng = np.random.default_rng(tc.seed + state["step"])  # a resumed run draws new segments, not the same ones
    log(f"{'resuming at step ' + str(state['step']) if state['step'] else 'starting'}: "
        f"{sum(p.numel() for p in model.parameters())} parameters, {int(corpus.frames.sum())} frames")
    t_run, step0 = time.monotonic(), state["step"]
    t_ckpt = t_run
    acc: dict[str, float] = {}
    model.train()
    while state["step"] < tc.max_steps:
        mel, y, f0 = corpus.batch(rng, tc)
        loss, parts = torch.zeros(()), {}
        if model.harmonic:
            spec, f0_hat, voicing = model.harmonic_spectrum(mel)
            loss, parts = harmonic_losses(f0_hat, voicing, f0, tc)
        else:
            spec = model.spectrum(mel)
        adversarial = disc is not None and state["step"] >= tc.gan_from_step
        if tc.wave_weight or adversarial:
            y_hat = model.synthesize(spec)
        if tc.wave_weight:
            wave, more = losses(y_hat, y, tc.mel_weight)
            parts.update(more)
            loss = loss + tc.wave_weight * wave
        if tc.spec_weight:
            direct, more = losses.spectrum(spec, y)
            parts.update(more)
            loss = loss + tc.spec_weight * direct
        if tc.complex_weight:
            cpx = losses.compressed_complex(spec, y)
            parts["complex"] = cpx.item()
            loss = loss + tc.complex_weight * cpx
        if tc.phase_weight:
            phase, parts["phase"] = losses.phase(spec, y)
            loss = loss + tc.phase_weight * phase
        if adversarial:
            loss = loss + adversarial_step(disc, y_hat, y, tc, parts)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        state["step"] += 1
        for k, v in parts.items():
            acc[k] = acc.get(k, 0.0) + v
        now = time.monotonic()
        if state["step"] % tc.log_every == 0:
            means = {k: round(v / tc.log_every, 4) for k, v in acc.items()}
            acc = {}
            state["history"].append({"step": state["step"], **means})
            log(f"step {state['step']}: {means} ({(now - t_run) / max(1, state['step'] - step0):.2f} s/step this run)")
        done = tc.max_seconds and now - t_run >= tc.max_seconds
        if now - t_ckpt >= tc.checkpoint_every_s or done or state["step"] >= tc.max_steps:
            state["train_seconds"] = round(state["train_seconds"] + now - t_ckpt, 1)
            t_ckpt = now
            save_checkpoint(run, model, opt, state, disc if disc is not None and disc[1].state else None)
            log(f"checkpoint at step {state['step']} ({state['train_seconds'] / 3600:.2f} h trained)")
        if done:
            break
    return state
