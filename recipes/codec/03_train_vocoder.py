"""Stage 03: train the mel codec's fast vocoder on the fitting set -> DATA/vocoder/ (resumable); --export ships it.

Every ``fit`` utterance of ``DATA/manifest.jsonl`` (the same ones the RVQ was fitted on; ``--natural NDATA`` adds
the natural corpus's rendered train split) is held in memory with its log-mel and that mel's RVQ reconstruction
through the artifact's codebooks (``--codec``, default ``codecs/mel22k``);
``audiopd.codec.vocoder_train`` trains on random 32-frame segments, checkpointing every ``--checkpoint-min`` minutes.
Rerun the same command to go on from the last checkpoint (``--hours`` bounds one run; a kill loses at most one
checkpoint interval). A new run directory starts from the weights the artifact ships (``fast.weights_file``, with
their step count), so training carries on across machines whose disks are wiped; ``--from-scratch`` opts out.
Run it in the background next to other work:
``OMP_NUM_THREADS=1 nohup nice -n 19 python recipes/codec/03_train_vocoder.py --data DATA --threads 1 &``.

``--targets teacher`` (the default) trains towards the ``hq`` teacher's rendering of each input mel, clean and
quantised (``Corpus.set_targets``); the renderings are made once, one thread, and cached as 16-bit WAVs in
``DATA/teacher/clean/`` and ``DATA/teacher/q<Q>-<token fingerprint>/`` (the quantised ones depend on the codebooks),
so a resumed run or a grown corpus renders only what is new. ``--targets natural`` trains towards the natural audio.

Losses follow the head (``--head``, default the artifact's): a ``linear`` head trains through its own iSTFT
waveform (``--wave-weight 1``) with the phase and complex losses; a ``harmonic`` head, whose phase is found by fast
Griffin-Lim at synthesis, trains its magnitude directly (``--spec-weight 1 --wave-weight 0``, no phase or complex
loss) and its F0 (``audiopd.codec.vocoder_train``); with ``--wave-weight 1`` it also trains on the waveform the
codec decodes (its magnitude with fast Griffin-Lim's phase), as the shipped weights' last steps did
(``run.sh``). Each flag overrides its default. The F0 targets are
``harmonic.f0_track`` of the clean targets, cached per utterance in ``DATA/teacher/f0-<targets>/``.

``--export`` writes the last checkpoint's weights into the artifact as ``fast.safetensors``, names them in its
``config.yaml`` (``fast.weights_file``; ``--phase-iters``, ``--phase-momentum`` and ``--sharpen`` set the decoding
keys of ``fast``) and rewrites ``SHA256SUMS``;
``--default-decoder fast`` also makes ``fast`` the codec's default (only once stage 04 shows it meets issue 22's bar).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import codec_common as cc  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
WEIGHTS = "fast.safetensors"


def export(run: Path, artifact: Path, default_decoder: str | None, fast: dict | None = None,
           smooth_frames: float | None = None) -> None:
    """Ship ``run``'s last checkpoint in ``artifact``; ``fast`` sets keys of its ``fast`` config (None = kept), as
    ``smooth_frames`` sets the decode-time blur over time (``MelCodecConfig.smooth_frames``)."""
    import yaml

    from audiopd.artifacts import write_checksums
    from audiopd.codec import load_codec

    state = json.loads((run / "state.json").read_text())
    cfg = yaml.safe_load((artifact / "config.yaml").read_text())
    shutil.copyfile(run / "model.safetensors", artifact / WEIGHTS)
    cfg["fast"] = {**cfg.get("fast", {}), "weights_file": WEIGHTS, "trained_steps": int(state["step"]),
                   "trained_hours": round(state["train_seconds"] / 3600, 2)}
    cfg["fast"].update({k: v for k, v in (fast or {}).items() if v is not None})
    if default_decoder:
        cfg["default_decoder"] = default_decoder
    if smooth_frames is not None:
        cfg["smooth_frames"] = float(smooth_frames)
    (artifact / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    write_checksums(artifact)
    codec = load_codec(artifact, decoder="fast")  # proves the artifact loads with the new weights
    print(f"exported step {state['step']} ({state['train_seconds'] / 3600:.2f} h) into {artifact}: decoders "
          f"{codec.decoders}, default {cfg['default_decoder']}")


def teacher_targets(data: Path, rows: list[dict], corpus, codec, log=print,
                    quantized: bool = True) -> tuple[list, list]:
    """The hq teacher's waveforms for every utterance's clean and quantised mel, from the cache or rendered now.
    ``quantized=False`` renders the clean ones only and returns them twice (for ``--quantized-p 0``)."""
    from audiopd.audio import read_audio, write_audio

    tag = f"q{codec.num_codebooks}-{codec.token_fingerprint[:12]}"
    out: dict[str, list] = {"clean": [], tag: []}
    made, t0 = 0, time.monotonic()
    for n, (row, mel, qmel) in enumerate(zip(rows, corpus.mel, corpus.qmel)):
        name = f"{cc.nc.voice_dir_name(row['voice'])}/{row['id']}.wav"
        for kind, m in (("clean", mel), (tag, qmel))[: 2 if quantized else 1]:
            path = data / "teacher" / kind / name
            if path.is_file():
                out[kind].append(read_audio(path, expect_rate=cc.SAMPLE_RATE)[0])
                continue
            y = np.clip(codec.vocode(m, "hq")[0], -1.0, 1.0)
            write_audio(path, y, cc.SAMPLE_RATE)
            out[kind].append(read_audio(path)[0])  # what the cache will give a resumed run, bit for bit
            made += 1
        if made and n % 100 == 99:
            log(f"teacher targets: {n + 1}/{len(rows)} utterances, {made} rendered in {time.monotonic() - t0:.0f} s")
    log(f"teacher targets: {len(rows)} utterances ({made} rendered now, the rest cached)")
    return out["clean"], out[tag] if quantized else out["clean"]


def f0_targets(cache: Path, rows: list[dict], corpus, cfg, log=print) -> list:
    """Each utterance's F0 track (``harmonic.f0_track`` of its clean target), from ``cache`` or computed now
    (Harvest costs ~1.5 s per utterance here, so a restarted run reads them back)."""
    from audiopd.codec.harmonic import f0_track

    out, made, t0 = [], 0, time.monotonic()
    for n, (row, target, mel) in enumerate(zip(rows, corpus.target, corpus.mel)):
        path = cache / cc.nc.voice_dir_name(row["voice"]) / f"{row['id']}.npy"
        if path.is_file():
            track = np.load(path)
        else:
            track = f0_track(target, sample_rate=cfg.sample_rate, hop=cfg.hop, frames=len(mel), n_fft=cfg.n_fft)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.stem}.tmp.npy")
            np.save(tmp, track)
            tmp.replace(path)
            made += 1
        out.append(track)
        if made and n % 100 == 99:
            log(f"F0 targets: {n + 1}/{len(rows)} utterances, {made} tracked in {time.monotonic() - t0:.0f} s")
    log(f"F0 targets: {len(rows)} utterances ({made} tracked now, the rest cached)")
    return out


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--codec", default=str(REPO / "codecs" / "mel22k"), help="the mel codec artifact")
        p.add_argument("--run", default=None, help="run directory (default DATA/vocoder)")
        p.add_argument("--hours", type=float, default=0.0, help="stop this run after this many hours (0 = never)")
        p.add_argument("--steps", type=int, default=1_000_000, help="stop at this total step count")
        p.add_argument("--checkpoint-min", type=float, default=5.0, help="minutes between checkpoints")
        p.add_argument("--batch", type=int, default=8)
        p.add_argument("--lr", type=float, default=5e-4)
        p.add_argument("--complex-weight", type=float, default=None,
                       help="compressed complex-spectrum L1 weight (default 1 with teacher targets and a linear "
                            "head, else 0)")
        p.add_argument("--spec-weight", type=float, default=None,
                       help="log-magnitude + spectral-convergence loss on the predicted spectrum itself "
                            "(default 1 for a harmonic head, else 0)")
        p.add_argument("--wave-weight", type=float, default=None,
                       help="weight of the losses on the waveform the codec decodes (with fast Griffin-Lim's phase "
                            "when the artifact sets phase_iters; 0 skips them; default 0 for a harmonic head, else 1)")
        p.add_argument("--phase-weight", type=float, default=None,
                       help="APNet's anti-wrapping phase losses on the predicted phase, which FGLA starts from "
                            "(default 0.3; 0 for a harmonic head, whose phase follows its F0)")
        p.add_argument("--head", choices=("linear", "harmonic"), default=None,
                       help="the fast vocoder's head (default: the artifact's); --export writes it into the artifact")
        p.add_argument("--quantized-p", type=float, default=0.5, help="share of segments fed RVQ-decoded mels")
        p.add_argument("--gan-from-step", type=int, default=0,
                       help="start the adversarial phase (discriminators) at this total step (default 0: never)")
        p.add_argument("--adv-weight", type=float, default=None,
                       help="adversarial loss weight in the GAN phase, mel L1 weighing 1 (default 1/45, HiFi-GAN's)")
        p.add_argument("--fm-weight", type=float, default=None,
                       help="feature-matching loss weight in the GAN phase (default 2/45, HiFi-GAN's)")
        p.add_argument("--targets", choices=("teacher", "natural"), default="teacher",
                       help="what to train towards: the hq teacher's rendering of each input mel, or the audio")
        p.add_argument("--natural", default=None, help="also train on this natural corpus's train split (its DATA)")
        p.add_argument("--max-utterances", type=int, default=0,
                       help="use N fitting utterances, spread evenly over the set (every voice keeps its share)")
        p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: a background job)")
        p.add_argument("--from-scratch", action="store_true",
                       help="a new run starts from random weights, not from the artifact's shipped fast weights")
        p.add_argument("--export", action="store_true", help="ship the last checkpoint in the artifact and exit")
        p.add_argument("--default-decoder", choices=("hq", "fast"), default=None, help="with --export")
        p.add_argument("--phase-iters", type=int, default=None,
                       help="with --export: fast Griffin-Lim iterations at synthesis (0 = the network's phase)")
        p.add_argument("--phase-momentum", type=float, default=None,
                       help="with --export: fast Griffin-Lim's momentum (alpha, default 0.99)")
        p.add_argument("--sharpen", type=float, default=None,
                       help="with --export: the decode-time postfilter's exponent at 0 Hz "
                            "(audiopd/codec/postfilter.py; 1 = off)")
        p.add_argument("--sharpen-high", type=float, default=None,
                       help="with --export: the postfilter's exponent from --sharpen-high-hz up, rising linearly "
                            "from --sharpen (0 = --sharpen everywhere)")
        p.add_argument("--sharpen-high-hz", type=float, default=None, help="with --export (default 4000)")
        p.add_argument("--smooth-frames", type=float, default=None,
                       help="with --export: the decode-time Gaussian over time on the token mel, sigma in frames "
                            "(0 = off; chosen by stage 08 on a voice's output)")
    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    data, artifact = Path(args.data), Path(args.codec)
    run = Path(args.run) if args.run else data / "vocoder"
    if args.export:
        export(run, artifact, args.default_decoder, {"phase_iters": args.phase_iters, "head": args.head,
                                                     "phase_momentum": args.phase_momentum,
                                                     "sharpen": args.sharpen, "sharpen_high": args.sharpen_high,
                                                     "sharpen_high_hz": args.sharpen_high_hz},
               args.smooth_frames)
        return 0
    import torch

    from audiopd.codec import load_codec
    from audiopd.codec.mel import replace_config
    from audiopd.codec.vocoder_train import Corpus, TrainConfig, train

    torch.set_num_threads(args.threads)
    codec = load_codec(artifact)
    rows = cc.fit_rows(data, args.natural)
    if 0 < args.max_utterances < len(rows):  # the manifest is grouped by voice: take every k-th row, not a prefix
        rows = [rows[i] for i in np.linspace(0, len(rows) - 1, args.max_utterances).round().astype(int)]
    if args.head:
        codec.cfg = replace_config(codec.cfg, fast=dataclasses.replace(codec.cfg.fast, head=args.head))
    corpus = Corpus([cc.load_audio(data, r) for r in rows], codec)
    if args.targets == "teacher":
        corpus.set_targets(*teacher_targets(data, rows, corpus, codec, log=lambda m: print(m, flush=True),
                                            quantized=args.quantized_p > 0))
    if codec.cfg.fast.head == "harmonic":  # its F0 target: the track of what it trains towards
        corpus.set_f0(f0_targets(data / "teacher" / f"f0-{args.targets}", rows, corpus, codec.cfg,
                                 log=lambda m: print(m, flush=True)))
    # Defaults by head: a harmonic head trains its magnitude directly (its phase comes from FGLA at synthesis).
    harmonic = codec.cfg.fast.head == "harmonic"

    def chosen(value: float | None, default: float) -> float:
        return value if value is not None else default

    phase_weight = chosen(args.phase_weight, 0.0 if harmonic else 0.3)
    spec_weight, wave_weight = chosen(args.spec_weight, float(harmonic)), chosen(args.wave_weight, float(not harmonic))
    complex_weight = chosen(args.complex_weight, float(args.targets == "teacher" and not harmonic))
    tc = TrainConfig(batch=args.batch, lr=args.lr, quantized_p=args.quantized_p, complex_weight=complex_weight,
                     spec_weight=spec_weight, wave_weight=wave_weight, phase_weight=phase_weight,
                     gan_from_step=args.gan_from_step,
                     **{k: v for k, v in (("adv_weight", args.adv_weight), ("fm_weight", args.fm_weight))
                        if v is not None},
                     max_steps=args.steps, max_seconds=args.hours * 3600.0,
                     checkpoint_every_s=args.checkpoint_min * 60.0)
    fast = codec.cfg.fast
    init = None if args.from_scratch or not fast.weights_file else (
        artifact / fast.weights_file, {"steps": fast.trained_steps, "train_seconds": fast.trained_hours * 3600})
    state = train(corpus, run, tc, log=lambda m: print(m, flush=True), init=init)
    print(json.dumps({k: v for k, v in state.items() if k != "history"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
