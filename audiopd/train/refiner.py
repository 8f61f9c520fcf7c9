"""Train a voice's mel refiner (``audiopd.model.refiner``) on its own ground-truth-aligned predictions; ship it into
the voice's directory when the dev split's L1 improves.

    python -m audiopd.train.refiner --voice voices/natural --tokens DATA/tokens/mel22k [--steps 12000] [--threads 2]

Pairs: for every utterance of the token shards (``train-*`` to learn, ``dev-*`` to judge), the teacher's durations
and level 0 go in, the voice's fine passes (the facade's settings, one seed per utterance) fill levels 1..Q-1, and
the codec's token mel of that grid is the input; the token mel of the teacher's own grid is the target. A refiner
already in the voice directory is where training resumes (its weights, whatever voice weights it learnt on); the
result replaces it only if its dev L1 is lower (``--force`` ships regardless), and records what it measured in
``refiner.yaml``'s ``training``. The voice's speakers map to the shards' by their recorded teachers.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from audiopd.errors import ArtifactError, AudiopdError
from audiopd.model.refiner import (
    REFINER_CONFIG, REFINER_WEIGHTS, MelRefiner, RefinerConfig, load_refiner, save_refiner,
)

Pair = tuple[np.ndarray, np.ndarray, int]  # (input log-mel [T, n_mels], target log-mel, speaker index)


def gta_pairs(tts, shard_paths: Sequence[Path], *, per_speaker: int = 0, seed: int = 0,
              log: Callable[[str], None] = print) -> list[Pair]:
    """Ground-truth-aligned pairs of ``tts``'s voice from ``shard_paths`` (``per_speaker`` 0: every utterance)."""
    from audiopd.eval.oracle import decode_system
    from audiopd.train.shards import Shard

    info, codec = tts.model.info, tts.codec
    if not hasattr(codec, "decode_mel"):
        raise ArtifactError(f"codec {codec.name!r} has no token mel: a mel refiner needs a mel codec")
    counts = dict.fromkeys(range(len(info.voices)), 0)
    pairs: list[Pair] = []
    t0 = time.perf_counter()
    for path in shard_paths:
        shard = Shard(path)
        table = list(shard.meta.voices) or list(info.voices)
        for i in range(len(shard)):
            u = shard.utterance(i)
            sp = info.find(table[u.speaker]) if u.speaker < len(table) else None
            if sp is None or (per_speaker and counts[sp] >= per_speaker):
                continue
            counts[sp] += 1
            pred = decode_system("fine", tts, u, sp, seed + len(pairs))
            pairs.append((codec.decode_mel(pred), codec.decode_mel(np.asarray(u.codes)), sp))
    if not pairs:
        raise ArtifactError(f"no utterance of the voice's speakers ({', '.join(map(info.teacher, info.voices))}) in "
                            f"{', '.join(str(p) for p in shard_paths)}")
    log(f"{len(pairs)} pairs ({', '.join(f'{info.voices[s]} {n}' for s, n in counts.items())}) in "
        f"{time.perf_counter() - t0:.0f} s")
    return pairs


def mean_l1(pairs: Sequence[Pair], transform: Callable[[np.ndarray, int], np.ndarray]) -> float:
    """Frame-weighted mean |transform(input) - target| over ``pairs`` (nats of log-mel)."""
    total = count = 0.0
    for x, y, sp in pairs:
        total += float(np.abs(transform(x, sp) - y).sum())
        count += y.size
    return total / max(count, 1.0)


def crops(pairs: Sequence[Pair], batch: int, frames: int, rng: np.random.Generator) -> tuple[torch.Tensor, ...]:
    """A batch of ``frames``-long windows at random places of random pairs (short ones padded by their edges)."""
    xs, ys, ss = [], [], []
    for k in rng.integers(0, len(pairs), batch):
        x, y, sp = pairs[int(k)]
        s0 = int(rng.integers(0, max(1, len(x) - frames + 1)))
        xw, yw = x[s0:s0 + frames], y[s0:s0 + frames]
        if len(xw) < frames:
            pad = ((0, frames - len(xw)), (0, 0))
            xw, yw = np.pad(xw, pad, mode="edge"), np.pad(yw, pad, mode="edge")
        xs.append(xw)
        ys.append(yw)
        ss.append(sp)
    return (torch.from_numpy(np.stack(xs)).float(), torch.from_numpy(np.stack(ys)).float(),
            torch.tensor(ss, dtype=torch.long))


def train(refiner: MelRefiner, pairs: Sequence[Pair], *, steps: int, batch: int = 16, frames: int = 128,
          lr: float = 1e-3, seed: int = 0, max_minutes: float = 0.0, log: Callable[[str], None] = print) -> int:
    """AdamW on the L1 loss, ``lr`` on a cosine to 5% over ``steps``; stops early after ``max_minutes`` (0: no
    limit). Returns the steps taken."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(refiner.parameters(), lr=lr, weight_decay=1e-4)
    refiner.train()
    t0 = time.perf_counter()
    step = 0
    while step < steps:
        if max_minutes and time.perf_counter() - t0 > max_minutes * 60:
            log(f"time limit: stopped at step {step} of {steps}")
            break
        for g in opt.param_groups:
            g["lr"] = lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        x, y, s = crops(pairs, batch, frames, rng)
        loss = (refiner(x, s) - y).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 500 == 0:
            log(f"step {step}: train L1 {loss.item():.4f} ({time.perf_counter() - t0:.0f} s)")
    refiner.eval()
    return step


def with_speakers(refiner: MelRefiner, voices: tuple[str, ...]) -> MelRefiner:
    """``refiner`` for another speaker table (a voice that grew a speaker): its bias rows re-indexed by speaker name
    with ``audiopd.train.checkpoint.map_speakers``, the voice's own re-indexing (a new speaker starts from the mean
    row); everything else is shared by all speakers and kept."""
    from audiopd.train.checkpoint import map_speakers

    voices = tuple(voices)
    if voices == tuple(refiner.cfg.voices):
        return refiner
    state, _ = map_speakers(refiner.state_dict(), tuple(refiner.cfg.voices), (), voices)
    out = MelRefiner(dataclasses.replace(refiner.cfg, voices=voices))
    out.load_state_dict(state)
    return out.eval()


def init_refiner(voice_dir: Path, voices: tuple[str, ...]) -> MelRefiner:
    """The refiner of ``voice_dir`` as a starting point (``--init-from``): checksummed, learnt on any weights
    (``load_refiner`` without ``own_weights``), its speaker rows mapped onto ``voices`` (``with_speakers``: a
    speaker it never heard starts from their mean)."""
    from audiopd.artifacts import read_checksums, verify_checksums

    if not (voice_dir / REFINER_CONFIG).is_file():
        raise ArtifactError(f"--init-from {voice_dir}: no {REFINER_CONFIG} there")
    verify_checksums(voice_dir)
    source = load_refiner(voice_dir, voices=None, sums=read_checksums(voice_dir), own_weights=False)
    return with_speakers(source, voices)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audiopd.train.refiner", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", required=True, help="the voice directory to train for and write into")
    ap.add_argument("--tokens", required=True, help="token shards of the voice's corpus (train-* and dev-*)")
    ap.add_argument("--steps", type=int, default=12000, help="training steps (cosine schedule over them)")
    ap.add_argument("--max-minutes", type=float, default=0.0, help="stop early after this long (0: no limit)")
    ap.add_argument("--per-speaker", type=int, default=0, help="train pairs per speaker (0: every utterance)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--dim", type=int, default=192, help="width of a new refiner (a resumed one keeps its own)")
    ap.add_argument("--layers", type=int, default=4, help="residual layers of a new refiner")
    ap.add_argument("--kernel", type=int, default=5, help="kernel size (frames) of a new refiner")
    ap.add_argument("--fresh", action="store_true", help="start from scratch even where a refiner ships")
    ap.add_argument("--init-from", default=None, metavar="VOICE_DIR",
                    help="start from the refiner shipped in this voice directory (the voice a retrained one replaces; "
                         "its speakers must match), where --voice has none of its own")
    ap.add_argument("--force", action="store_true", help="ship even if the dev L1 did not improve")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        return run(args)
    except AudiopdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    import dataclasses

    import audiopd
    from audiopd import artifacts
    from audiopd.codec.mel import smooth_time
    from audiopd.model.voice import load_voice
    from audiopd.train.shards import find_shards

    if args.steps < 1 or args.batch < 1:
        raise ArtifactError(f"--steps and --batch must be >= 1, got {args.steps}, {args.batch}")
    torch.set_num_threads(max(1, args.threads))
    voice_dir = Path(args.voice)
    model = load_voice(voice_dir)
    shipped = model.refiner
    model.attach_refiner(None)  # pairs are the voice's raw predictions
    tts = audiopd.load(model)
    shards = find_shards(Path(args.tokens)) if Path(args.tokens).is_dir() else []
    train_paths = [p for p in shards if p.name.startswith("train-")]
    dev_paths = [p for p in shards if p.name.startswith("dev-")]
    if not train_paths or not dev_paths:
        raise ArtifactError(f"{args.tokens}: need train-*.safetensors and dev-*.safetensors shards")
    pairs = gta_pairs(tts, train_paths, per_speaker=args.per_speaker, seed=args.seed)
    dev = gta_pairs(tts, dev_paths, seed=10**6 + args.seed)
    sigma = float(getattr(tts.codec.cfg, "smooth_frames", 0.0))
    before = {"identity": mean_l1(dev, lambda x, sp: x),
              f"codec blur {sigma:g}": mean_l1(dev, lambda x, sp: smooth_time(x, sigma))}
    voices = tuple(model.info.voices)
    if shipped is not None and not args.fresh:
        refiner, init = shipped, f"the refiner in {voice_dir} ({shipped.cfg.training.get('steps', '?')} steps)"
        before["shipped refiner"] = mean_l1(dev, refiner.refine)
    elif args.init_from and not args.fresh:
        refiner = init_refiner(Path(args.init_from), voices)
        shipped = refiner  # its step count carries on
        init = f"the refiner of {args.init_from} ({refiner.cfg.training.get('steps', '?')} steps, other voice weights)"
        before["initial refiner"] = mean_l1(dev, refiner.refine)
    else:
        cfg = RefinerConfig(n_mels=int(dev[0][0].shape[1]), dim=args.dim, layers=args.layers, kernel=args.kernel,
                            voices=voices)
        refiner, init = MelRefiner(cfg), "fresh"
    for k, v in before.items():
        print(f"dev L1 {k}: {v:.4f}")
    start = copy.deepcopy(refiner.state_dict()) if "initial refiner" in before else None
    took = train(refiner, pairs, steps=args.steps, batch=args.batch, lr=args.lr, seed=args.seed,
                 max_minutes=args.max_minutes)
    after = mean_l1(dev, refiner.refine)
    print(f"dev L1 after {took} steps: {after:.4f}")
    if start is not None and after >= before["initial refiner"]:
        # A retrained voice has no refiner of its own: the initial one, better on its dev split, ships as it was.
        print(f"dev L1 {after:.4f} is not below the initial refiner's {before['initial refiner']:.4f}: "
              "the initial weights ship")
        refiner.load_state_dict(start)
        after, took = before["initial refiner"], 0
    best_before = before.get("shipped refiner", math.inf)
    if after >= best_before and not args.force:
        print(f"not shipped: dev L1 {after:.4f} is not below the shipped refiner's {best_before:.4f}")
        return 1
    prior = int(shipped.cfg.training.get("steps", 0)) if shipped is not None and not args.fresh else 0
    refiner.cfg = dataclasses.replace(
        refiner.cfg, voices=voices, voice_sha256=artifacts.sha256_file(voice_dir / "model.safetensors"),
        training={"steps": prior + took, "this_run_steps": took, "init": init, "train_pairs": len(pairs),
                  "dev_pairs": len(dev), "batch": args.batch, "lr": args.lr, "seed": args.seed,
                  "dev_l1": {**{k: round(v, 4) for k, v in before.items()}, "after": round(after, 4)}})
    save_refiner(refiner, voice_dir)
    artifacts.write_checksums(voice_dir)
    load_voice(voice_dir)  # what ships must load
    print(f"shipped {voice_dir / REFINER_WEIGHTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
