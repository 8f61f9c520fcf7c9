"""Stage 03: export stage 02's last checkpoint as the shipped recogniser artifact (checkers/<name>/).

    python recipes/checker/03_export.py --data DATA --out checkers/phones16k
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True, help="artifact directory to (re)write")
    p.add_argument("--ckpt", default="ckpt", help="checkpoint directory under DATA (default: ckpt)")
    args = p.parse_args(argv)
    from safetensors.torch import load_file

    from audiopd.checker.phones_torch import PhoneRecognizer, save_recognizer

    root = Path(args.data)
    state = json.loads((root / args.ckpt / "state.json").read_text())
    tensors = load_file(str(root / args.ckpt / "last.safetensors"))
    exclude = set(state.get("exclude_sources", []))
    model = PhoneRecognizer()
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    counts: dict[str, int] = {}
    seconds = 0.0
    for shard in sorted((root / "shards").glob("*.npz")):
        if ".tmp" in shard.name:
            continue
        z = np.load(shard)
        for src, n in zip(z["sources"], z["feat_lengths"]):
            key = str(src).split(":")[0]
            if key in exclude:
                continue
            counts[key] = counts.get(key, 0) + 1
            seconds += float(n) / 100
    last = state["log"][-1]
    info = {"recipe": "recipes/checker (01_clips, 02_train, 03_export)", "step": state["step"],
            "held_out_phone_error_rate": round(last["held_per"], 4), "training_hours": round(seconds / 3600, 2),
            "clips_by_source": counts, "excluded_sources": sorted(exclude)}
    if state.get("init_from"):
        info["init_from"] = state["init_from"]
    out = save_recognizer(model.eval(), args.out, info=info)
    print(f"wrote {out}: {json.dumps(info)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
