"""Names a package loads on first use (PEP 562), so importing it stays light: ``audiopd`` (the facade imports
torch), ``audiopd.model`` and ``audiopd.decoding`` (the networks and decoders import torch; their configs do not,
and the torch-free runtime ``audiopd.lite`` imports those)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: name -> the module that defines it; each name is imported once and
    then kept in the package's namespace."""

    def __getattr__(name: str) -> Any:
        if name in homes:
            value = getattr(importlib.import_module(homes[name]), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
