"""Decode speed of a codec's decoders, side by side on the same token grids.

Issue 22's bar is a decode RTF (wall seconds per audio second) at 2 threads. A figure timed alone moves with
whatever else the machine runs, so the decoders are timed in interleaved rounds (each round decodes every grid
once with each decoder, the order rotating from round to round) and the ratios are taken round by round, then
their median: a slow spell hits both sides of a ratio alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np

from audiopd.codec.base import Codec


def decode_speed(codec: Codec, grids: Sequence[np.ndarray], decoders: Sequence[str], *, rounds: int = 5,
                 warmup: int = 1, clock: Callable[[], float] = time.perf_counter) -> dict:
    """Time ``codec.decode`` of every grid (``[Q, T]`` codes each) with each of ``decoders``, ``rounds`` times.

    Returns ``{"audio_seconds", "rounds", "decoders": {name: {"rtf_median", "rtf_min", "rtf_max"}},
    "ratios": {name: median over rounds of (name's seconds / the first decoder's)}}``; ``warmup`` untimed rounds
    come first (allocators settle). An unknown decoder is the codec's ``ArtifactError``, raised before any timing.
    The codec's own decoder choice is restored afterwards."""
    if not grids:
        raise ValueError("decode_speed needs at least one token grid")
    if not decoders or len(set(decoders)) != len(decoders):
        raise ValueError(f"decoders must be distinct names, got {list(decoders)}")
    if rounds < 1 or warmup < 0:
        raise ValueError(f"rounds must be >= 1 and warmup >= 0, got {rounds} and {warmup}")
    frames = sum(int(np.asarray(g).shape[-1]) for g in grids)
    audio_seconds = frames / codec.frame_rate
    before = codec.decoder
    seconds: dict[str, list[float]] = {d: [] for d in decoders}
    try:
        for name in decoders:  # the codec's own check (ArtifactError for an unknown name) and loads, before timing
            codec.select_decoder(name)
        for r in range(warmup + rounds):
            order = [decoders[(r + i) % len(decoders)] for i in range(len(decoders))]
            for name in order:
                codec.select_decoder(name)
                t = clock()
                for g in grids:
                    codec.decode(np.asarray(g)[None])
                if r >= warmup:
                    seconds[name].append(clock() - t)
    finally:
        codec.select_decoder(before)
    first = decoders[0]
    return {
        "audio_seconds": round(audio_seconds, 3),
        "rounds": rounds,
        "decoders": {d: {"rtf_median": round(statistics.median(s) / audio_seconds, 5),
                         "rtf_min": round(min(s) / audio_seconds, 5),
                         "rtf_max": round(max(s) / audio_seconds, 5)} for d, s in seconds.items()},
        "ratios": {d: round(statistics.median(a / max(b, 1e-12) for a, b in zip(s, seconds[first])), 3)
                   for d, s in seconds.items()},
    }


def markdown_table(result: dict, threads: int) -> str:
    """The speed result as a markdown table, one row per decoder."""
    first = next(iter(result["decoders"]))
    lines = [f"Decode speed, {threads} thread(s), {result['audio_seconds']} s of audio, {result['rounds']} "
             f"interleaved rounds", "",
             f"| decoder | RTF median | RTF min-max | time / {first} (median of rounds) |", "|---|---|---|---|"]
    for name, d in result["decoders"].items():
        lines.append(f"| {name} | {d['rtf_median']} | {d['rtf_min']}-{d['rtf_max']} | {result['ratios'][name]} |")
    return "\n".join(lines) + "\n"
