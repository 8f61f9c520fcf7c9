"""The loopback load test script against the tiny voice: every request answered as its kind expects."""

from __future__ import annotations

import pytest

from audiopd.serve import loadtest

pytest.importorskip("httpx", reason="httpx is in the serve and dev extras")


def test_a_small_mixed_load_has_no_errors(server) -> None:
    summary = loadtest.asyncio.run(loadtest.run(server.url, 40, 8, 120, seed=1))
    assert summary["requests"] == 40 and not summary["errors"], summary["errors"]
    assert summary["statuses"]["200"] >= 25 and {"400", "403", "415"} <= set(summary["statuses"])
    assert summary["latency_ok_s"]["p50"] <= summary["latency_ok_s"]["p95"]


def test_only_loopback_and_bounded_runs(capsys) -> None:
    with pytest.raises(SystemExit):
        loadtest.main(["--url", "http://example.com:8000/"])
    assert "loopback" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        loadtest.main(["--url", "http://127.0.0.1:8000/", "--requests", "100000"])


def test_the_mix_has_pathological_requests() -> None:
    kinds = {r["kind"] for r in loadtest.make_requests(200, seed=0)}
    assert {"huge-seed", "deep-nesting", "foreign-origin", "speed-0.25", "200-digits", "nonsense"} <= kinds
