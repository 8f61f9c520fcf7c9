"""Where batches are rendered: in this process, in local worker processes, or on a Ray cluster.

Every engine yields ``(batch, results)`` as batches finish (any order) and loads the voice once per worker:
the driver writes files and the manifest, so all engines produce the same OUTDIR. Ray follows its actor-pool
pattern (ray.util.ActorPool, https://docs.ray.io/en/latest/ray-core/actors/actor-utils.html): each actor holds
one loaded voice, which is the expensive part (seconds) next to a batch (a fraction of a second).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from audiopd.errors import AudiopdError
from audiopd.render.worker import Batch, Worker

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
                    yield pending.pop(fut), fut.result()
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
        ray.init(include_dashboard=False, logging_level="WARNING", log_to_driver=True)
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

