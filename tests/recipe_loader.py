"""Load a recipe's stage script (its file name starts with a digit, so it cannot be imported by name)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

RECIPES = Path(__file__).resolve().parents[1] / "recipes"


def load_stage(recipe: str, filename: str, name: str) -> ModuleType:
    """``recipes/<recipe>/<filename>`` as module ``name`` (registered first: dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, RECIPES / recipe / filename)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
