"""The unit of work of ``audiopd render``: a batch of rows with one set of settings, spoken by one Synthesizer.

``plan`` groups the rows by their settings (speaker, mode, steps, seed, speed: one ``synthesize_batch`` call
takes one of each) and, within a group, by text length, so the facade can pack each call's chunks into
padded decoder batches of similar lengths (``Synthesizer._groups``). The plan depends only on the rows and the
options, so every engine (in-process, worker processes, Ray actors) renders exactly the same batches with the
same seeds and gets the same audio.

A ``Worker`` loads the voice once and turns a ``Batch`` into encoded files plus the facts the manifest needs;
the driver (audiopd.render.batch) alone writes to OUTDIR, so crash safety lives in one place.
"""

from __future__ import annotations

import hashlib
import io
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from audiopd.errors import AudiopdError
from audiopd.render.inputs import Row

AUDIO_FORMATS = {"wav": "WAV", "flac": "FLAC"}
# Rows per synthesize_batch call: several decoder batches (SynthesisConfig.max_batch = 8), so the facade can
# form tight length groups, yet small enough that a crash loses little work and progress moves steadily.
ROWS_PER_CALL = 32


@dataclass(frozen=True)
class Settings:
    voice: str | None  # a speaker of the loaded voice; None = the command line's (or the voice's first)
    mode: str
    steps: int | None
    seed: int | None
    speed: float


@dataclass(frozen=True)
class Batch:
    number: int
    settings: Settings
    rows: tuple[Row, ...]


def row_settings(row: Row, defaults: Settings) -> Settings:
    return Settings(
        voice=row.voice if row.voice is not None else defaults.voice,
        mode=row.mode or defaults.mode,
        steps=row.steps if row.steps is not None else defaults.steps,
        seed=row.seed if row.seed is not None else defaults.seed,
        speed=row.speed if row.speed is not None else defaults.speed,
    )


def plan(rows: list[Row], defaults: Settings, rows_per_call: int = ROWS_PER_CALL) -> list[Batch]:
    """Deterministic batches: rows grouped by settings, longest text first within a group, then cut."""
    if rows_per_call < 1:
        raise ValueError("rows_per_call must be >= 1")
    groups: dict[Settings, list[Row]] = {}
    for row in rows:
        groups.setdefault(row_settings(row, defaults), []).append(row)
    batches: list[Batch] = []
    for settings, members in groups.items():  # dicts keep first-seen order: deterministic
        members.sort(key=lambda r: (-len(r.text), r.index))
        for k in range(0, len(members), rows_per_call):
            batches.append(Batch(len(batches), settings, tuple(members[k:k + rows_per_call])))
    return batches


def encode_audio(audio: np.ndarray, sample_rate: int, fmt: str) -> bytes:
    """16-bit PCM ``fmt`` ("wav" or "flac") bytes of a mono float signal (clipped to [-1, 1])."""
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.clip(np.asarray(audio, dtype=np.float32).reshape(-1), -1.0, 1.0), sample_rate,
             subtype="PCM_16", format=AUDIO_FORMATS[fmt])
    return buf.getvalue()


class Worker:
    """Loads the voice once (``loader() -> (Synthesizer, speaker or None)``) and renders batches."""

    def __init__(self, loader: Callable[[], tuple[Any, str | None]], fmt: str, threads: int | None = None) -> None:
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        self.tts, self.speaker = loader()
        self.fmt = fmt
        self.fingerprint = voice_fingerprint(self.tts)

    def render(self, batch: Batch) -> list[dict[str, Any]]:
        """One result dict per row (see ``_ok`` / ``_error``); a failing call is retried row by row so one bad
        row cannot take its batch-mates down."""
        s = batch.settings
        t0 = time.perf_counter()
        try:
            results = self.tts.synthesize_batch([r.text for r in batch.rows], voice=s.voice or self.speaker,
                                                 mode=s.mode, steps=s.steps, seed=s.seed, speed=s.speed)
        except Exception as exc:  # noqa: BLE001  (isolated below; a bug is reported per row, not hidden)
            if len(batch.rows) > 1:
                return [r for row in batch.rows for r in self.render(Batch(batch.number, s, (row,)))]
            return [_error(batch.rows[0], exc)]
        wall = time.perf_counter() - t0
        total = sum(r.duration_s for r in results) or 1.0
        out = []
        for row, res in zip(batch.rows, results):
            try:
                out.append(self._ok(row, res, timings={"call_s": round(wall, 4), "rows_in_call": len(batch.rows),
                                                       "share_s": round(wall * res.duration_s / total, 4)}))
            except Exception as exc:  # noqa: BLE001  (e.g. an encoder refusing the signal)
                out.append(_error(row, exc))
        return out

    def _ok(self, row: Row, res: Any, timings: dict[str, Any]) -> dict[str, Any]:
        data = encode_audio(res.audio, res.sample_rate, self.fmt)
        rep = res.report
        verdict = rep.get("check")
        return {
            "index": row.index, "status": "ok", "data": data, "sha256": hashlib.sha256(data).hexdigest(),
            "voice": rep.get("voice"), "mode": rep.get("mode"), "requested_mode": rep.get("requested_mode"),
            "steps": rep.get("steps"), "seed": rep.get("seed"), "speed": rep.get("speed"),
            "seconds": round(res.duration_s, 4), "samples": int(np.asarray(res.audio).size),
            "sample_rate": int(res.sample_rate), "chunks": rep.get("chunks"),
            "check": None if verdict is None else {"passed": bool(verdict["passed"]),
                                                   "score": round(float(verdict["score"]), 4),
                                                   "reasons": list(verdict["reasons"])},
            "warnings": list(rep.get("warnings") or []), "timings": timings, "voice_sha256": self.fingerprint,
        }


def voice_fingerprint(tts: Any) -> str:
    """sha256 over the voice's weights and the codec's name and token fingerprint: a rerun with another voice
    (a changed --voice, AUDIOPD_VOICES_PATH or a retrained artifact) renders again instead of skipping."""
    import torch

    h = hashlib.sha256()
    for name, tensor in sorted(tts.model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    h.update(f"{tts.codec.name}:{getattr(tts.codec, 'token_fingerprint', '')}".encode())
    return h.hexdigest()


def _error(row: Row, exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, AudiopdError):
        message = " ".join(str(exc).split())
    else:  # a bug: say so and keep where it happened, the run goes on
        where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        message = f"internal error {type(exc).__name__}: {exc}" + (
            f" ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})" if where else "")
    return {"index": row.index, "status": "error", "error": message}
