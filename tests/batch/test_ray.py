"""`--engine ray` on a local Ray instance the test starts and stops: the same rows, statuses and audio as local.

Both engines render the same deterministic plan (audiopd.batch.worker.plan) with the same seeds, so ids,
statuses, sample counts (and here even the bytes) agree. Ray is the optional `ray` extra (in `dev`).
"""

from __future__ import annotations

import functools
import json

import pytest
from voice_fixtures import install_voices

from audiopd.artifacts import DEFAULT_VOICE
from audiopd.batch.driver import RenderOptions, render
from audiopd.batch.inputs import read_rows
from audiopd.batch.manifest import read_manifest
from audiopd.cli import _load_voice

ray = pytest.importorskip("ray", reason="the `ray` extra is not installed")

TEXTS = ["Hello there.", "The cat sat on the mat.", "A much longer sentence that goes on for a while.",
         "Short one.", "Birds sing in the early morning light.", "Green fields.", "One more for the road."]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One local Ray instance for the module (starting one takes seconds)."""
    root = tmp_path_factory.mktemp("ray_render")
    with pytest.MonkeyPatch.context() as mp:
        install_voices(root, mp, {DEFAULT_VOICE: ("slt", "rms")})
        # Two CPUs at most (CI machines have two cores), no dashboard; the actors find the fixture voice through
        # the AUDIOPD_* variables the engine forwards.
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", configure_logging=False)
        try:
            yield root
        finally:
            ray.shutdown()


@pytest.fixture
def local_ray(cluster, tmp_path):
    return tmp_path


def _entries(outdir):
    return {e["id"]: e for e in read_manifest(outdir / "manifest.jsonl")}


def test_ray_engine_matches_the_local_engine(local_ray):
    rows = [{"id": f"r{i}", "text": t, "seed": i % 2} for i, t in enumerate(TEXTS)]
    rows += [{"id": "bad", "text": "***"}, {"id": "who", "text": "Hello.", "voice": "nobody"}]
    src = local_ray / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loader = functools.partial(_load_voice, None)
    results = {}
    for engine in ("local", "ray"):
        opts = RenderOptions(mode="parallel", seed=3, engine=engine, workers=2 if engine == "ray" else None,
                             threads=1, rows_per_call=2)
        summary = render(read_rows(str(src)), local_ray / engine, loader, opts)
        assert (summary.rendered, summary.errors) == (7, 2)
        results[engine] = _entries(local_ray / engine)
    local, remote = results["local"], results["ray"]
    assert sorted(local) == sorted(remote) == sorted(r["id"] for r in rows)
    for i in local:
        assert local[i]["status"] == remote[i]["status"]
        assert local[i].get("samples") == remote[i].get("samples")
        assert local[i].get("seed") == remote[i].get("seed")
        assert local[i].get("sha256") == remote[i].get("sha256")  # same plan, same seeds: the same audio


@pytest.mark.slow  # a second actor pool start-up; resuming itself is engine-independent (test_batch, test_crash)
def test_ray_engine_resumes_from_a_local_run(local_ray):
    src = local_ray / "in.txt"
    src.write_text("\n".join(TEXTS[:3]) + "\n")
    loader = functools.partial(_load_voice, None)
    render(read_rows(str(src)), local_ray / "out", loader, RenderOptions(mode="parallel"))
    src.write_text("\n".join(TEXTS[:5]) + "\n")
    summary = render(read_rows(str(src)), local_ray / "out", loader,
                     RenderOptions(mode="parallel", engine="ray", workers=1))
    assert (summary.skipped, summary.rendered) == (3, 2)
    assert sorted(_entries(local_ray / "out")) == [f"{i:06d}" for i in range(1, 6)]
