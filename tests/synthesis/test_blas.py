"""The torch facade's checker runs with NumPy's BLAS on one thread (audiopd/synthesis/blas.py says why)."""

from __future__ import annotations

import numpy as np
import pytest

import audiopd
from audiopd.synthesis.blas import one_blas_thread

threadpoolctl = pytest.importorskip("threadpoolctl", reason="threadpoolctl is a dependency; absent, nothing limits")


def _blas_threads() -> set[int]:
    """Thread counts of the BLAS libraries of NumPy and SciPy (what the checker's code runs on); another package's
    BLAS loaded later in the test session is none of the checker's business."""
    return {i["num_threads"] for i in threadpoolctl.threadpool_info()
            if i["user_api"] == "blas" and ("numpy" in i["filepath"] or "scipy" in i["filepath"])}


def test_one_blas_thread_inside_and_the_limit_restored_after() -> None:
    np.ones((64, 64)) @ np.ones((64, 64))  # NumPy's BLAS loaded
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        before = _blas_threads()
        if not before:
            pytest.skip("this NumPy links no BLAS that threadpoolctl can see")
        with one_blas_thread():
            assert _blas_threads() == {1}
        assert _blas_threads() == before


def test_the_facade_checks_with_one_blas_thread_and_decodes_with_the_rest() -> None:
    seen: list[set[int]] = []

    def checker(audio, sample_rate, text, **kw):
        seen.append(_blas_threads())
        return {"passed": True, "score": 1.0, "reasons": [], "bad_spans": []}

    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        if not _blas_threads():
            pytest.skip("this NumPy links no BLAS that threadpoolctl can see")
        tts = audiopd.load()
        tts.checker = checker
        result = tts.synthesize("Hello there.", mode="auto", seed=0)
        assert result.report["check"]["passed"] and seen == [{1}]
        assert _blas_threads() == {2}
