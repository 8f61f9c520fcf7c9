"""Opt-in wall-clock spans for a per-stage cost breakdown (``audiopd bench --stages``).

Code marks a stage with ``with span(FRONTEND): ...``. Nothing is recorded unless a caller has opened
``collect()`` on the same thread: ``span`` then costs one context-variable read and returns a shared no-op, so
the marks stay in the code users run. While collecting, each span adds its *self* time (its duration minus the
spans opened inside it) under its name, so nested spans never count twice, and the collecting block's own
remainder lands under ``OTHER``: the names' sum is exactly the block's wall time.

Only the thread that opened ``collect()`` records. Work a thread pool does for it (the renderer decoding several
chunks side by side) is charged to the span that waits for the pool, which is what it costs on the wall clock.
Spans measure the CPU's wall clock; on a GPU an asynchronous kernel would be charged to whichever span waits for it.
Torch-free, so light commands may import it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# Stage names, in the order a synthesis runs them (``audiopd.eval.bench_stages`` prints rows in this order).
FRONTEND = "text frontend"  # chunking, normalising, phonemizing (audiopd.text)
DURATIONS = "conditioning: durations"  # encoder + duration model, once per chunk (the facade's length check)
CONDITION = "conditioning: frames"  # encoder + length regulation of each decoder batch, durations given
LEVEL0 = "level-0 passes"  # the masked decoder's iterative coarse passes (decode_level0)
SERIAL_LEVEL0 = "serial level-0"  # the serial decoder's frame-by-frame coarse level
FINE = "fine passes"  # levels 1..Q-1 (refine_fine_levels), either decoder
CODEC_LOOKUP = "codec: mel lookup"  # summing the RVQ codewords into log-mel frames
CODEC_REFINE = "codec: voice's mel refiner"  # audiopd.model.refiner, where the voice ships one
CODEC_NET = "codec: vocoder net"  # the fast vocoder's ConvNeXt trunk and head layer
CODEC_HARMONIC = "codec: harmonic head"  # F0/voicing/envelope/noise -> magnitude comb and harmonic phase
CODEC_POSTFILTER = "codec: postfilter"  # fine-structure sharpening of the magnitude
CODEC_PHASE = "codec: Griffin-Lim phase"  # fast Griffin-Lim iterations
CODEC_ISTFT = "codec: iSTFT"  # the final inverse STFT
CODEC_VOCODER = "codec: vocoder, rest"  # the vocoder module beyond the parts above (all of hq's HiFi-GAN)
CODEC = "codec: decode, rest"  # the renderer's decode beyond the parts above (numpy glue, peak limit)
CHECKER = "checker"  # auto mode's verdict on every attempt
JOINS = "chunk joins"  # faded pauses between a text's chunks (audiopd.synthesis.join)
WRITE = "write WAV"  # the delivered audio as 16-bit WAV bytes (audiopd.audio.audio_bytes)
OTHER = "other"  # what no span above covers: option checks, batching, attempt bookkeeping, the report

ORDER = (FRONTEND, DURATIONS, CONDITION, LEVEL0, SERIAL_LEVEL0, FINE, CODEC_LOOKUP, CODEC_REFINE, CODEC_NET,
         CODEC_HARMONIC, CODEC_POSTFILTER, CODEC_PHASE, CODEC_ISTFT, CODEC_VOCODER, CODEC, CHECKER, JOINS, WRITE, OTHER)


class StageTimes:
    """Seconds of self time per stage name, and the collecting block's wall time (``total``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.total = 0.0
        self._thread = threading.get_ident()
        self._stack: list[_Span] = []


class _Span:
    __slots__ = ("times", "name", "start", "inner")

    def __init__(self, times: StageTimes, name: str) -> None:
        self.times, self.name = times, name

    def __enter__(self) -> None:
        self.inner = 0.0  # seconds of the spans opened inside this one
        self.times._stack.append(self)
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> bool:
        took = time.perf_counter() - self.start
        stack = self.times._stack
        stack.pop()
        self.times.seconds[self.name] = self.times.seconds.get(self.name, 0.0) + took - self.inner
        if stack:
            stack[-1].inner += took
        return False


class _NoSpan:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


_OFF = _NoSpan()
_CURRENT: ContextVar[StageTimes | None] = ContextVar("audiopd_stage_times", default=None)


def span(name: str) -> _Span | _NoSpan:
    """A context manager charging the wall time inside it to ``name`` while ``collect()`` is open on this thread."""
    times = _CURRENT.get()
    # A context copied into another thread (asyncio.to_thread does so) must not write into this stack.
    if times is None or times._thread != threading.get_ident():
        return _OFF
    return _Span(times, name)


@contextmanager
def collect() -> Iterator[StageTimes]:
    """Record the spans run inside this block; afterwards ``seconds`` sums to ``total`` (the rest under OTHER)."""
    times = StageTimes()
    token = _CURRENT.set(times)
    try:
        with _Span(times, OTHER):  # the root: its self time is whatever no other span covered
            yield times
    finally:
        _CURRENT.reset(token)
        times.total = sum(times.seconds.values())  # = the root's duration, self times adding up
