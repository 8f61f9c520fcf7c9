"""Training checkpoints: safetensors weights + safetensors optimizer/RNG state + a JSON state file.

No pickles anywhere (a checkpoint directory can be inspected or shipped without running code).
Layout::

    RUN_DIR/checkpoints/step_00001000/model.safetensors
                                     /optimizer.safetensors  (Adam moments, RNG states; param_groups in metadata)
                                     /state.json             (step, epoch, batch, configs, data metadata)
    RUN_DIR/checkpoints/LATEST       (name of the newest complete checkpoint)

A checkpoint directory is written under a temporary name and renamed, and LATEST is updated last,
so an interrupted save never leaves a half-written "latest" checkpoint.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from audiopd.config import to_dict
from audiopd.errors import ArtifactError
from audiopd.model.voice import load_voice

CHECKPOINT_FORMAT_VERSION = 1


def _optimizer_tensors(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], str]:
    sd = opt.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for idx, st in sd["state"].items():
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                tensors[f"state.{idx}.{k}"] = v.detach().cpu().contiguous()
            else:
                scalars.setdefault(str(idx), {})[k] = v
    meta = json.dumps({"param_groups": sd["param_groups"], "scalars": scalars})
    return tensors, meta


def _optimizer_state(tensors: dict[str, torch.Tensor], meta: str) -> dict[str, Any]:
    info = json.loads(meta)
    state: dict[int, dict[str, Any]] = {}
    for name, v in tensors.items():
        if not name.startswith("state."):
            continue
        _, idx, key = name.split(".", 2)
        state.setdefault(int(idx), {})[key] = v
    for idx, extra in info["scalars"].items():
        state.setdefault(int(idx), {}).update(extra)
    return {"state": state, "param_groups": info["param_groups"]}


def save_checkpoint(run_dir: Path, *, step: int, model: nn.Module, optimizer: torch.optim.Optimizer,
                    rng: dict[str, torch.Tensor], state: dict[str, Any], keep: int = 2) -> Path:
    ckdir = Path(run_dir) / "checkpoints"
    ckdir.mkdir(parents=True, exist_ok=True)
    name = f"step_{step:08d}"
    final = ckdir / name
    tmp = ckdir / f".{name}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    weights = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(weights, str(tmp / "model.safetensors"), metadata={"format_version": str(CHECKPOINT_FORMAT_VERSION)})
    tensors, meta = _optimizer_tensors(optimizer)
    for k, v in rng.items():
        tensors[f"rng.{k}"] = v.detach().cpu().contiguous()
    save_file(tensors, str(tmp / "optimizer.safetensors"), metadata={"optimizer": meta})
    full_state = {"format_version": CHECKPOINT_FORMAT_VERSION, "step": step, **state}
    (tmp / "state.json").write_text(json.dumps(full_state, indent=1))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    latest = ckdir / "LATEST"
    ltmp = ckdir / ".LATEST.tmp"
    ltmp.write_text(name + "\n")
    os.replace(ltmp, latest)
    old = sorted(p for p in ckdir.glob("step_*") if p.is_dir() and p.name != name)
    for p in old[: max(0, len(old) - (keep - 1))]:
        shutil.rmtree(p, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: Path) -> Path | None:
    ckdir = Path(run_dir) / "checkpoints"
    latest = ckdir / "LATEST"
    if not latest.is_file():
        return None
    path = ckdir / latest.read_text().strip()
    if not (path / "state.json").is_file():
        raise ArtifactError(f"{latest} names {path.name}, which is missing or incomplete")
    return path


def checkpoints_up_to(checkpoint: Path, n: int) -> list[Path]:
    """The ``n`` complete checkpoints of ``checkpoint``'s run that end with it, oldest first (ArtifactError when the
    run keeps fewer)."""
    checkpoint = Path(checkpoint)
    if n < 1:
        raise ArtifactError(f"the number of checkpoints to average must be >= 1, got {n}")
    done = sorted(p for p in checkpoint.parent.glob("step_*")
                  if (p / "state.json").is_file() and p.name <= checkpoint.name)
    if len(done) < n:
        raise ArtifactError(f"{checkpoint.parent} keeps {len(done)} checkpoint(s) up to {checkpoint.name}, "
                            f"fewer than the {n} to average")
    return done[-n:]


def average_weights(checkpoints: list[Path]) -> dict[str, torch.Tensor]:
    """The element-wise mean of the checkpoints' model weights (floating tensors; others from the last one).

    Averaging the last few checkpoints of a run, as Vaswani et al. 2017 (sec. 6.1) did for the Transformer,
    smooths the noise of the last steps' updates; the checkpoints must be of one model (same names and shapes)."""
    if not checkpoints:
        raise ArtifactError("no checkpoints to average")
    total: dict[str, torch.Tensor] = {}
    for path in checkpoints:
        weights = load_file(str(Path(path) / "model.safetensors"))
        if total and (weights.keys() != total.keys()
                      or any(weights[k].shape != total[k].shape for k in total)):
            raise ArtifactError(f"{path}: its weights do not match {checkpoints[0]}'s (names or shapes)")
        for k, v in weights.items():
            if v.is_floating_point():
                total[k] = total[k] + v.double() if k in total else v.double()
            else:
                total[k] = v
    return {k: (v / len(checkpoints)).float() if v.is_floating_point() else v for k, v in total.items()}


def read_state(path: Path) -> dict[str, Any]:
    state = json.loads((Path(path) / "state.json").read_text())
    if state.get("format_version") != CHECKPOINT_FORMAT_VERSION:
        raise ArtifactError(f"{path}: checkpoint format_version {state.get('format_version')!r} not supported")
    return state


def load_checkpoint(path: Path, *, model: nn.Module, optimizer: torch.optim.Optimizer | None = None
                    ) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Restore weights (and optimizer) in place; returns (state.json contents, RNG state tensors)."""
    path = Path(path)
    state = read_state(path)
    model.load_state_dict(load_file(str(path / "model.safetensors")))
    rng: dict[str, torch.Tensor] = {}
    if optimizer is not None:
        from safetensors import safe_open

        with safe_open(str(path / "optimizer.safetensors"), framework="pt") as f:
            meta = (f.metadata() or {})["optimizer"]
            tensors = {k: f.get_tensor(k) for k in f.keys()}
        optimizer.load_state_dict(_optimizer_state(tensors, meta))
        rng = {k[4:]: v for k, v in tensors.items() if k.startswith("rng.")}
    return state, rng


def initial_weights(source: str | Path, model: dict[str, Any], voices: tuple[str, ...], codec: str, *,
                    speaker_map: bool = False) -> tuple[dict[str, torch.Tensor], str]:
    """Weights to start a new run from (fine-tuning), and a description of where they came from.

    ``source`` is a checkpoint directory, a run directory (its latest checkpoint) or an exported voice
    (``voices/<name>`` or a directory). Its model config must equal ``model`` (the new run's, as a dict),
    and its speakers and codec must be the new shards', in the same order: a speaker embedding or output
    head trained for other ids or other tokens would start the run from noise that looks like a voice.
    ``speaker_map`` lifts the speaker rule (never the codec's): the speaker tables are re-indexed by
    ``map_speakers``, so a one-speaker voice can start a run on a larger speaker table.
    """
    src = Path(source)
    label = f"checkpoint {src}"
    if (src / "checkpoints").is_dir():
        ck = latest_checkpoint(src)
        if ck is None:
            raise ArtifactError(f"{src} is a run directory without a complete checkpoint")
        src, label = ck, f"run {source}, checkpoint {ck.name}"
    if (src / "state.json").is_file():
        state = read_state(src)
        theirs, info = state.get("model"), state.get("info") or {}
        their_voices, their_codec = tuple(info.get("voices") or ()), info.get("codec", "")
        their_teachers = tuple(info.get("teachers") or ())
        weights = load_file(str(src / "model.safetensors"))
        what = f"{label} (step {state['step']})"
    else:
        voice = load_voice(source)  # by name or directory; verifies checksums and version
        theirs, their_voices, their_codec = to_dict(voice.cfg), tuple(voice.info.voices), voice.info.codec
        their_teachers = tuple(voice.info.teachers)
        weights = {k: v.float() if v.is_floating_point() else v for k, v in voice.state_dict().items()}
        step = voice.training_record.get("step")
        what = f"voice {source}" + (f" (step {step})" if step is not None else "")
    theirs = dict(theirs or {})
    if speaker_map and their_voices != tuple(voices):
        # Only the speaker tables depend on the number of speakers (export.keep_speakers).
        theirs["num_speakers"] = model.get("num_speakers")
    if theirs != model:
        diff = sorted(k for k in set(model) | set(theirs) if model.get(k) != theirs.get(k))
        raise ArtifactError(f"{what}: model config differs from the new run's ({', '.join(diff)})")
    if their_codec != codec or (their_voices != tuple(voices) and not speaker_map):
        raise ArtifactError(f"{what}: trained on codec {their_codec!r} with speakers {list(their_voices)}; "
                            f"the shards have codec {codec!r} with speakers {list(voices)}")
    if their_voices != tuple(voices):
        weights, note = map_speakers(weights, their_voices, their_teachers, tuple(voices))
        what += f"; speakers {note}"
    return weights, what


def speaker_tables(weights: dict[str, torch.Tensor], num_speakers: int) -> list[str]:
    """The names of a voice's speaker embedding tables (a ``*speaker.weight`` with one row per speaker): the only
    weights that depend on the number of speakers."""
    return [k for k, v in weights.items()
            if k.endswith("speaker.weight") and v.ndim == 2 and v.shape[0] == num_speakers]


def map_speakers(weights: dict[str, torch.Tensor], their_voices: tuple[str, ...], their_teachers: tuple[str, ...],
                 voices: tuple[str, ...]) -> tuple[dict[str, torch.Tensor], str]:
    """Speaker tables re-indexed to a new run's ``voices`` (a grown or reordered speaker table).

    A new speaker found among the source's (by name or by teacher: ``piper:joe`` is voices/joe's ``joe``) keeps
    its trained row; one the source never heard starts from the mean of the trained rows, a voice the model
    already speaks well, rather than from noise. Everything else in the model is shared by all speakers.
    """
    n = len(their_voices)
    tables = speaker_tables(weights, n)
    if not tables or n == 0:
        raise ArtifactError("map_speakers: the source weights hold no speaker table")
    known = {name: i for i, name in enumerate(their_voices)}
    known.update({t: i for i, t in enumerate(their_teachers) if t})
    src = [known.get(v, known.get(v.rpartition(":")[2], -1)) for v in voices]
    out = dict(weights)
    for k in tables:
        old = weights[k]
        mean = old.mean(dim=0)
        out[k] = torch.stack([old[i] if i >= 0 else mean for i in src]).contiguous()
    kept = [v for v, i in zip(voices, src) if i >= 0]
    return out, f"kept {', '.join(kept) or 'none'}; others from their mean"
