"""Frozen, typed dataclass configs loaded from YAML or TOML with strict keys.

Unknown keys are an error, not a silent default: a typo in a config must never train or ship a
different model than the one its author meant.
"""

from __future__ import annotations

import dataclasses
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from audiopd.errors import ArtifactError

T = TypeVar("T")


def from_dict(cls: type[T], data: dict[str, Any], *, where: str = "config") -> T:
    """Build dataclass ``cls`` from ``data``, recursing into nested dataclasses; reject unknown keys."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    if not isinstance(data, dict):
        raise ArtifactError(f"{where}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ArtifactError(f"{where}: unknown key(s) {', '.join(unknown)} for {cls.__name__}")
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        kwargs[name] = _coerce(hints[name], value, where=f"{where}.{name}")
    try:
        return cls(**kwargs)
    except TypeError as exc:  # missing required keys
        raise ArtifactError(f"{where}: {exc}") from None


def _coerce(hint: Any, value: Any, *, where: str) -> Any:
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, value, where=where)
    if origin is tuple and isinstance(value, (list, tuple)):
        args = typing.get_args(hint)
        inner = args[0] if args else Any
        return tuple(_coerce(inner, v, where=where) for v in value)
    if origin in (typing.Union, types.UnionType):
        return value
    if hint in (bool, int, float, str):
        # YAML gives every scalar a type; a wrong one (max_steps: 2.5, asr: true) is a typo to report
        # here, not a value to fail on later. bool is a subclass of int, so it is told apart first.
        ok = (isinstance(value, bool) if hint is bool
              else isinstance(value, (int, float)) and not isinstance(value, bool) if hint is float
              else isinstance(value, hint) and not isinstance(value, bool))
        if not ok:
            raise ArtifactError(f"{where} must be {hint.__name__}, got {value!r}")
        return float(value) if hint is float else value
    return value


def to_dict(obj: Any) -> dict[str, Any]:
    """Plain-data view of a config dataclass (tuples become lists) for YAML/JSON."""

    def plain(v: Any) -> Any:
        if isinstance(v, tuple):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return {k: plain(v) for k, v in dataclasses.asdict(obj).items()}


def load_config(cls: type[T], path: str | Path) -> T:
    """Load a YAML (``.yaml``/``.yml``) or TOML (``.toml``) file into dataclass ``cls``."""
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"config file not found: {path}")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        data = tomllib.loads(text)
    else:
        data = yaml.safe_load(text) or {}
    return from_dict(cls, data, where=str(path))
