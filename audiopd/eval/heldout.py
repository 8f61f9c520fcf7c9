"""The held-out sentences of a corpus that quality evaluations speak, and their teacher recordings.

Reads ``DATA/corpus/manifest.jsonl`` (the flite corpus) or ``DATA/manifest.jsonl`` (the natural one), draws
the ``test`` split sentences (or the ``dev`` split's, for choosing settings) every evaluated speaker recorded,
groups them into passages for long-text runs, and loads the teacher's recording of each. ``tts_eval`` judges
the voice on these sentences and ``oracle`` reads the same manifest; both share this code so they pick and
load sentences the same way.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audiopd.errors import AudiopdError
from audiopd.synthesis.join import JoinConfig


class EvalInputError(AudiopdError, ValueError):
    """The corpus or an option of the evaluation is unusable (missing manifest, no test sentences...)."""


@dataclass(frozen=True)
class Sentence:
    """A held-out sentence and its teacher recordings per corpus voice (paths relative to DATA).

    ``wavs[voice]`` lists the recordings in order: one for a sentence; for a *passage* (``--join``, consecutive
    held-out sentences spoken as one text), one per sentence, joined with ``TEACHER_PAUSE_S`` of silence.
    """

    id: str
    text: str
    wavs: dict[str, tuple[str, ...]]


# Silence between a passage's teacher recordings: the facade's own joining pause between chunks.
TEACHER_PAUSE_S = JoinConfig().pause_s


def manifest_path(data: Path) -> Path:
    """The flite corpus's ``DATA/corpus/manifest.jsonl``, else the natural corpus's ``DATA/manifest.jsonl``.

    Both hold the same fields, with wav paths relative to DATA (recipes/corpus/, recipes/natural/).
    """
    for path in (Path(data) / "corpus" / "manifest.jsonl", Path(data) / "manifest.jsonl"):
        if path.is_file():
            return path
    raise EvalInputError(f"no corpus manifest at {Path(data) / 'corpus' / 'manifest.jsonl'} or "
                         f"{Path(data) / 'manifest.jsonl'} (build one with recipes/corpus/run.sh or "
                         "recipes/natural/run.sh, or pass --data)")


def read_manifest(data: Path) -> list[dict[str, Any]]:
    """Rows of the corpus manifest (``manifest_path``): id, voice, split, text, wav, seconds."""
    path = manifest_path(data)
    rows = []
    with open(path, encoding="utf-8") as f:
        for k, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise EvalInputError(f"{path}:{k}: not valid JSON ({exc.msg})") from None
            missing = {"id", "voice", "split", "text", "wav"} - set(row)
            if missing:
                raise EvalInputError(f"{path}:{k}: missing field(s) {', '.join(sorted(missing))}")
            rows.append(row)
    return rows


SPLITS = ("test", "dev")


def select_sentences(rows: Sequence[dict[str, Any]], speakers: Sequence[str], n: int, seed: int,
                     split: str = "test") -> list[Sentence]:
    """``n`` sentences of ``split`` (fewer if fewer exist), the same for every speaker, in id order. ``test`` is
    for reporting; ``dev`` for choosing settings, so the test split stays unseen by every choice.

    Only ids recorded by every evaluated speaker that is a corpus voice are eligible, so every
    speaker's teacher row covers exactly the sentences its synthesis rows cover.
    """
    if n < 1:
        raise EvalInputError(f"--n must be >= 1, got {n}")
    if split not in SPLITS:
        raise EvalInputError(f"--split must be one of {', '.join(SPLITS)}, got {split!r}")
    by_id: dict[str, Sentence] = {}
    for r in rows:
        if r["split"] != split:
            continue
        s = by_id.setdefault(r["id"], Sentence(r["id"], r["text"], {}))
        s.wavs[r["voice"]] = (r["wav"],)
    if not by_id:
        raise EvalInputError(f"the corpus manifest has no {split!r} split rows")
    corpus_voices = {v for s in by_id.values() for v in s.wavs}
    taught = [sp for sp in speakers if sp in corpus_voices]
    eligible = sorted(i for i, s in by_id.items() if all(sp in s.wavs for sp in taught))
    if not eligible:
        raise EvalInputError(f"no {split} sentence is recorded by all of {', '.join(taught)}")
    picked = random.Random(seed).sample(eligible, min(n, len(eligible)))
    return [by_id[i] for i in sorted(picked)]


def join_sentences(sentences: Sequence[Sentence], join: int) -> list[Sentence]:
    """Passages of ``join`` consecutive sentences each (an incomplete last group is dropped); 1 = unchanged.

    Long-text evaluation: the voice speaks a passage as one text (the facade chunks it at sentence
    boundaries, as for any user's paragraph), and the teacher reference is the parts' recordings in order.
    """
    if join < 1:
        raise EvalInputError(f"--join must be >= 1, got {join}")
    if join == 1:
        return list(sentences)
    out = []
    for k in range(0, len(sentences) - join + 1, join):
        parts = tuple(sentences[k : k + join])
        voices = set.intersection(*(set(p.wavs) for p in parts))
        out.append(Sentence(id="+".join(p.id for p in parts), text=" ".join(p.text for p in parts),
                            wavs={v: tuple(w for p in parts for w in p.wavs[v]) for v in sorted(voices)}))
    if not out:
        raise EvalInputError(f"--join {join} needs at least {join} sentences, got {len(sentences)}")
    return out


def teacher_audio(data: Path, s: Sentence, speaker: str) -> tuple[np.ndarray, int]:
    """The teacher's recording of ``s`` (a passage's recordings joined with TEACHER_PAUSE_S of silence)."""
    from audiopd.audio import read_audio

    pieces, rate = [], None
    for path in s.wavs[speaker]:
        audio, r = read_audio(data / path)
        if rate is not None and r != rate:
            raise EvalInputError(f"teacher recordings of one passage differ in sample rate ({rate} vs {r} Hz)")
        rate = r
        if pieces:
            pieces.append(np.zeros(round(TEACHER_PAUSE_S * r), dtype=np.float32))
        pieces.append(np.asarray(audio, dtype=np.float32))
    return np.concatenate(pieces), int(rate)
