"""Peers in ``audiopd bench --peers kokoro:af_heart,piper:joe``: timed on the voice's own bench texts.

Each peer (``audiopd.eval.peers``) is loaded once before timing (its load time is reported, never counted),
warmed up with one untimed call, and then timed in the same interleaved rounds as audiopd's modes (parallel,
serial, peer 1, peer 2, parallel, ...), on the same texts and with the same thread count. A peer has no
batching: a batch's texts are synthesized one after another.

Per cell and peer: ``median_s`` (wall), ``audio_s`` (the peer's own audio, which is longer or shorter than
audiopd's for the same text), ``rtf`` = median / its audio seconds, and two ratios against audiopd on the same
text: ``over_parallel`` = peer wall / parallel wall (> 1: parallel is that many times faster end to end) and
``over_serial`` likewise; ``rtf_over_parallel`` compares real-time factors instead (speaking rate factored out).

``audiopd:numpy`` (or ``audiopd:torch``) is the benched voice and speaker itself on that runtime
(``audiopd.load(runtime=...)``), in parallel mode with the bench's seed and steps and no check: the torch-free
path timed in the same rounds as the torch modes and the peers. ``audiopd:float32`` and ``audiopd:bfloat16`` are
the voice on torch at that per-call dtype (``audiopd.model.precision``), to time it against the bench's own.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


# The benched voice as a peer: audiopd:<runtime>, or audiopd:<precision> (torch computing in that dtype).
PRECISION_PEERS = ("float32", "bfloat16")
RUNTIME_PEERS = ("numpy", "torch", *PRECISION_PEERS)


class RuntimePeer:
    """The benched voice's speaker on another runtime (``audiopd:numpy``), answering like a peer."""

    def __init__(self, runtime: str, voice: str, speaker: str | None, *, steps: int | None, seed: int,
                 threads: int) -> None:
        import audiopd

        self.name = f"audiopd:{runtime}"
        how = {"runtime": "torch", "precision": runtime} if runtime in PRECISION_PEERS else {"runtime": runtime}
        self.tts = audiopd.load(voice, **how)
        self.sample_rate = self.tts.sample_rate
        self.speaker, self.steps, self.seed = speaker, steps, seed
        _limit_blas_threads(threads)

    def synthesize(self, text: str):
        from audiopd.eval.peers import PeerAudio

        r = self.tts.synthesize(text, voice=self.speaker, mode="parallel", steps=self.steps, seed=self.seed,
                                check=False)
        return PeerAudio(r.audio, r.sample_rate, None)


def _limit_blas_threads(n: int) -> None:
    """NumPy's BLAS held to the bench's thread count for the rest of the process (threadpoolctl, when installed),
    as torch is. Set once: entering and leaving a limit costs ~1.6 ms, which a timed call would carry."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=n, user_api="blas")


def load_peers(names: str, threads: int, log=None, *, voice: str | Path | None = None, speaker: str | None = None,
               steps: int | None = None, seed: int = 0) -> tuple[dict[str, Any], dict[str, float]]:
    """Load every peer of a ``--peers`` list; returns the peers and each one's load seconds (not timed later).
    ``voice``, ``speaker``, ``steps``, ``seed``: the bench's own, for the ``audiopd:RUNTIME`` peers."""
    from audiopd.errors import AudiopdError
    from audiopd.eval.peers import load_peer, parse_peers

    peers, load_s = {}, {}
    own = [n.strip() for n in names.split(",") if n.strip().startswith("audiopd:")]
    rest = ",".join(n for n in names.split(",") if n.strip() and not n.strip().startswith("audiopd:"))
    if own and not voice:
        raise AudiopdError(f"peer {own[0]!r}: the benched voice was not loaded from an artifact directory")
    for name in own:
        runtime = name.split(":", 1)[1]
        if runtime not in RUNTIME_PEERS:
            raise AudiopdError(f"peer {name!r}: the benched voice runs as "
                               + ", ".join(f"audiopd:{r}" for r in RUNTIME_PEERS))
        t0 = time.perf_counter()
        peers[name] = RuntimePeer(runtime, voice, speaker, steps=steps, seed=seed, threads=threads)
        load_s[name] = round(time.perf_counter() - t0, 3)
        if log is not None:
            log(f"loaded {name} in {load_s[name]:.2f} s")
    for spec in (parse_peers(rest) if rest else []):
        t0 = time.perf_counter()
        peers[spec.name] = load_peer(spec.name, threads=threads)
        load_s[spec.name] = round(time.perf_counter() - t0, 3)
        if log is not None:
            log(f"loaded {spec.name} in {load_s[spec.name]:.2f} s ({threads} thread(s))")
    return peers, load_s


def run_peer(peer: Any, texts: Sequence[str]) -> dict[str, float]:
    """One timed run of a peer over a batch's texts (sequentially)."""
    t0 = time.perf_counter()
    audio_s = 0.0
    for text in texts:
        audio, rate, _ = peer.synthesize(text)
        audio_s += audio.size / rate
    return {"wall_s": time.perf_counter() - t0, "audio_s": audio_s}


def _ratio(a: float, b: float) -> float:
    """a / b to 4 significant digits: a fixed number of decimals would flatten the small ratios (a fast peer
    against the serial decoder reads 0.0076, not 0.008)."""
    return float(f"{a / b:.4g}")


def summarize(runs: list[dict[str, float]], parallel_s: float, serial_s: float,
              parallel_rtf: float | None, parallel_walls: Sequence[float] = ()) -> dict[str, Any]:
    """A peer's figures in one cell. With ``parallel_walls`` (audiopd parallel's timed calls, one per round, in
    the order of ``runs``), ``over_parallel_rounds`` holds the ratio of each round's pair: their min and max say
    how far one call moves the ratio on this machine (single calls spread +-20% on a shared 2-core VM, so a
    ratio of medians is good to about that much; ``samples/measured.md``)."""
    wall = [r["wall_s"] for r in runs]
    med = statistics.median(wall)
    audio = runs[0]["audio_s"]
    rtf = med / audio if audio > 0 else None
    out = {
        "wall_s": [round(w, 4) for w in wall], "median_s": round(med, 4), "audio_s": round(audio, 3),
        "rtf": None if rtf is None else round(rtf, 4),
        "over_parallel": _ratio(med, parallel_s) if parallel_s > 0 else None,
        "over_serial": _ratio(med, serial_s) if serial_s > 0 else None,
        "rtf_over_parallel": _ratio(rtf, parallel_rtf) if rtf and parallel_rtf else None,
    }
    if len(parallel_walls) == len(wall) and all(p > 0 for p in parallel_walls):
        out["over_parallel_rounds"] = [_ratio(w, p) for w, p in zip(wall, parallel_walls)]
    return out


def _range(p: Mapping[str, Any]) -> str:
    rounds = p.get("over_parallel_rounds") or []
    return f" ({min(rounds):.2f}-{max(rounds):.2f})" if len(rounds) > 1 else ""


def markdown_table(report: Mapping[str, Any]) -> str:
    """One row per cell: audiopd's RTFs, then per peer its audio, RTF and wall-time ratio to parallel."""
    names = list(report.get("peers", {}).get("load_s", {}))
    if not names:
        return ""
    head = ["target s", "batch", "audiopd audio s", "RTF parallel", "RTF serial"]
    for name in names:
        head += [f"{name} audio s", f"{name} RTF", f"{name} / parallel", f"{name} / serial"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for c in report["cells"]:
        m = c["modes"]
        row = [f"{c['target_s']:g}", str(c["batch"]), f"{c['audio_s']:.2f}", f"{m['parallel']['rtf']:.3f}",
               f"{m['serial']['rtf']:.3f}"]
        for name in names:
            p = c["peers"][name]
            row += [f"{p['audio_s'] / c['batch']:.2f}", f"{p['rtf']:.3f}", f"{p['over_parallel']:.2f}x{_range(p)}",
                    f"{p['over_serial']:.2f}x"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def print_table(report: Mapping[str, Any]) -> None:
    info = report["peers"]
    print(f"\npeers on the same texts, {info['threads']} thread(s) (load s, not timed: {info['load_s']}); "
          "peer / parallel = peer wall time over parallel's (> 1: audiopd parallel is faster), the median's ratio and "
          "in brackets the lowest and highest of the rounds' paired ratios")
    print(markdown_table(report))
