"""A bounded loopback load test of ``audiopd serve`` (httpx; 127.0.0.1 only; bounded in count and time).

    python -m audiopd.serve.loadtest --url http://127.0.0.1:8000/ --requests 200 --concurrency 8 --pid PID
    python -m audiopd.serve.loadtest --url http://127.0.0.1:8000/ --duration 60 --mode parallel

Mixed requests: short, medium and long texts through /synthesize and /v1/audio/speech (whole WAV,
streamed PCM, SSE), plus a few pathological ones the server must refuse cleanly (malformed JSON, a
5,000-digit seed, 200,000-deep nesting, wrong Content-Type, a foreign Origin, unknown voice, speed
0.25, a run of 200 digits, nonsense words); ``--mode`` gives every synthesis one mode instead of the
mix. Every kind has the statuses it may get; anything else, a 200 whose body is not audio, or a 429
without Retry-After, is an error. A 429 (refused at admission) is counted apart, and the client that
got it waits its Retry-After before its next request, as a polite client would; a 503 (an admitted
request that ran out of time) too. Prints one JSON summary: statuses; the latency of accepted
requests by mode (p50/p95/max) and how many overran the budget the server named
(``X-Audiopd-Time-Budget``) or ended an SSE stream early; the refusals' count and latency; errors;
the server's peak RSS (VmHWM of ``--pid``) and its own counts of sentences by path and verdict and of
escalations that yielded to the requests queued behind (its /metrics, since it started).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WORDS = ("the morning light fell across a quiet street where children walked to school with their bags and "
         "a small dog followed them past the old bakery and the river while the town slowly woke").split()
OK = (200,)
BUSY = (429, 503)
MODES = ("auto", "parallel", "serial")


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def _text(rng: random.Random, sentences: int, words: int) -> str:
    return " ".join(_sentence(rng, words) for _ in range(sentences))


def make_requests(n: int, seed: int, mode: str | None = None) -> list[dict[str, Any]]:
    """``n`` requests: ~85% ordinary (mixed lengths and endpoints), the rest pathological, shuffled; ``mode``:
    every synthesis in that mode (K only in parallel mode), instead of the mix."""
    rng = random.Random(seed)
    ordinary = [
        lambda: ("short", "/v1/audio/speech", {"input": _sentence(rng, 4), "response_format": "wav"}, OK),
        lambda: ("short-pcm-stream", "/v1/audio/speech", {"input": _text(rng, 2, 5), "response_format": "pcm"}, OK),
        lambda: ("medium", "/synthesize", {"text": _text(rng, 3, 9)}, OK),
        lambda: ("medium-sse", "/v1/audio/speech", {"input": _text(rng, 3, 8), "stream_format": "sse",
                                                    "response_format": "pcm"}, OK),
        lambda: ("long", "/v1/audio/speech", {"input": _text(rng, 5, 12), "response_format": "wav"}, OK),
        lambda: ("parallel", "/synthesize", {"text": _text(rng, 2, 8), "mode": "parallel", "steps": 3}, OK),
    ]
    pathological = [
        ("bad-json", "/synthesize", b'{"text": "hi",', (400,)),
        ("huge-seed", "/synthesize", b'{"text": "hi", "seed": ' + b"9" * 5000 + b"}", (400,)),
        ("deep-nesting", "/synthesize", b"[" * 200_000 + b"]" * 200_000, (400,)),
        ("text-plain", "/synthesize", {"text": "hi", "_ctype": "text/plain"}, (415,)),
        ("foreign-origin", "/v1/audio/speech", {"input": "hi", "_origin": "http://evil.example"}, (403,)),
        ("unknown-voice", "/v1/audio/speech", {"input": "hi", "voice": "nobody"}, (400,)),
        ("speed-0.25", "/v1/audio/speech", {"input": "Slowly now.", "speed": 0.25}, OK),
        ("200-digits", "/v1/audio/speech", {"input": "7" * 200, "mode": "parallel"}, OK),
        ("nonsense", "/synthesize", {"text": " ".join("".join(rng.choice("qxzvkjwp") for _ in range(7))
                                                      for _ in range(40))}, OK),
    ]
    out = []
    for i in range(n):
        if i % 7 == 3:
            kind, path, body, ok = pathological[(i // 7) % len(pathological)]
        else:
            kind, path, body, ok = rng.choice(ordinary)()
        if mode is not None and isinstance(body, dict) and ("text" in body or "input" in body):
            body = {**{k: v for k, v in body.items() if k != "steps" or mode == "parallel"}, "mode": mode}
        out.append({"kind": kind, "path": path, "body": body, "ok": ok,
                    "mode": body.get("mode", "auto") if isinstance(body, dict) else None})
    rng.shuffle(out)
    return out


async def one(client: Any, base: str, req: dict[str, Any]) -> dict[str, Any]:
    body, headers = req["body"], {"Content-Type": "application/json"}
    if isinstance(body, dict):
        body = dict(body)
        headers["Content-Type"] = body.pop("_ctype", headers["Content-Type"])
        if "_origin" in body:
            headers["Origin"] = body.pop("_origin")
        body = json.dumps(body).encode()
    t0 = time.perf_counter()
    first, size, error, budget, retry, cut = None, 0, None, None, None, False
    try:
        async with client.stream("POST", base + req["path"], content=body, headers=headers) as resp:
            status = resp.status_code
            head, tail = b"", b""
            async for chunk in resp.aiter_bytes():
                first = first if first is not None else time.perf_counter() - t0
                if len(head) < 64:
                    head += chunk[:64]
                tail = (tail + chunk)[-256:]
                size += len(chunk)
            ctype = resp.headers.get("content-type", "")
            budget = float(resp.headers["x-audiopd-time-budget"]) if "x-audiopd-time-budget" in resp.headers else None
            if status == 200 and not (head.startswith(b"RIFF") or head.startswith(b"data: ") or
                                      (ctype == "audio/pcm" and size > 0) or head.startswith(b'{"report"')):
                error = f"200 without audio ({ctype}, {size} B)"
            cut = status == 200 and head.startswith(b"data: ") and b'"speech.audio.done"' not in tail
            if status == 429:
                value = resp.headers.get("retry-after", "")
                retry = int(value) if value.isdigit() else None
                if retry is None or retry < 1 or not head.startswith(b'{"error"'):
                    error = f"429 without Retry-After >= 1 or a JSON error ({value!r}, {head[:20]!r})"
    except Exception as exc:  # noqa: BLE001 (a transport failure is a result here, not a crash)
        status, error = None, f"{type(exc).__name__}: {exc}"
    total = time.perf_counter() - t0
    if error is None and status not in req["ok"] and status not in BUSY:
        error = f"unexpected status {status}"
    return {"kind": req["kind"], "mode": req.get("mode"), "status": status, "seconds": total, "first_byte": first,
            "bytes": size, "budget_s": budget, "retry_after_s": retry, "sse_cut": cut, "error": error}


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(q * (len(values) - 1))))], 3)


def peak_rss_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


async def run(url: str, n: int, concurrency: int, max_seconds: float, seed: int,
              log: Path | None = None, mode: str | None = None) -> dict[str, Any]:
    import httpx

    base = url.rstrip("/")
    requests = make_requests(n, seed, mode)
    queue: asyncio.Queue = asyncio.Queue()
    for r in requests:
        queue.put_nowait(r)
    results: list[dict[str, Any]] = []
    deadline = time.perf_counter() + max_seconds

    async def worker(client: Any) -> None:
        while not queue.empty() and time.perf_counter() < deadline:
            results.append(await one(client, base, queue.get_nowait()))
            if log is not None:  # one line per request as it ends, so a stopped run keeps what it measured
                with log.open("a") as f:
                    f.write(json.dumps(results[-1]) + "\n")
            if results[-1]["retry_after_s"]:  # as a polite client: not a retry storm against a busy server
                await asyncio.sleep(min(results[-1]["retry_after_s"], max(deadline - time.perf_counter(), 0)))

    t0 = time.perf_counter()
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(timeout=httpx.Timeout(max_seconds), limits=limits) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - t0
        counters = await server_counters(client, base)
    summary = summarize(results, n=n, concurrency=concurrency, wall=wall, mode=mode)
    summary["server_counters"] = counters
    return summary


COUNTED = ("audiopd_pieces_total", "audiopd_escalations_yielded_total")


async def server_counters(client: Any, base: str) -> dict[str, float] | None:
    """The server's own counts since it started (its /metrics): sentences by decoding path and verdict, and
    escalations that yielded to requests queued behind, which latency alone does not show. None if unreadable."""
    try:
        resp = await client.get(base + "/metrics")
    except Exception:  # noqa: BLE001 (optional detail: the run's own figures stand without it)
        return None
    if resp.status_code != 200:
        return None
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(resp.text):
            for sample in family.samples:
                if sample.name.startswith(COUNTED):
                    labels = ",".join(f"{k}={v}" for k, v in sample.labels.items())
                    out[sample.name.removeprefix("audiopd_") + (f"{{{labels}}}" if labels else "")] = sample.value
    except ValueError:  # not the Prometheus text format: the run's own figures stand without it
        return None
    return out


def _stats(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "p50": _pct(values, 0.5), "p95": _pct(values, 0.95),
            "max": round(max(values), 3) if values else None}


def summarize(results: list[dict[str, Any]], *, n: int, concurrency: int, wall: float,
              mode: str | None) -> dict[str, Any]:
    """The run's JSON summary (see the module doc)."""
    ok = [r for r in results if r["status"] == 200 and r["error"] is None]
    refused = [r for r in results if r["status"] == 429]
    statuses: dict[str, int] = {}
    kinds: dict[str, dict[str, int]] = {}
    for r in results:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
        kinds.setdefault(r["kind"], {}).setdefault(str(r["status"]), 0)
        kinds[r["kind"]][str(r["status"])] += 1
    by_mode = {m: _stats([r["seconds"] for r in ok if r["mode"] == m]) for m in sorted({r["mode"] for r in ok})}
    over = [r for r in ok if r["budget_s"] is not None and r["seconds"] > r["budget_s"]]
    return {
        "requests": len(results), "not_run": n - len(results), "concurrency": concurrency, "mode": mode or "mixed",
        "wall_s": round(wall, 1), "statuses": statuses, "by_kind": kinds,
        "errors": [r for r in results if r["error"]],
        "accepted": len(ok), "accepted_latency_s_by_mode": by_mode,
        "accepted_over_budget": len(over), "sse_cut_short": sum(r["sse_cut"] for r in ok),
        "worst_budget_use": max((round(r["seconds"] / r["budget_s"], 3) for r in ok if r["budget_s"]), default=None),
        "refused_429": len(refused), "refusal_latency_s": _stats([r["seconds"] for r in refused]),
        "retry_after_s": {"min": min((r["retry_after_s"] or 0 for r in refused), default=None),
                          "max": max((r["retry_after_s"] or 0 for r in refused), default=None)},
        "ran_out_503": statuses.get("503", 0),
        "latency_ok_s": {"p50": _pct([r["seconds"] for r in ok], 0.5), "p95": _pct([r["seconds"] for r in ok], 0.95)},
        "first_byte_ok_s": {"p50": _pct([r["first_byte"] for r in ok], 0.5),
                            "p95": _pct([r["first_byte"] for r in ok], 0.95)},
    }


PROBE_TEXT = "Hi there. This second sentence is longer, so the first one can be heard while it is decoded."


def probe(url: str, n: int, mode: str) -> dict[str, Any]:
    """The official openai client, ``n`` times each: streamed PCM (first byte, total) and a whole WAV (total)."""
    import openai

    client = openai.OpenAI(base_url=url.rstrip("/") + "/v1", api_key="dummy", max_retries=0, timeout=120)
    first, stream_total, wav_total = [], [], []
    for i in range(n):
        t0 = time.perf_counter()
        with client.audio.speech.with_streaming_response.create(
                model="tts-1", voice="alloy", input=PROBE_TEXT, response_format="pcm",
                extra_body={"mode": mode, "seed": i}) as resp:
            for k, _ in enumerate(resp.iter_bytes()):
                if k == 0:
                    first.append(time.perf_counter() - t0)
        stream_total.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        speech = client.audio.speech.create(model="tts-1", voice="alloy", input=PROBE_TEXT, response_format="wav",
                                            extra_body={"mode": mode, "seed": i})
        wav_total.append(time.perf_counter() - t0)
        assert speech.content[:4] == b"RIFF"
    return {"mode": mode, "n": n, "pcm_first_byte_s": {"p50": _pct(first, 0.5), "max": round(max(first), 3)},
            "pcm_total_s": {"p50": _pct(stream_total, 0.5)}, "wav_total_s": {"p50": _pct(wav_total, 0.5)}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m audiopd.serve.loadtest", description=__doc__.split("\n")[0])
    p.add_argument("--url", required=True, help="the server, on the loopback interface only")
    p.add_argument("--requests", type=int, default=None, help="how many (1..2000; default 200)")
    p.add_argument("--concurrency", type=int, default=8, help="clients at once (1..32; default %(default)s)")
    p.add_argument("--max-seconds", type=float, default=1800,
                   help="stop starting requests after this; requests left then count as a failure")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="run for S seconds, however many requests that is (at most --requests, default 2000 then)")
    p.add_argument("--mode", choices=MODES, default=None,
                   help="every synthesis in this mode (default: the mix: auto, some parallel)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pid", type=int, default=None, help="the server's process id, for its peak RSS")
    p.add_argument("--json", default=None, help="also write the summary here")
    p.add_argument("--log", default=None, help="append one JSON line per finished request here")
    p.add_argument("--probe", type=int, default=0, metavar="N",
                   help="first, N sequential requests per mode with the openai client (first-byte latency)")
    args = p.parse_args(argv)
    if args.requests is None:
        args.requests = 2000 if args.duration is not None else 200
    if args.duration is not None:
        if not 0 < args.duration <= 7200:
            p.error("--duration must be in (0, 7200] seconds")
        args.max_seconds = args.duration
    host = urlsplit(args.url).hostname
    if host not in LOOPBACK:
        p.error(f"--url must be on the loopback interface ({', '.join(LOOPBACK)}), got {host!r}")
    if not (1 <= args.requests <= 2000 and 1 <= args.concurrency <= 32 and 0 < args.max_seconds <= 7200):
        p.error("--requests 1..2000, --concurrency 1..32, --max-seconds up to 7200")
    probes = [probe(args.url, min(args.probe, 20), m) for m in ("auto", "parallel")] if args.probe > 0 else []
    summary = asyncio.run(run(args.url, args.requests, args.concurrency, args.max_seconds, args.seed,
                              Path(args.log) if args.log else None, args.mode))
    summary["openai_probe"] = probes
    summary["server_peak_rss_mib"] = peak_rss_mib(args.pid)
    text = json.dumps(summary, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    unfinished = summary["not_run"] and args.duration is None  # with --duration, requests left are expected
    return 0 if not summary["errors"] and not unfinished else 1


if __name__ == "__main__":
    sys.exit(main())
