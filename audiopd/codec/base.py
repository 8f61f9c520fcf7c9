"""The one codec interface: audio <-> a grid of discrete tokens ``codes[B, Q, T]``.

Level 0 is the coarse level (timing, pitch, energy, broad envelope); higher levels refine
detail (residual VQ, as in SoundStream/EnCodec). The model only ever sees ``num_codebooks`` (Q),
``cardinality`` and ``frame_rate``; everything else stays behind this interface.
"""

from __future__ import annotations

import abc

import numpy as np


class Codec(abc.ABC):
    """Abstract codec. Adapters implement ``_encode``/``_decode`` on validated arrays."""

    name: str
    sample_rate: int
    frame_rate: float
    num_codebooks: int
    cardinality: int
    # What the tokens mean: a digest of everything the decoder maps tokens through (codebooks, bin
    # tables). Two codecs with equal digests decode any grid alike; a voice records the digest of the
    # codec it was exported with, and loading it with other tables fails instead of speaking noise.
    # "" = the adapter cannot say (no check).
    token_fingerprint: str = ""
    # True when ``decode`` may run on several threads at once and does its heavy work outside the GIL
    # (thread-safe, no torch intra-op pool of its own): the renderer then decodes the chunks of a batch side
    # by side on the cores that token decoding just used. False = one after another.
    concurrent_decode: bool = False
    # The ways this codec can turn tokens into audio, and the one ``decode`` uses now. A decoder never changes
    # what tokens mean (the fingerprint leaves it out), only how they are rendered: a quality/speed choice made at
    # load time (``load_codec(name, decoder=...)``) and recorded in every synthesis report.
    decoders: tuple[str, ...] = ("default",)
    decoder: str = "default"

    def encode(self, audio: np.ndarray) -> np.ndarray:
        """Audio ``[S]`` or ``[B, S]`` float at ``sample_rate`` -> int64 codes ``[B, Q, T]``."""
        x = np.asarray(audio, dtype=np.float32)
        if x.ndim == 1:
            x = x[None]
        if x.ndim != 2 or x.shape[1] == 0:
            raise ValueError(f"expected audio of shape [S] or [B, S] with S > 0, got {tuple(x.shape)}")
        codes = self._encode(x)
        assert codes.ndim == 3 and codes.shape[1] == self.num_codebooks
        return codes.astype(np.int64)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Codes ``[B, Q', T]`` (or ``[Q', T]``) with ``1 <= Q' <= Q`` -> float32 audio ``[B, S]``.

        Passing fewer levels than ``num_codebooks`` decodes from the coarsest ``Q'`` levels only,
        which is how the level-vs-quality table is measured.
        """
        return self._decode(self._checked(codes)).astype(np.float32)

    def _checked(self, codes: np.ndarray) -> np.ndarray:
        c = np.asarray(codes)
        if c.ndim == 2:
            c = c[None]
        if c.ndim != 3 or not 1 <= c.shape[1] <= self.num_codebooks:
            raise ValueError(
                f"expected codes [B, Q', T] with 1 <= Q' <= {self.num_codebooks}, got {tuple(c.shape)}"
            )
        if c.size and (c.min() < 0 or c.max() >= self.cardinality):
            raise ValueError(f"codes out of range [0, {self.cardinality})")
        return c.astype(np.int64)

    def decode_split(self, codes: np.ndarray, parts: int) -> np.ndarray:
        """Codes ``[Q', T]`` of one item -> float32 audio ``[S]``, as ``decode``, with the work split into up
        to ``parts`` pieces run side by side where the adapter can (``_decode_split``; else one piece).

        For a renderer with one item to decode and idle cores. The audio may differ from ``decode``'s in
        detail (the adapter documents how) but not in length.
        """
        if np.ndim(codes) != 2:
            raise ValueError(f"expected codes [Q', T] of one item, got {tuple(np.shape(codes))}")
        c = self._checked(codes)
        if parts <= 1:
            return self._decode(c)[0].astype(np.float32)
        return self._decode_split(c[0], parts).astype(np.float32)

    def _decode_split(self, codes: np.ndarray, parts: int) -> np.ndarray:
        return self._decode(codes[None])[0]

    def select_decoder(self, name: str | None) -> Codec:
        """Make ``name`` the decoder ``decode`` uses (None = keep the codec's default); an unknown name is an
        ``ArtifactError`` listing the known ones."""
        if name is None:
            return self
        if name not in self.decoders:
            from audiopd.errors import ArtifactError

            raise ArtifactError(f"codec {self.name!r} has no decoder {name!r} (known: {', '.join(self.decoders)})")
        self._select_decoder(name)
        self.decoder = name
        return self

    def _select_decoder(self, name: str) -> None:
        """Adapter hook: prepare decoder ``name`` (load its weights) before it becomes the current one."""

    def smoothed(self, frames: float) -> Codec:
        """This codec, decoding with a blur of ``frames`` (a Gaussian's sigma) over time before its vocoder: a
        decode-time choice like the decoder, never a change of what tokens mean. A voice asks for it per speaker
        (``VoiceInfo.smooth_frames``); an adapter that cannot blur raises ``ArtifactError``."""
        from audiopd.errors import ArtifactError

        raise ArtifactError(f"codec {self.name!r} ({type(self).__name__}) has no decode-time smoothing")

    def refined(self, refine) -> Codec:
        """This codec, passing each decoded grid's intermediate representation through ``refine`` before its
        vocoder: a voice's learnt correction of its own tokens (``audiopd.model.refiner``), per speaker. An adapter
        with no such representation raises ``ArtifactError``."""
        from audiopd.errors import ArtifactError

        raise ArtifactError(f"codec {self.name!r} ({type(self).__name__}) cannot apply a voice's refiner")

    def num_frames(self, num_samples: int) -> int:
        """Frames produced for ``num_samples`` of audio."""
        return int(np.ceil(num_samples * self.frame_rate / self.sample_rate))

    @abc.abstractmethod
    def _encode(self, audio: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _decode(self, codes: np.ndarray) -> np.ndarray: ...

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, sample_rate={self.sample_rate}, "
            f"frame_rate={self.frame_rate}, Q={self.num_codebooks}, cardinality={self.cardinality})"
        )
