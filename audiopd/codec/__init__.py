"""Pluggable codecs behind one interface (``Codec``), found by name through a small registry."""

from audiopd.codec.base import Codec
from audiopd.codec.registry import DEFAULT_CODEC, available_codecs, load_codec, register

__all__ = ["Codec", "DEFAULT_CODEC", "available_codecs", "load_codec", "register"]
