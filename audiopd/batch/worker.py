"""The unit of work of ``audiopd render``: a batch of rows with one set of settings, spoken by one Synthesizer.

``plan`` groups the rows by their settings (speaker, mode, steps, seed, speed: one ``synthesize_batch`` call
takes one of each) and, within a group, by text length, so the facade can pack each call's chunks into
padded decoder batches of similar lengths (``Synthesizer._groups``). The plan depends only on the rows and the
options, so every engine (in-process, worker processes, Ray actors) renders exactly the same batches with the
same seeds and gets the same audio.

A ``Worker`` loads the voice once and turns a ``Batch`` into encoded files plus the facts the manifest needs;
the driver (audiopd.batch.driver) alone writes to OUTDIR, so crash safety lives in one place.

The engines (``run_local``: this process or local worker processes; ``run_ray``: a Ray cluster) yield
``(batch, results)`` as batches finish, in any order, with one voice load per worker. Ray follows its actor-pool
pattern (ray.util.ActorPool, https://docs.ray.io/en/latest/ray-core/actors/actor-utils.html): each actor holds
one loaded voice, which is the expensive part (seconds) next to a batch (a fraction of a second).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import random
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import numpy as np

from audiopd.batch.inputs import Row
from audiopd.errors import AudiopdError

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
    check_level: str = "fast"  # the checker's level in auto mode (the command line's, for every row)


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
        check_level=defaults.check_level,
    )


def plan(rows: list[Row], defaults: Settings, rows_per_call: int = ROWS_PER_CALL) -> list[Batch]:
    """Deterministic batches: rows grouped by settings, longest text first within a group, then cut.

    The batches come back in a fixed pseudo-random order: long and short calls mix, so progress by rows (and its
    ETA) is not skewed by rendering every long row first. Order does not change any row's audio.
    """
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
    random.Random(len(batches)).shuffle(batches)
    return batches


def encode_audio(audio: np.ndarray, sample_rate: int, fmt: str) -> bytes:
    """16-bit PCM ``fmt`` ("wav" or "flac") bytes of a mono float signal: the samples ``audiopd say`` writes."""
    from audiopd.audio import audio_bytes

    return audio_bytes(audio, sample_rate, AUDIO_FORMATS[fmt])


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
                                                 mode=s.mode, steps=s.steps, seed=s.seed, speed=s.speed,
                                                 check_level=s.check_level)
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


# -------------------------------------------------------------------------------------------- engines
ENGINES = ("local", "ray")
# Environment that tells a worker where artifacts are (audiopd.artifacts): forwarded to Ray actors, which on a
# cluster do not inherit the driver's environment.
FORWARDED_ENV = ("AUDIOPD_VOICES_PATH", "AUDIOPD_CODECS_PATH", "AUDIOPD_HOME")

Loader = Callable[[], tuple[Any, "str | None"]]
Results = Iterator[tuple[Batch, list[dict[str, Any]]]]


class EngineError(AudiopdError):
    """The chosen engine cannot run (Ray not installed, no cluster, no CPUs)."""


def run_local(batches: list[Batch], loader: Loader | Worker, fmt: str, workers: int, threads: int | None,
              on_ready: Callable[[], None] = lambda: None) -> Results:
    """``loader`` may be a loaded Worker (the in-process case loads before OUTDIR is touched)."""
    if isinstance(loader, Worker) or workers <= 1:
        worker = loader if isinstance(loader, Worker) else Worker(loader, fmt, threads)
        on_ready()
        for batch in batches:
            yield batch, worker.render(batch)
        return
    yield from _run_processes(batches, loader, fmt, workers, threads or 1, on_ready)


# ------------------------------------------------------------------------------- local processes
_WORKER: Worker | None = None


def _init_process(loader: Loader, fmt: str, threads: int) -> None:
    global _WORKER
    _WORKER = Worker(loader, fmt, threads)


def _render_in_process(batch: Batch) -> list[dict[str, Any]]:
    assert _WORKER is not None, "worker process was not initialised"
    return _WORKER.render(batch)


def _run_processes(batches: list[Batch], loader: Loader, fmt: str, workers: int, threads: int,
                   on_ready: Callable[[], None]) -> Results:
    # spawn, not fork: torch's thread pools do not survive a fork, and a fresh interpreter is what Ray does too.
    ctx = multiprocessing.get_context("spawn")
    pending: dict[Future, Batch] = {}
    todo = iter(batches)
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_process,
                             initargs=(loader, fmt, threads)) as pool:
        on_ready()
        try:
            while True:
                # At most two batches per worker in flight: finished audio reaches the disk early, and a crash
                # loses at most that much work.
                while len(pending) < 2 * workers and (batch := next(todo, None)) is not None:
                    pending[pool.submit(_render_in_process, batch)] = batch
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    try:
                        results = fut.result()
                    except BrokenProcessPool:
                        raise EngineError("a render worker process failed to start or died (its error is printed "
                                          "above); --workers 1 reports a voice problem directly") from None
                    yield pending.pop(fut), results
        finally:
            for fut in pending:
                fut.cancel()


# ------------------------------------------------------------------------------------------ Ray
def run_ray(batches: list[Batch], loader: Loader, fmt: str, workers: int | None, threads: int | None,
            on_ready: Callable[[], None] = lambda: None) -> Results:
    """An actor pool of ``workers`` actors (default: one per CPU of the cluster), each with ``threads`` CPUs."""
    try:
        import ray
        from ray.util import ActorPool
    except ImportError:
        raise EngineError("--engine ray needs Ray: pip install 'audiopd[ray]'") from None
    started = False
    if not ray.is_initialized():
        # Connects to RAY_ADDRESS (or a running local cluster) if there is one, else starts a local instance.
        if os.environ.get("RAY_ADDRESS"):
            ray.init(logging_level="WARNING")  # an existing cluster's settings are its own
        else:
            ray.init(include_dashboard=False, logging_level="WARNING")
        started = True
    actors: list[Any] = []
    try:
        cpus = int(ray.cluster_resources().get("CPU", 0))
        per_actor = max(1, threads or 1)
        n = workers or max(1, cpus // per_actor)
        if cpus < per_actor:
            raise EngineError(f"the Ray cluster has {cpus} CPUs; an actor needs {per_actor}")
        env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
        actor_cls = ray.remote(num_cpus=per_actor)(Worker)
        opts = {"runtime_env": {"env_vars": env}} if env else {}
        actors = [actor_cls.options(**opts).remote(loader, fmt, per_actor) for _ in range(min(n, len(batches)) or 1)]
        # Fail early and clearly if the voice does not load on the cluster.
        ray.get([a.__ray_ready__.remote() for a in actors])
        on_ready()
        # map_unordered loses the pairing of batch and results: find the batch by its first row.
        owner = {row.index: b for b in batches for row in b.rows}
        pool = ActorPool(actors)
        for results in pool.map_unordered(lambda actor, batch: actor.render.remote(batch), batches):
            yield owner[results[0]["index"]], results
    except ray.exceptions.RayActorError as exc:
        raise EngineError(f"a Ray render actor died: {' '.join(str(exc).split())[:300]}") from None
    finally:
        for actor in actors:
            ray.kill(actor)
        if started:
            ray.shutdown()

