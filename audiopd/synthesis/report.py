"""Torch-free helpers for verdicts and reports, so `audiopd check` never pays for importing torch."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np


def verdict_to_dict(verdict: Any) -> dict[str, Any]:
    """A checker verdict (object with to_dict(), dataclass or mapping) -> plain dict for reports.

    Guarantees the keys the renderer relies on: passed (bool), score (float), reasons (list of
    str) and bad_spans (list of (start_s, end_s) float pairs); everything else is passed through.
    """
    if hasattr(verdict, "to_dict"):
        d = dict(verdict.to_dict())
    elif dataclasses.is_dataclass(verdict) and not isinstance(verdict, type):
        d = dataclasses.asdict(verdict)
    elif isinstance(verdict, dict):
        d = dict(verdict)
    else:
        raise TypeError(f"checker returned {type(verdict).__name__}, not a verdict")
    d["passed"] = bool(d.get("passed", False))
    d["score"] = float(d.get("score", 0.0))
    d["reasons"] = [str(r) for r in d.get("reasons", [])]
    d["bad_spans"] = [(float(a), float(b)) for a, b in d.get("bad_spans") or []]
    return d


def _plain(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def report_json(report: dict[str, Any]) -> str:
    """A report or verdict dict as indented JSON (numpy scalars/arrays and tuples made plain)."""
    return json.dumps(report, indent=2, default=_plain) + "\n"
