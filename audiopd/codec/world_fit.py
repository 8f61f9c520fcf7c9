"""Fitting the WORLD codec's residual-VQ codebooks (k-means per level on the residual of the levels before).

Used by the corpus recipe's codec stage; numpy only, minutes on one core for ~10^5-10^6 frames.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import yaml

from audiopd.artifacts import write_checksums
from audiopd.codec.world import (
    WorldCodecConfig,
    WorldFeatures,
    dequantize_prosody,
    nearest,
    quantize_prosody,
    vq_vectors,
)
from audiopd.config import to_dict


def prosody_relative_vectors(feats: Iterable[WorldFeatures], cfg: WorldCodecConfig) -> np.ndarray:
    """Stack the VQ input vectors of many utterances (c0 taken relative to level 0's energy centre)."""
    out = []
    for f in feats:
        tok0 = quantize_prosody(f.f0, f.mcep[:, 0], cfg)
        _, c0c = dequantize_prosody(tok0, cfg)
        out.append(vq_vectors(f, c0c, cfg))
    return np.concatenate(out, axis=0)


def kmeans(
    x: np.ndarray,
    k: int,
    *,
    iters: int = 20,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
) -> np.ndarray:
    """Lloyd's k-means with data-point initialisation; empty clusters are re-seeded at the worst-fit points."""
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(x, dtype=np.float32)
    if len(x) < k:
        raise ValueError(f"k-means needs at least {k} vectors, got {len(x)}")
    book = x[rng.choice(len(x), size=k, replace=False)].copy()
    for it in range(iters):
        idx = nearest(x, book)
        counts = np.bincount(idx, minlength=k)
        # Column-wise bincount: ~50x faster than np.add.at for the cluster sums.
        sums = np.stack([np.bincount(idx, weights=x[:, d], minlength=k) for d in range(x.shape[1])], axis=1)
        live = counts > 0
        book[live] = (sums[live] / counts[live, None]).astype(np.float32)
        dead = np.flatnonzero(~live)
        if len(dead):
            err = ((x - book[idx]) ** 2).sum(axis=1)
            book[dead] = x[np.argsort(err)[-len(dead) :]]
        if log and (it == iters - 1 or it % 5 == 0):
            mse = float(((x - book[idx]) ** 2).sum(axis=1).mean())
            log(f"  iter {it:2d}: mse {mse:.4f}, empty {len(dead)}")
    return book


def fit_rvq(
    vectors: np.ndarray,
    num_levels: int,
    cardinality: int,
    *,
    iters: int = 20,
    seed: int = 0,
    log: Callable[[str], None] | None = print,
) -> np.ndarray:
    """Residual VQ codebooks ``[num_levels, cardinality, D]``, each level fitted on the previous residual."""
    residual = np.ascontiguousarray(vectors, dtype=np.float32).copy()
    books = []
    for level in range(num_levels):
        t = time.time()
        book = kmeans(residual, cardinality, iters=iters, seed=seed + level, log=log)
        residual -= book[nearest(residual, book)]
        books.append(book)
        if log:
            log(f"level {level + 1}: residual mse {float((residual ** 2).sum(axis=1).mean()):.4f} "
                f"({time.time() - t:.0f} s)")
    return np.stack(books, axis=0)


# The recipe generates a codec README's head; measurements written by hand go below this line, and a refit keeps
# them (a refit from the same corpus and seed reproduces the codebooks they were measured on).
NOTES_PREFIX = "<!-- Notes below this line are written by hand"


def notes_marker(stage: str) -> str:
    """The marker line of a README whose head ``stage`` generates."""
    return f"{NOTES_PREFIX}; {stage} keeps them when it refits. -->"


NOTES_MARKER = notes_marker("05_fit_codec.py")


def merge_readme(generated: str, existing: str | None, marker: str = NOTES_MARKER) -> str:
    """The generated README head, ``marker``, then the hand-written notes of ``existing`` (below its marker line,
    whichever stage's it names)."""
    notes = ""
    if existing and NOTES_PREFIX in existing:
        rest = existing.split(NOTES_PREFIX, 1)[1]
        notes = rest.split("-->", 1)[1].lstrip("\n") if "-->" in rest else ""
    return f"{generated.rstrip()}\n\n{marker}\n\n{notes}".rstrip() + "\n"


def write_codec_artifact(directory: Path, cfg: WorldCodecConfig, codebooks: np.ndarray, readme: str,
                         marker: str = NOTES_MARKER) -> Path:
    """Write ``config.yaml``, the safetensors codebooks, README.md and SHA256SUMS into ``directory``.

    ``readme`` is the generated head; notes below ``NOTES_MARKER`` in an existing README.md are kept.
    """
    from safetensors.numpy import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    old = directory / "README.md"
    readme = merge_readme(readme, old.read_text(encoding="utf-8") if old.is_file() else None, marker)
    save_file(
        {"codebooks": np.ascontiguousarray(codebooks, dtype=np.float32)},
        str(directory / cfg.codebooks_file),
        metadata={"format_version": str(cfg.format_version), "codec": cfg.name},
    )
    (directory / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
    (directory / "README.md").write_text(readme, encoding="utf-8")
    write_checksums(directory)
    return directory
