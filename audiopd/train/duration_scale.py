"""A voice's duration calibration (``VoiceInfo.duration_scale``): each speaker's true frames over the frames its
duration model predicts, on held-out token shards, and optionally written into the voice's config.yaml.

Why: the duration predictor is fitted to log(1 + d) with a squared error (FastSpeech 2's target), so it predicts
about the median of a phone's duration given its context, and the median lies below the mean: summed over a
sentence the voice speaks faster than its teacher, most for the speaker whose durations vary most. On
voices/natural's development split the predicted frames came to 2.5% below the aligned ones for heart, 1.3% for
adam and 2.7% for joe (recipes/voice/README.md, "Duration calibration"). One factor per speaker, from the split
the voice was chosen on, puts the total back; the test split judges it.

    python -m audiopd.train.duration_scale --voice voices/natural DATA/tokens/mel22k-weak/dev-*.safetensors [--write]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import yaml

from audiopd.errors import ArtifactError
from audiopd.model.encoder import durations_from_log
from audiopd.model.info import DURATION_SCALE
from audiopd.train.shards import Shard


@torch.no_grad()
def measure(model, shards: Sequence[str | Path]) -> dict[str, dict[str, float]]:
    """Per voice speaker found in ``shards``: utterances, true and predicted frames (speed 1, no calibration) and
    their ratio. Shard speakers map to the voice's by name or teacher (``VoiceInfo.find``); others are skipped."""
    info = model.info
    sums: dict[int, list[float]] = {}
    for path in shards:
        shard = Shard(path)
        for i in range(len(shard)):
            u = shard.utterance(i)
            spk = info.find(shard.meta.voices[u.speaker])
            if spk is None:
                continue
            ids = torch.as_tensor(u.phonemes, dtype=torch.long)[None]
            mask = ids != 0
            _, log_dur = model.conditioner.encode(ids, mask, torch.tensor([spk]))
            predicted = int(durations_from_log(log_dur, mask)[0].sum())
            row = sums.setdefault(spk, [0, 0.0, 0.0])
            row[0] += 1
            row[1] += float(np.asarray(u.durations).sum())
            row[2] += predicted
    return {info.voices[s]: {"utterances": n, "true_frames": t, "predicted_frames": p,
                             "scale": round(t / p, 4) if p else 1.0}
            for s, (n, t, p) in sorted(sums.items())}


def write_scale(directory: str | Path, scales: dict[str, float]) -> Path:
    """Set ``duration_scale`` in ``directory``'s config.yaml and rewrite its checksums; speakers not in ``scales``
    keep the factor they have (1.0 if none), so speakers measured on different shards can be written in turn.
    Refuses factors outside ``DURATION_SCALE``."""
    from audiopd.artifacts import write_checksums

    path = Path(directory) / "config.yaml"
    cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    voices = list(cfg.get("voices") or ())
    unknown = sorted(set(scales) - set(voices))
    if unknown:
        raise ArtifactError(f"{directory} has no speaker(s) {unknown} (voices: {voices})")
    lo, hi = DURATION_SCALE
    bad = {k: v for k, v in scales.items() if not lo <= v <= hi}
    if bad:
        raise ArtifactError(f"duration scales {bad} lie outside [{lo}, {hi}]: the duration model needs work instead")
    before = list(cfg.get("duration_scale") or ())
    before = before if len(before) == len(voices) else [1.0] * len(voices)
    cfg["duration_scale"] = [float(scales.get(v, old)) for v, old in zip(voices, before)]
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    write_checksums(Path(directory))
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audiopd.train.duration_scale", description=__doc__.split("\n\n")[0])
    ap.add_argument("shards", nargs="+", help="held-out token shards (the split the voice is chosen on: dev)")
    ap.add_argument("--voice", required=True, help="voice artifact directory or name")
    ap.add_argument("--min-utterances", type=int, default=50,
                    help="a speaker with fewer held-out utterances keeps 1.0 (default 50)")
    ap.add_argument("--write", action="store_true", help="write the factors into the voice's config.yaml")
    args = ap.parse_args(argv)
    from audiopd.model.voice import load_voice

    try:
        model = load_voice(args.voice)
        rows = measure(model, args.shards)
    except (ArtifactError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    scales = {}
    for name, row in rows.items():
        enough = row["utterances"] >= args.min_utterances
        print(f"{name}: {row['utterances']} utterances, true / predicted frames {row['true_frames']:.0f} / "
              f"{row['predicted_frames']:.0f} = {row['scale']:.4f}{'' if enough else ' (too few: kept 1.0)'}")
        if enough:
            scales[name] = row["scale"]
    if not scales:
        print("error: no speaker of the voice has enough utterances in these shards", file=sys.stderr)
        return 2
    if args.write:
        if model.artifact_dir is None:
            print("error: --write needs a voice directory", file=sys.stderr)
            return 2
        try:
            print(f"wrote {write_scale(model.artifact_dir, scales)}")
        except ArtifactError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
