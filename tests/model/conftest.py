"""Model test setup (helpers live in model_fixtures.py)."""

from __future__ import annotations
