"""Throughput of `audiopd render` against a loop of `audiopd say` calls and one-by-one `synthesize` calls.

    python recipes/render/throughput.py ROWS.jsonl --say-rows 15 --one-rows 100 --render-rows 100 \
        --mode parallel --threads 1 --json out.json

All three speak the first rows of ROWS.jsonl (``{"id", "text"}`` lines) with the same voice, mode and seed:

* say loop: a fresh ``audiopd say`` process per row (what a shell loop does: import, voice load, synthesis);
* one-by-one: one process, the voice loaded once, ``Synthesizer.synthesize`` per row (the batching gain is
  render against this);
* render: ``audiopd render`` on the rows (one voice load, length-grouped batches, files + manifest).

Each reports wall seconds and CPU seconds (user + system of the process and its children) per row and per
audio second. On a shared machine CPU seconds are the steadier figure: wall time counts other people's work.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _audio_seconds(paths: list[Path]) -> float:
    import soundfile as sf

    return sum(sf.info(str(p)).duration for p in paths)


def say_loop(rows: list[dict], args, tmp: Path) -> dict:
    cli = [sys.executable, "-m", "audiopd.cli", "say"]
    c0, t0 = _cpu_children(), time.perf_counter()
    outs = []
    for r in rows:
        out = tmp / f"say_{r['id']}.wav"
        subprocess.run([*cli, r["text"], "-o", str(out), "--mode", args.mode, "--seed", str(args.seed)],
                       check=True, env=_env(args), stdout=subprocess.DEVNULL)
        outs.append(out)
    return _figures(len(rows), time.perf_counter() - t0, _cpu_children() - c0, _audio_seconds(outs))


def one_by_one(rows: list[dict], args) -> dict:
    import torch

    import audiopd

    torch.set_num_threads(args.threads)
    c0, t0 = _cpu_self(), time.perf_counter()
    tts = audiopd.load(args.voice) if args.voice else audiopd.load()
    audio = 0.0
    for r in rows:
        audio += tts.synthesize(r["text"], mode=args.mode, seed=args.seed).duration_s
    return _figures(len(rows), time.perf_counter() - t0, _cpu_self() - c0, audio)


def render(rows: list[dict], args, tmp: Path) -> dict:
    src = tmp / "rows.jsonl"
    src.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in rows))
    out = tmp / "render_out"
    cmd = [sys.executable, "-m", "audiopd.cli", "render", str(src), "-o", str(out), "--mode", args.mode,
           "--seed", str(args.seed), "--threads", str(args.threads)] + (["--voice", args.voice] if args.voice else [])
    c0, t0 = _cpu_children(), time.perf_counter()
    subprocess.run(cmd, check=True, env=_env(args), stdout=subprocess.DEVNULL)
    return _figures(len(rows), time.perf_counter() - t0, _cpu_children() - c0,
                    _audio_seconds(sorted(out.glob("*.wav"))))


def _env(args) -> dict:
    # say has no --threads: one torch/OpenMP thread for every contender alike.
    return {**os.environ, "OMP_NUM_THREADS": str(args.threads)}


def _figures(n: int, wall: float, cpu: float, audio: float) -> dict:
    return {"rows": n, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "audio_s": round(audio, 2),
            "wall_per_row_s": round(wall / n, 4), "cpu_per_row_s": round(cpu / n, 4),
            "rtf_wall": round(wall / audio, 4), "rtf_cpu": round(cpu / audio, 4)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("rows", help="a .jsonl file of {id, text} rows")
    p.add_argument("--say-rows", type=int, default=15)
    p.add_argument("--one-rows", type=int, default=100)
    p.add_argument("--render-rows", type=int, default=100)
    p.add_argument("--mode", default="parallel", choices=("auto", "parallel", "serial"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--voice", default=None)
    p.add_argument("--skip", default="", help="comma-separated parts to leave out: say,one,render")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args(argv)
    rows = [json.loads(line) for line in Path(args.rows).read_text().splitlines() if line.strip()]
    skip = set(filter(None, args.skip.split(",")))
    result: dict = {"mode": args.mode, "threads": args.threads, "seed": args.seed}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "say" not in skip:
            result["say_loop"] = say_loop(rows[: args.say_rows], args, tmp)
            print("say loop", result["say_loop"], flush=True)
        if "one" not in skip:
            result["one_by_one"] = one_by_one(rows[: args.one_rows], args)
            print("one by one", result["one_by_one"], flush=True)
        if "render" not in skip:
            result["render"] = render(rows[: args.render_rows], args, tmp)
            print("render", result["render"], flush=True)
    base = result.get("render")
    for other in ("say_loop", "one_by_one"):
        if base and other in result:
            # Per audio second, so different row counts and lengths compare fairly.
            result[f"render_vs_{other}"] = {k: round(result[other][k] / base[k], 2) for k in ("rtf_wall", "rtf_cpu")}
    print(json.dumps({k: v for k, v in result.items() if k.startswith("render_vs")}))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
