"""Codec registry: a codec artifact's ``config.yaml`` names its ``kind``; the kind names an adapter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from audiopd import artifacts
from audiopd.codec.base import Codec
from audiopd.errors import ArtifactError

DEFAULT_CODEC = "world16k"

# kind -> factory(artifact_dir, config_dict) -> Codec. Adapters register lazily so that importing
# audiopd never imports optional backends (EnCodec needs torchaudio).
_FACTORIES: dict[str, Callable[[Path, dict], Codec]] = {}


def register(kind: str) -> Callable[[Callable[[Path, dict], Codec]], Callable[[Path, dict], Codec]]:
    def deco(fn: Callable[[Path, dict], Codec]) -> Callable[[Path, dict], Codec]:
        _FACTORIES[kind] = fn
        return fn

    return deco


def _ensure_builtin(kind: str) -> None:
    if kind in _FACTORIES:
        return
    if kind == "world":
        import audiopd.codec.world  # noqa: F401  (registers "world")
    elif kind == "encodec":
        import audiopd.codec.encodec_adapter  # noqa: F401  (registers "encodec")
    elif kind == "fixture":
        import audiopd.codec.fixture  # noqa: F401


def load_codec(name: str = DEFAULT_CODEC) -> Codec:
    """Load a codec by artifact name (``codecs/<name>``) or directory path; verifies checksums."""
    directory = artifacts.find_artifact("codecs", name)
    try:
        cfg = yaml.safe_load((directory / "config.yaml").read_text())
    except yaml.YAMLError as exc:
        raise ArtifactError(f"{directory}/config.yaml is not valid YAML: {exc}") from None
    if not isinstance(cfg, dict) or "kind" not in cfg:
        raise ArtifactError(f"{directory}/config.yaml has no 'kind'")
    kind = cfg["kind"]
    _ensure_builtin(kind)
    if kind not in _FACTORIES:
        raise ArtifactError(f"{directory}: unknown codec kind {kind!r} (known: {', '.join(sorted(_FACTORIES))})")
    artifacts.verify_checksums(directory)
    return _FACTORIES[kind](directory, cfg)


def available_codecs() -> list[str]:
    return artifacts.available("codecs")
