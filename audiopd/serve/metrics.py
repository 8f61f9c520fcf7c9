"""Prometheus metrics of the server (prometheus-client, the ``serve`` extra), one registry per app."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

# Routes are labelled by name, never by the raw path, so a scan of random paths cannot grow the series.
ROUTE_LABELS = ("/", "/health", "/healthz", "/voices", "/synthesize", "/metrics", "/v1/models", "/v1/voices",
                "/v1/audio/speech")
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("audiopd_http_requests", "HTTP requests answered", ("route", "status"), registry=r)
        self.latency = Histogram("audiopd_http_request_seconds", "Time to the end of the response", ("route",),
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.first_audio = Histogram("audiopd_first_audio_seconds", "Arrival to the first audio byte sent",
                                     buckets=LATENCY_BUCKETS, registry=r)
        self.queue = Gauge("audiopd_requests_admitted", "Synthesis requests decoding or waiting", registry=r)
        self.queued_work = Gauge("audiopd_queued_work_seconds", "Expected worker seconds of the admitted requests",
                                 registry=r)
        self.refused = Counter("audiopd_requests_refused", "Synthesis requests refused (queue_full, busy: at "
                               "admission; time_budget: ran out after admission)", ("reason",), registry=r)
        self.pieces = Counter("audiopd_pieces", "Sentences spoken, by decoding path and verdict",
                              ("path", "verdict"), registry=r)
        self.yielded = Counter("audiopd_escalations_yielded", "Sentences whose failed check was not escalated "
                               "further, so that the requests queued behind end within their budgets", registry=r)
        self.synth_seconds = Counter("audiopd_synthesis_seconds", "Worker time spent speaking", registry=r)
        self.audio_seconds = Counter("audiopd_audio_seconds", "Seconds of audio produced", registry=r)
        self.loaded = Gauge("audiopd_voice_loaded", "1 once the voice is loaded", registry=r)

    @staticmethod
    def route(path: str) -> str:
        path = path.rstrip("/") or "/"
        return path if path in ROUTE_LABELS else "/static" if path.startswith("/static/") else "other"

    def observe_request(self, path: str, status: int, seconds: float) -> None:
        route = self.route(path)
        self.requests.labels(route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def observe_piece(self, piece: Any, seconds: float, sample_rate: int) -> None:
        self.pieces.labels(piece.report.get("mode", "?"), piece.verdict).inc()
        if piece.report.get("escalation_yielded"):
            self.yielded.inc()
        self.synth_seconds.inc(seconds)
        self.audio_seconds.inc(piece.audio.size / sample_rate)

    def render(self) -> bytes:
        return generate_latest(self.registry)
