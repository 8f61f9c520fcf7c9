"""Codec registry: a codec artifact's ``config.yaml`` names its ``kind``; the kind names an adapter."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import yaml

from audiopd import artifacts
from audiopd.codec.base import Codec
from audiopd.errors import ArtifactError

DEFAULT_CODEC = "world16k"

Factory = Callable[[Path, dict], Codec]

# The built-in adapters, by kind: each module defines ``load_artifact(directory, config) -> Codec``. Imported only
# when an artifact names its kind, so importing audiopd never imports an optional backend (EnCodec needs
# torchaudio), and the adapters need not import this registry.
_BUILTIN: dict[str, str] = {
    "world": "audiopd.codec.world",
    "mel": "audiopd.codec.mel",
    "encodec": "audiopd.codec.encodec_adapter",
    "fixture": "audiopd.codec.fixture",
}
# Kinds added by other packages through ``register``.
_REGISTERED: dict[str, Factory] = {}


def register(kind: str) -> Callable[[Factory], Factory]:
    """Decorator for a third-party adapter: ``@register("mykind") def load(directory, config) -> Codec``."""
    if kind in _BUILTIN:
        raise ValueError(f"codec kind {kind!r} is built in")

    def deco(fn: Factory) -> Factory:
        _REGISTERED[kind] = fn
        return fn

    return deco


def _factory(kind: object) -> Factory | None:
    if not isinstance(kind, str):
        return None
    if kind in _BUILTIN:
        return importlib.import_module(_BUILTIN[kind]).load_artifact
    return _REGISTERED.get(kind)


def read_codec_config(name: str | Path) -> tuple[Path, dict]:
    """A codec artifact's directory (``artifacts.find_artifact``) and its config.yaml as a mapping with a ``kind``;
    checksums are the caller's to verify once it knows the kind (``load_codec``, ``audiopd.lite.vocoder``)."""
    directory = artifacts.find_artifact("codecs", name)
    try:
        cfg = yaml.safe_load((directory / "config.yaml").read_text())
    except yaml.YAMLError as exc:
        raise ArtifactError(f"{directory}/config.yaml is not valid YAML: {exc}") from None
    if not isinstance(cfg, dict) or "kind" not in cfg:
        raise ArtifactError(f"{directory}/config.yaml has no 'kind'")
    return directory, cfg


def load_codec(name: str | Path = DEFAULT_CODEC, *, decoder: str | None = None) -> Codec:
    """Load a codec by shipped artifact name or directory path (``artifacts.find_artifact``); verifies checksums.

    ``decoder`` picks how tokens become audio (``Codec.decoders``; None = the codec's default); an unknown name is
    an ``ArtifactError`` listing the known ones."""
    directory, cfg = read_codec_config(name)
    kind = cfg["kind"]
    factory = _factory(kind)
    if factory is None:
        known = ", ".join(sorted({*_BUILTIN, *_REGISTERED}))
        raise ArtifactError(f"{directory}: unknown codec kind {kind!r} (known: {known})")
    artifacts.verify_checksums(directory)
    return factory(directory, cfg).select_decoder(decoder)


def available_codecs() -> list[str]:
    return artifacts.available("codecs")


def add_decoder_argument(parser) -> None:
    """``--decoder`` of every command that synthesises (argparse; torch-free, so ``--help`` stays light)."""
    parser.add_argument("--decoder", default=None, metavar="NAME", help="how the codec turns tokens into audio, "
                        "e.g. hq or fast for a mel codec (default: the codec's own; recorded in the report)")
