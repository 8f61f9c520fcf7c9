"""HTTP server test setup (helpers and fixtures live in serve_fixtures.py)."""

from __future__ import annotations

from serve_fixtures import server, start_server, synth  # noqa: F401  (fixtures)
