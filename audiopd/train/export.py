"""Export a training checkpoint as a shippable voice artifact (config.yaml + model.safetensors + SHA256SUMS)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from safetensors.torch import load_file

from audiopd.config import from_dict
from audiopd.errors import ArtifactError, AudiopdError
from audiopd.model.config import ModelConfig
from audiopd.model.voice import VoiceInfo, VoiceModel, save_voice
from audiopd.train.checkpoint import latest_checkpoint, read_state


def export_voice(source: str | Path, out_dir: str | Path) -> Path:
    """``source``: a run directory (its latest checkpoint) or one checkpoint directory."""
    source = Path(source)
    ck = source if (source / "state.json").is_file() else latest_checkpoint(source)
    if ck is None:
        raise ArtifactError(f"no checkpoint found in {source}")
    state = read_state(ck)
    mcfg = from_dict(ModelConfig, state["model"], where=f"{ck}/state.json:model")
    info = from_dict(VoiceInfo, state["info"], where=f"{ck}/state.json:info")
    model = VoiceModel(mcfg, info)
    model.load_state_dict(load_file(str(ck / "model.safetensors")))
    return save_voice(model, out_dir, extra={"step": state["step"], "checkpoint": ck.name})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audiopd.train.export", description=__doc__)
    ap.add_argument("source", help="run directory or checkpoint directory")
    ap.add_argument("out", help="voice artifact directory to write")
    args = ap.parse_args(argv)
    try:
        path = export_voice(args.source, args.out)
    except AudiopdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
