"""NumPy's BLAS held to one thread while torch decodes in the same process (the torch facade's checker).

Two thread pools on two cores fight: torch's OpenMP workers spin for a while after each parallel region, and
NumPy's OpenBLAS workers spin after each GEMM. In the torch facade the checker's recogniser (NumPy GEMMs,
``audiopd.lite.recognizer``) runs between torch's decoding passes, so with OpenBLAS at two threads each side
found the other's threads still spinning. Measured on the project's 2-core machine (the natural voice, parallel
and auto calls interleaved, medians of 11 calls, two processes each way, samples/measured.md): a parallel call
of 1 s took 105-120 ms after an auto call, 35-38 ms with the checker on one BLAS thread; auto mode at 1 s took
53-58 ms, now 42-43. The checker alone costs 7.0 ms at two BLAS threads and 8.2 ms at one when nothing else
runs.

threadpoolctl (a dependency) sets the limit; its controller is built once, as a fresh ``threadpool_limits``
rescans the loaded libraries (~1.6 ms a call) where entering and leaving ``ThreadpoolController.limit`` costs
~11 us.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any


@functools.lru_cache(maxsize=1)
def _controller() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # an environment without it runs as before, two BLAS threads and all
        return None
    # A controller sees the libraries loaded when it is built: NumPy's OpenBLAS and SciPy's own (the checker
    # resamples with scipy.signal), so both are loaded first.
    import numpy  # noqa: F401
    import scipy.signal  # noqa: F401

    return ThreadpoolController()


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """NumPy's BLAS on one thread inside the block, the previous limit restored after it."""
    ctl = _controller()
    if ctl is None:
        yield
        return
    with ctl.limit(limits=1, user_api="blas"):
        yield
