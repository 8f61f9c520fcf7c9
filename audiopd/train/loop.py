"""The training loop: AdamW, warm-up + cosine LR, grad clipping, jsonl log, checkpoints, exact resume.

Runs single-process on CPU by default and unchanged under ``torchrun --nproc_per_node=N`` (DDP when
WORLD_SIZE > 1: gloo on CPU, nccl on GPU; rank 0 logs and checkpoints).
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import yaml

from audiopd.config import to_dict
from audiopd.errors import ArtifactError
from audiopd.model.config import ModelConfig
from audiopd.model.voice import VoiceInfo, VoiceModel
from audiopd.train.checkpoint import initial_weights, latest_checkpoint, load_checkpoint, save_checkpoint
from audiopd.train.data import FrameBucketSampler, ShardDataset, collate
from audiopd.train.objective import LossConfig, VoiceObjective
from audiopd.train.validate import held_out_losses


@dataclass(frozen=True)
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    lr: float = 5e-4
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.98)
    warmup_steps: int = 500
    max_steps: int = 50000
    grad_clip: float = 1.0
    batch_frames: int = 3200  # padded frames per batch (B x T_max)
    max_utt_frames: int = 1600  # longer utterances are skipped
    log_every: int = 10
    ckpt_every: int = 500
    keep_checkpoints: int = 2
    # Held-out losses (train(..., val_shards=...)): every val_every steps and when the run stops, over a fixed
    # subset of at most val_frames frames (0 = all of them; audiopd.train.validate).
    val_every: int = 500
    val_frames: int = 60000
    seed: int = 0
    num_threads: int = 1
    device: str = "cpu"
    # The parts of VoiceModel that learn (``PARTS``); empty = all. A fine-tuning of the serial decoder alone
    # (``[serial]``, with the duration and masked loss weights at 0) leaves the encoder, the durations and the
    # masked model bit-identical, so parallel decoding gives exactly the audio it gave before.
    train_parts: tuple[str, ...] = ()

    def validate(self) -> None:
        if not re.fullmatch(r"cpu|cuda(:\d+)?", self.device):
            raise ArtifactError(f"device {self.device!r}: use cpu, cuda or cuda:N")
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ArtifactError(f"device {self.device!r}: this machine has no CUDA device (torch "
                                f"{torch.__version__}); train with device cpu")
        unknown = sorted(set(self.train_parts) - set(PARTS))
        if unknown:
            raise ArtifactError(f"train_parts: unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
        losses = {"duration": self.loss.duration_weight, "masked": self.loss.masked_weight,
                  "serial": self.loss.serial_weight}
        idle = [p for p in self.train_parts if losses.get(p, 1.0) <= 0]
        if idle:
            raise ArtifactError(f"train_parts names {', '.join(idle)} but its loss weight is 0: it would never learn")
        if self.train_parts and "conditioner" not in self.train_parts:
            # With the encoder frozen, a loss of a frozen decoder (or the duration loss) moves no weight: only cost.
            wasted = [k for k, w in losses.items() if w > 0 and k not in self.train_parts]
            if wasted:
                raise ArtifactError(f"loss part(s) {', '.join(wasted)} have weight > 0 but train nothing with "
                                    f"train_parts {list(self.train_parts)}: set their weights to 0")


# VoiceModel's trainable parts: the phoneme encoder with the duration predictor, the masked and the serial decoder.
PARTS = ("conditioner", "masked", "serial")


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up to ``lr``, then cosine decay to ``lr * min_lr_ratio`` at ``max_steps``."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(1, cfg.max_steps - cfg.warmup_steps)
    p = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p)))


def _num_symbols(cfg: ModelConfig, dataset: ShardDataset) -> int:
    """Symbol count from the text frontend when available (the runtime inventory), else from the data."""
    needed = dataset.max_phoneme_id() + 1
    try:
        from audiopd import text

        n = int(getattr(text, "NUM_SYMBOLS"))
        inv = getattr(text, "INVENTORY_VERSION", None)
        if inv is not None and str(inv) != dataset.meta.inventory_version:
            raise ArtifactError(
                f"shards use phoneme inventory {dataset.meta.inventory_version!r}, "
                f"the text frontend has {inv!r}: re-make the shards"
            )
    except (ImportError, AttributeError):
        n = needed
    if cfg.num_symbols:
        n = cfg.num_symbols
    if n < needed:
        raise ArtifactError(f"phoneme id {needed - 1} in the shards exceeds the inventory size {n}")
    return n


def _param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    # No decay on biases, norms and embeddings (standard practice; decaying embeddings of rare
    # codes pushes them to zero).
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:  # a frozen part (TrainConfig.train_parts)
            continue
        if p.ndim >= 2 and "embed" not in name and "speaker" not in name and "token" not in name:
            decay.append(p)
        else:
            no_decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _log(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def train(cfg: TrainConfig, shards: str | Path | list[str | Path], out: str | Path, *, resume: bool = False,
          max_minutes: float | None = None, max_steps: int | None = None,
          init_from: str | Path | None = None, map_speakers: bool = False,
          val_shards: str | Path | list[str | Path] | None = None) -> dict[str, Any]:
    """Train (or resume) into ``out``; returns a summary {step, last losses, stopped, val}.

    ``val_shards`` (the corpus's held-out ``test`` shards) adds ``{"event": "val", ...}`` records of the
    held-out losses to the log every ``val_every`` steps and at the stop; ``val`` is the last of them.

    ``init_from`` (a checkpoint, run or voice; see ``initial_weights``) starts a new run from those
    weights with a fresh optimizer and LR schedule: fine-tuning on new shards. A resumed run ignores it,
    since its own checkpoint already holds the fine-tuned weights. ``map_speakers`` lets it start from weights
    with another speaker table (``checkpoint.map_speakers``: a one-speaker voice grown to the corpus's table).
    """
    t_start = time.monotonic()
    cfg.validate()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = torch.device(cfg.device)
    if world > 1:
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    torch.set_num_threads(cfg.num_threads)
    out = Path(out)
    stop_step = cfg.max_steps if max_steps is None else max_steps
    try:
        dataset = ShardDataset(shards, max_frames=cfg.max_utt_frames)
        meta = dataset.meta
        val_set = None
        if val_shards is not None:
            val_set = ShardDataset(val_shards, max_frames=cfg.max_utt_frames)
            if not val_set.meta.compatible(meta):
                raise ArtifactError(f"held-out shards do not match the training shards ({val_set.meta} vs {meta})")
        if cfg.batch_frames < int(dataset.lengths.max()):
            raise ArtifactError(f"batch_frames {cfg.batch_frames} is below the longest kept utterance "
                                f"({int(dataset.lengths.max())} frames): raise it or lower max_utt_frames")
        mcfg = cfg.model.with_data(num_symbols=_num_symbols(cfg.model, dataset), num_codebooks=meta.num_codebooks,
                                   cardinality=meta.cardinality, num_speakers=len(meta.voices))
        info = VoiceInfo(codec=meta.codec, sample_rate=meta.sample_rate, frame_rate=meta.frame_rate,
                         num_codebooks=meta.num_codebooks, cardinality=meta.cardinality,
                         inventory_version=meta.inventory_version, voices=tuple(meta.voices))
        torch.manual_seed(cfg.seed)
        model = VoiceModel(mcfg, info).to(device)
        if cfg.train_parts:
            for name in PARTS:
                getattr(model, name).requires_grad_(name in cfg.train_parts)
        trainable = [p for p in model.parameters() if p.requires_grad]  # clipped each step; frozen parts are not
        objective = VoiceObjective(model, cfg.loss)
        opt = torch.optim.AdamW(_param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=cfg.betas)
        mask_gen = torch.Generator().manual_seed(cfg.seed * 1000 + rank)
        step, epoch, batch_pos = 0, 0, 0
        ck = latest_checkpoint(out) if resume else None
        if resume and ck is None and rank == 0:
            print(f"no checkpoint in {out}; starting from scratch", flush=True)
        init_note = None  # where a fine-tuning run's first weights came from (kept in every checkpoint)
        if ck is not None:
            state, rng = load_checkpoint(ck, model=model, optimizer=opt)
            init_note = state.get("init_from")
            if state["model"] != to_dict(mcfg):
                raise ArtifactError(f"{ck}: model config differs from the one in the training config")
            step, epoch, batch_pos = state["step"], state["epoch"], state["batch"]
            if "torch" in rng:
                torch.set_rng_state(rng["torch"])
            if f"mask_{rank}" in rng:
                mask_gen.set_state(rng[f"mask_{rank}"])
        elif rank == 0 and out.exists() and (out / "checkpoints" / "LATEST").exists():
            raise ArtifactError(f"{out} already holds a run; pass --resume or choose a new --out")
        if ck is None and init_from is not None:
            weights, init_note = initial_weights(init_from, to_dict(mcfg), info.voices, info.codec,
                                                 speaker_map=map_speakers)
            model.load_state_dict(weights)
        if rank == 0:
            out.mkdir(parents=True, exist_ok=True)
            (out / "config.yaml").write_text(yaml.safe_dump({**to_dict(cfg), "model": to_dict(mcfg)}, sort_keys=False))
            if ck is None and init_note is not None:
                _log(out / "log.jsonl", {"event": "init", "from": init_note})
        wrapped: torch.nn.Module = objective
        if world > 1:
            unused = min(cfg.loss.duration_weight, cfg.loss.masked_weight, cfg.loss.serial_weight) <= 0
            wrapped = torch.nn.parallel.DistributedDataParallel(objective, find_unused_parameters=unused)
        sampler = FrameBucketSampler(dataset.lengths, cfg.batch_frames, seed=cfg.seed, rank=rank, world_size=world)
        log_path = out / "log.jsonl"
        sums: dict[str, float] = {}
        count = 0
        last_saved = step if ck is not None else -1
        t_log = time.monotonic()
        stopped = "max_steps"
        losses: dict[str, torch.Tensor] = {}
        last_val: dict[str, Any] | None = None

        def validate() -> None:
            # Rank 0 only: the other ranks wait for it at the next gradient all-reduce.
            nonlocal last_val
            if val_set is None or rank != 0:
                return
            scores = held_out_losses(objective, val_set, batch_frames=cfg.batch_frames, val_frames=cfg.val_frames,
                                     device=device)
            last_val = {"event": "val", "step": step, **scores}
            _log(log_path, last_val)

        def checkpoint() -> None:
            rng = {"torch": torch.get_rng_state()}
            gens = [mask_gen.get_state()]
            if world > 1:  # every rank's mask RNG, so resume is exact on all ranks
                gathered: list[Any] = [None] * world
                dist.all_gather_object(gathered, gens[0])
                gens = gathered
            for r, g in enumerate(gens):
                rng[f"mask_{r}"] = g
            if rank == 0:
                save_checkpoint(out, step=step, model=model, optimizer=opt, rng=rng, keep=cfg.keep_checkpoints,
                                state={"epoch": epoch, "batch": batch_pos, "train": to_dict(cfg),
                                       "model": to_dict(mcfg), "info": to_dict(info),
                                       **({"init_from": init_note} if init_note else {})})

        model.train()
        while step < stop_step:
            sampler.set_epoch(epoch)
            batches = sampler.batches()
            while batch_pos < len(batches) and step < stop_step:
                batch = collate([dataset[i] for i in batches[batch_pos]]).to(device)
                lr = lr_at(step, cfg)
                for g in opt.param_groups:
                    g["lr"] = lr
                losses = wrapped(batch, mask_gen)
                opt.zero_grad(set_to_none=True)
                losses["loss"].backward()
                gnorm = torch.nn.utils.clip_grad_norm_(trainable, cfg.grad_clip)
                opt.step()
                step += 1
                batch_pos += 1
                for k, v in losses.items():
                    sums[k] = sums.get(k, 0.0) + float(v.detach())
                sums["grad_norm"] = sums.get("grad_norm", 0.0) + float(gnorm)
                count += 1
                if step % cfg.log_every == 0 and rank == 0:
                    now = time.monotonic()
                    rec = {"step": step, "epoch": epoch, "lr": lr, **{k: v / count for k, v in sums.items()},
                           "sec_per_step": (now - t_log) / count}
                    _log(log_path, rec)
                    sums, count, t_log = {}, 0, now
                if step % cfg.ckpt_every == 0:
                    checkpoint()
                    last_saved = step
                if cfg.val_every > 0 and step % cfg.val_every == 0:
                    validate()
                over = max_minutes is not None and (time.monotonic() - t_start) / 60 >= max_minutes
                if world > 1:  # all ranks must stop on the same step
                    flag = torch.tensor([float(over)], device=device)
                    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                    over = bool(flag.item())
                if over:
                    stopped = "max_minutes"
                    break
            if stopped == "max_minutes":
                break
            if batch_pos >= len(batches):
                epoch, batch_pos = epoch + 1, 0
        if last_saved != step:
            checkpoint()
        if last_val is None or last_val["step"] != step:
            validate()
        if rank == 0:
            _log(log_path, {"event": "stop", "reason": stopped, "step": step,
                            "minutes": (time.monotonic() - t_start) / 60})
        return {"step": step, "epoch": epoch, "stopped": stopped,
                "last": {k: float(v.detach()) for k, v in losses.items()}, "val": last_val}
    finally:
        if world > 1 and dist.is_initialized():
            dist.destroy_process_group()


def model_config_of(run_dir: str | Path) -> ModelConfig:
    """The resolved model config of a run (for tooling)."""
    from audiopd.config import from_dict

    data = yaml.safe_load((Path(run_dir) / "config.yaml").read_text())
    return from_dict(ModelConfig, data["model"])


__all__ = ["TrainConfig", "lr_at", "model_config_of", "train"]
