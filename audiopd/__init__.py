"""audiopd: offline text-to-speech on codec tokens with parallel decoding."""

from audiopd.errors import ArtifactError, AudioInputError, AudiopdError, NothingToSpeakError

__version__ = "0.1.0"

__all__ = [
    "ArtifactError",
    "AudioInputError",
    "AudiopdError",
    "NothingToSpeakError",
    "__version__",
]
