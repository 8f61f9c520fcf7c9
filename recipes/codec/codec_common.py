"""Shared helpers of the codec recipe (``recipes/codec``): paths, the render plan, the manifest, stage markers.

``DATA`` (default ``data/codec``) holds ``text.tsv`` (the natural recipe's stage 01), ``wav/<set>/<voice>/<id>.wav``
(22,050 Hz, 16-bit), a sidecar ``meta/<set>/<voice>/<id>.json`` per utterance, ``manifest.jsonl`` and the stages'
outputs. ``set`` is ``fit`` (train-split sentences: the RVQ and the fast vocoder learn from these) or ``heldout``
(test-split sentences: only evaluation hears them).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "natural"))
import natural_common as nc  # noqa: E402

SAMPLE_RATE = 22050  # the mel codec's rate (audiopd/codec/mel.py): Kokoro's 24 kHz is resampled to it
# Held-out voices: issue 22's ">= 6 Kokoro voices of both sexes and both accents, plus Piper joe".
HELDOUT_VOICES = ("kokoro:af_heart", "kokoro:af_bella", "kokoro:am_michael", "kokoro:am_adam", "kokoro:bf_emma",
                  "kokoro:bm_george", "piper:joe")
# Fitting voices: Piper joe (RTF ~0.03) carries most sentences; Kokoro (~8x slower) a modest share over more voices,
# so the codebooks see many speakers without costing hours.
FIT_KOKORO = ("kokoro:af_heart", "kokoro:af_bella", "kokoro:am_michael", "kokoro:am_adam", "kokoro:bf_emma",
              "kokoro:bm_george", "kokoro:af_nicole", "kokoro:bm_lewis", "kokoro:af_sarah", "kokoro:am_liam")


@dataclass(frozen=True)
class Job:
    set: str  # "fit" or "heldout"
    voice: str
    id: str
    split: str
    text: str


def stage_args(description: str, argv: list[str] | None = None, extra=None) -> argparse.Namespace:
    return nc.stage_args(description, argv, extra, default_data="data/codec")


def plan(rows: list[nc.TextRow], *, joe_fit: int, kokoro_fit: int, heldout: int) -> list[Job]:
    """Held-out first (test split, voices in turn, so every voice gets a share), then the fitting set: ``joe_fit``
    train sentences by Piper joe, then ``kokoro_fit`` other train sentences per Kokoro voice, voices in turn."""
    test = [r for r in rows if r.split == "test"][:heldout]
    train = [r for r in rows if r.split == "train"]
    jobs = [Job("heldout", HELDOUT_VOICES[i % len(HELDOUT_VOICES)], r.id, r.split, r.text) for i, r in enumerate(test)]
    jobs += [Job("fit", "piper:joe", r.id, r.split, r.text) for r in train[:joe_fit]]
    # Voices in turn, each sentence once: a run stopped early still holds every Kokoro voice.
    rest = train[joe_fit:joe_fit + kokoro_fit * len(FIT_KOKORO)]
    jobs += [Job("fit", FIT_KOKORO[i % len(FIT_KOKORO)], r.id, r.split, r.text) for i, r in enumerate(rest)]
    return jobs


def wav_path(data: Path, job: Job) -> Path:
    return Path(data) / "wav" / job.set / nc.voice_dir_name(job.voice) / f"{job.id}.wav"


def meta_path(data: Path, job: Job) -> Path:
    return Path(data) / "meta" / job.set / nc.voice_dir_name(job.voice) / f"{job.id}.json"


def read_manifest(data: Path, which: str | None = None) -> list[dict]:
    """Rows of ``DATA/manifest.jsonl`` (``which``: only the ``fit`` or ``heldout`` set)."""
    path = Path(data) / "manifest.jsonl"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run recipes/codec/01_render.py --data {data} first")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if which is None or r["set"] == which]


def write_manifest(data: Path) -> int:
    rows = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((Path(data) / "meta").glob("*/*/*.json"))]
    rows.sort(key=lambda r: (r["set"], r["id"], r["voice"]))
    nc.write_jsonl(Path(data) / "manifest.jsonl", rows)
    return len(rows)


def fit_rows(data: Path, natural: str | Path | None = None) -> list[dict]:
    """The fitting set: ``DATA``'s ``fit`` rows, plus with ``natural`` every train-split utterance that the natural
    corpus (``recipes/natural``, stage 02) has rendered so far. Its dev and test splits never join: the held-out set
    is test-split sentences. A natural row carries its corpus root in ``root`` for ``load_audio``."""
    rows = read_manifest(data, "fit")
    if natural:
        path = Path(natural) / "manifest.jsonl"
        if not path.is_file():
            raise SystemExit(f"{path} is missing: run recipes/natural/02_render.py --data {natural} first")
        seen = {(r["id"], r["voice"]) for r in rows}
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line) if line.strip() else None
            if r and r["split"] == "train" and (r["id"], r["voice"]) not in seen:
                rows.append({**r, "set": "fit", "root": str(natural)})
    return rows


def to_rate(audio, rate: int, target: int = SAMPLE_RATE):
    """float32 audio at ``target`` Hz (polyphase; Kokoro's 24 kHz is 147/160 of the mel codec's 22,050 Hz).
    ``target`` lets another recipe resample to whatever rate the codec it loads was fitted at."""
    import numpy as np

    if rate == target:
        return audio.astype(np.float32)
    from math import gcd

    from scipy.signal import resample_poly

    g = gcd(target, rate)
    return resample_poly(audio, target // g, rate // g).astype(np.float32)


def load_audio(data: Path, row: dict):
    """A manifest row's audio as float32 at ``SAMPLE_RATE`` (a natural-corpus row is resampled from its own rate)."""
    from audiopd.audio import read_audio

    if "root" in row:
        return to_rate(*read_audio(Path(row["root"]) / row["wav"]))
    return read_audio(Path(data) / row["wav"], expect_rate=SAMPLE_RATE)[0]


def is_done(data: Path, stage: str) -> bool:
    """Markers are ``.done-codec-NN``: DATA also holds the natural recipe's ``.done-01`` (its text stage)."""
    return nc.is_done(data, f"codec-{stage}")


def mark_done(data: Path, stage: str, info: dict) -> None:
    nc.mark_done(data, f"codec-{stage}", info)


atomic_write_text = nc.atomic_write_text


def candidate_tag(codec, directory: Path, decoder: str) -> str:
    """Names one candidate: its codebooks (fingerprint) and, for ``fast``, its weights, its fast Griffin-Lim
    setting and its postfilter (the same weights decode differently with another)."""
    from audiopd.artifacts import sha256_file

    tag = codec.token_fingerprint[:12]
    if decoder == "fast":
        fast = codec.cfg.fast
        tag += "-" + sha256_file(Path(directory) / fast.weights_file)[:8]
        if fast.phase_iters:
            tag += f"-fgla{fast.phase_iters}x{fast.phase_momentum:g}"
        if fast.sharpens:
            tag += f"-sharpen{fast.sharpen:g}"
            if fast.sharpen_high:
                tag += f"to{fast.sharpen_high:g}at{fast.sharpen_high_hz:g}"
    return tag
