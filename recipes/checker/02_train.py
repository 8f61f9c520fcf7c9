"""Stage 02: train the phone recogniser with CTC on stage 01's shards -> DATA/ckpt/ (resumable).

Checkpoints (model + AdamW moments, safetensors; the step and schedule in JSON) every ``--save-min`` minutes and
at the end; rerunning continues from the last one. Clips whose id hashes into the last 3% are held out and
scored by greedy phone error rate at every save.

    python recipes/checker/02_train.py --data DATA --minutes 45 --threads 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from pathlib import Path

import numpy as np
import torch


def load_shards(root: Path, exclude: tuple[str, ...] = ()):
    """(train, held-out) (log-mel, labels) pairs; ``exclude``: source kinds to leave out (e.g. "voice")."""
    train, held = [], []
    for path in sorted((root / "shards").glob("*.npz")):  # NNNN.npz and corpus-NNNN.npz (stage 01)
        if ".tmp" in path.name:
            continue
        with np.load(path) as z:  # each z[key] access re-reads the array: read each once
            feats, labels, ids, sources = z["feats"], z["labels"], z["ids"], z["sources"]
            fo = np.concatenate([[0], np.cumsum(z["feat_lengths"])])
            lo = np.concatenate([[0], np.cumsum(z["label_lengths"])])
        for k, uid in enumerate(ids):
            item = (feats[fo[k]:fo[k + 1]], labels[lo[k]:lo[k + 1]].astype(np.int64))
            if len(item[1]) == 0 or (len(item[0]) + 1) // 2 < len(item[1]):
                continue
            if str(sources[k]).split(":")[0] in exclude:
                continue
            (held if hashlib.sha1(str(uid).encode()).digest()[0] < 8 else train).append(item)
    return train, held


def batches(items, frames_per_batch: int, rng: np.random.Generator):
    order = sorted(range(len(items)), key=lambda i: len(items[i][0]) + rng.integers(0, 40))
    out, cur, longest = [], [], 0
    for i in order:
        n = len(items[i][0])
        if cur and max(longest, n) * (len(cur) + 1) > frames_per_batch:
            out.append(cur)
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, n)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def collate(items, idx, augment: bool, rng: np.random.Generator):
    lens = [len(items[i][0]) for i in idx]
    feats = torch.zeros(len(idx), max(lens), items[idx[0]][0].shape[1])
    for b, i in enumerate(idx):
        f = torch.from_numpy(items[i][0].astype(np.float32))
        if augment:  # SpecAugment-style masks (Park et al. 2019), light: the recogniser must stay exact
            f = f.clone()
            for _ in range(2):
                w = int(rng.integers(0, 10))
                s = int(rng.integers(0, max(1, f.shape[1] - w)))
                f[:, s:s + w] = 0.0
            for _ in range(max(1, len(f) // 150)):
                w = int(rng.integers(0, 6))
                s = int(rng.integers(0, max(1, len(f) - w)))
                f[s:s + w] = 0.0
            f = f + float(rng.normal(0, 0.5))  # level shift survives the mean normalisation only partly
        feats[b, : len(f)] = f
    labels = torch.from_numpy(np.concatenate([items[i][1] for i in idx]))
    return feats, torch.tensor(lens), labels, torch.tensor([len(items[i][1]) for i in idx])


def per_of(model, held, limit: int = 300) -> float:
    from audiopd.checker.ctc import phone_errors

    model.eval()
    errors = total = 0
    with torch.inference_mode():
        for feats, lab in held[:limit]:
            errors += phone_errors(model(torch.from_numpy(feats.astype(np.float32))[None])[0].numpy(), lab)
            total += len(lab)
    model.train()
    return errors / max(1, total)


def save(ckpt: Path, model, opt, state: dict) -> None:
    from safetensors.torch import save_file

    ckpt.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v.detach().contiguous() for k, v in model.state_dict().items()}
    for i, p in enumerate(model.parameters()):
        st = opt.state.get(p, {})
        for key in ("exp_avg", "exp_avg_sq"):
            if key in st:
                tensors[f"opt.{i}.{key}"] = st[key].contiguous()
    save_file(tensors, str(ckpt / "last.tmp.safetensors"))
    (ckpt / "last.tmp.safetensors").rename(ckpt / "last.safetensors")
    (ckpt / "state.json").write_text(json.dumps(state, indent=1))


def restore(ckpt: Path, model, opt) -> dict:
    from safetensors.torch import load_file

    if not (ckpt / "state.json").is_file():
        return {"step": 0, "epoch": 0, "log": []}
    t = load_file(str(ckpt / "last.safetensors"))
    model.load_state_dict({k[6:]: v for k, v in t.items() if k.startswith("model.")})
    state = json.loads((ckpt / "state.json").read_text())
    for i, p in enumerate(model.parameters()):
        if f"opt.{i}.exp_avg" in t:
            opt.state[p] = {"step": torch.tensor(float(state["step"])), "exp_avg": t[f"opt.{i}.exp_avg"],
                            "exp_avg_sq": t[f"opt.{i}.exp_avg_sq"]}
    return state


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--minutes", type=float, default=30.0, help="train this long in this run, then save and stop")
    p.add_argument("--total-steps", type=int, default=12000, help="length of the learning-rate schedule")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--frames", type=int, default=12000, help="padded feature frames per batch")
    p.add_argument("--save-min", type=float, default=4.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--exclude-sources", default="voice",
                   help="comma-separated source kinds left out of training (default: voice; '' keeps all)")
    p.add_argument("--ckpt", default="ckpt", help="checkpoint directory under DATA (default: ckpt)")
    p.add_argument("--init-from", default=None, metavar="ARTIFACT",
                   help="start a new run from a shipped recogniser's weights (e.g. checkers/phones16k) instead of "
                        "at random; a run with a checkpoint resumes from it instead")
    p.add_argument("--warmup", type=int, default=500, help="learning-rate warm-up steps")
    args = p.parse_args(argv)
    from audiopd.checker.phones_torch import PhoneRecognizer

    torch.set_num_threads(args.threads)
    root = Path(args.data)
    exclude = tuple(x for x in args.exclude_sources.split(",") if x)
    train, held = load_shards(root, exclude)
    hours = sum(len(f) for f, _ in train) / 100 / 3600
    print(f"{len(train)} training clips ({hours:.2f} h), {len(held)} held out", flush=True)
    torch.manual_seed(0)
    model = PhoneRecognizer()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    ckpt = root / args.ckpt
    state = restore(ckpt, model, opt)
    if state["step"] == 0 and args.init_from:
        from audiopd.checker.phones_torch import load_recognizer

        model.load_state_dict(load_recognizer(args.init_from).state_dict())
        state["init_from"] = str(args.init_from)
        print(f"initialised from {args.init_from}: held-out phone error rate {per_of(model, held):.4f}", flush=True)
    state["exclude_sources"] = list(exclude)
    ctc = torch.nn.CTCLoss(blank=0, zero_infinity=True)
    rng = np.random.default_rng(state["step"])
    start = last_save = time.monotonic()
    model.train()
    losses: list[float] = []
    while time.monotonic() - start < args.minutes * 60 and state["step"] < args.total_steps:
        for idx in batches(train, args.frames, rng):
            step = state["step"]
            warm = min(1.0, (step + 1) / max(1, args.warmup))
            lr = args.lr * warm * 0.5 * (1 + math.cos(math.pi * min(1.0, step / args.total_steps)))
            for g in opt.param_groups:
                g["lr"] = lr
            feats, flen, labels, llen = collate(train, idx, True, rng)
            lp = model(feats)
            loss = ctc(lp.transpose(0, 1), labels, PhoneRecognizer.out_lengths(flen), llen)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
            state["step"] += 1
            done = time.monotonic() - start >= args.minutes * 60 or state["step"] >= args.total_steps
            if done or time.monotonic() - last_save >= args.save_min * 60:
                per = per_of(model, held)
                state["log"].append({"step": state["step"], "loss": float(np.mean(losses[-200:])), "held_per": per,
                                     "time": time.strftime("%H:%M:%S")})
                save(ckpt, model, opt, state)
                last_save = time.monotonic()
                print(json.dumps(state["log"][-1]), flush=True)
            if done:
                break
        state["epoch"] += 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
