"""The loopback load test script against the tiny voice: every request answered as its kind expects."""

from __future__ import annotations

import time

import pytest
from serve_fixtures import engine, passing_checker

from audiopd.serve import loadtest

pytest.importorskip("httpx", reason="httpx is in the serve and dev extras")


def test_a_small_mixed_load_has_no_errors(server) -> None:
    summary = loadtest.asyncio.run(loadtest.run(server.url, 40, 8, 120, seed=1))
    assert summary["requests"] == 40
    assert not summary["errors"], [(e["kind"], e["status"], e["error"]) for e in summary["errors"]]
    assert summary["statuses"]["200"] >= 25 and {"400", "403", "415"} <= set(summary["statuses"])
    assert summary["latency_ok_s"]["p50"] <= summary["latency_ok_s"]["p95"]
    by_mode = summary["accepted_latency_s_by_mode"]
    assert set(by_mode) == {"auto", "parallel"} and sum(m["n"] for m in by_mode.values()) == summary["accepted"]
    assert summary["accepted_over_budget"] == 0 and summary["sse_cut_short"] == 0
    assert 0 < summary["worst_budget_use"] < 1
    counters = summary["server_counters"]  # the server's own counts: every accepted sentence passed its check
    assert counters["escalations_yielded_total"] == 0.0
    spoken = {k: v for k, v in counters.items() if k.startswith("pieces_total")}
    assert sum(spoken.values()) >= summary["accepted"] and not any("failed" in k for k in spoken), spoken


def test_a_busy_server_refuses_at_once_and_the_run_reports_it(start_server, synth) -> None:
    """Checks of 0.15 s a sentence and a 2 s budget: 8 clients overfill the queue; the polite clients wait."""
    def slow_checker(audio, sample_rate, text, **kw):
        time.sleep(0.15)
        return passing_checker(audio, sample_rate, text)

    synth.checker = slow_checker
    server = start_server(engine=engine(budget_base_s=2.0, budget_per_char_s=0.0))
    summary = loadtest.asyncio.run(loadtest.run(server.url, 40, 8, 60, seed=2, mode="auto"))
    assert not summary["errors"], [(e["kind"], e["status"], e["error"]) for e in summary["errors"]]
    seen = {k: summary[k] for k in ("statuses", "refusal_latency_s", "retry_after_s", "accepted_latency_s_by_mode")}
    assert summary["refused_429"] > 0 and summary["accepted"] > 0, seen
    assert summary["refusal_latency_s"]["max"] < 1.0 and summary["retry_after_s"]["min"] >= 1, seen
    assert set(summary["accepted_latency_s_by_mode"]) == {"auto"}


def test_a_refusal_without_retry_after_is_an_error() -> None:
    base = {"kind": "short", "mode": "auto", "seconds": 0.01, "first_byte": 0.01, "bytes": 10, "budget_s": None,
            "sse_cut": False, "error": None}
    results = [{**base, "status": 429, "retry_after_s": 2},
               {**base, "status": 200, "retry_after_s": None, "seconds": 12.0, "budget_s": 10.0}]
    summary = loadtest.summarize(results, n=2, concurrency=1, wall=1.0, mode=None)
    assert summary["refused_429"] == 1 and summary["accepted_over_budget"] == 1 and summary["worst_budget_use"] == 1.2


def test_only_loopback_and_bounded_runs(capsys) -> None:
    with pytest.raises(SystemExit):
        loadtest.main(["--url", "http://example.com:8000/"])
    assert "loopback" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        loadtest.main(["--url", "http://127.0.0.1:8000/", "--requests", "100000"])
    with pytest.raises(SystemExit):
        loadtest.main(["--url", "http://127.0.0.1:8000/", "--duration", "0"])
    with pytest.raises(SystemExit):
        loadtest.main(["--url", "http://127.0.0.1:8000/", "--mode", "fast"])


def test_the_mix_has_pathological_requests() -> None:
    kinds = {r["kind"] for r in loadtest.make_requests(200, seed=0)}
    assert {"huge-seed", "deep-nesting", "foreign-origin", "speed-0.25", "200-digits", "nonsense"} <= kinds


def test_a_mode_applies_to_every_synthesis() -> None:
    requests = loadtest.make_requests(100, seed=0, mode="serial")
    spoken = [r for r in requests if isinstance(r["body"], dict) and ("text" in r["body"] or "input" in r["body"])]
    assert len(spoken) > 80 and all(r["body"]["mode"] == "serial" == r["mode"] for r in spoken)
    assert not any("steps" in r["body"] for r in spoken)  # K is parallel mode's
    assert {r["mode"] for r in loadtest.make_requests(100, seed=0)} >= {"auto", "parallel"}
