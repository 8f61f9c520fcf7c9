"""audiopd.lite: the torch-free inference path (NumPy), for a one-off synthesis from a cold process.

Importing torch costs ~2.5 s on a 2-core machine, several times a short sentence's whole synthesis. This package
runs the same shipped weights with NumPy alone: the voice's conditioner and masked model, the parallel decoding loop,
the codec's fast decoder and the checker's phone recogniser. Torch stays the reference (training, span repair, the
serial decoder); tests/lite compares every part against it.
"""

from audiopd.errors import AudiopdError

# audiopd.load(runtime=...): torch, this NumPy path alone, or NumPy with torch for what it does not serve.
RUNTIMES = ("torch", "numpy", "auto")


class LiteUnsupported(AudiopdError):
    """A request or artifact the NumPy path does not serve (serial decoding, repair, the thorough checker, a decoder
    other than the mel codec's fast one): ``runtime="auto"`` hands it to torch, ``runtime="numpy"`` refuses it."""
