"""audiopd: offline text-to-speech on codec tokens with parallel decoding."""

from audiopd.errors import ArtifactError, AudioInputError, AudiopdError, NothingToSpeakError

__version__ = "0.1.0"

__all__ = [
    "ArtifactError",
    "AudioInputError",
    "AudiopdError",
    "NothingToSpeakError",
    "Result",
    "Synthesizer",
    "__version__",
    "check",
    "load",
]

# The facade lives in audiopd.pipeline, which imports torch; importing it lazily keeps
# `import audiopd` (and the CLI's --help) light.
_LAZY = {"load": "audiopd.pipeline", "Synthesizer": "audiopd.pipeline", "Result": "audiopd.pipeline",
         "SynthesisConfig": "audiopd.pipeline"}


def check(audio, sample_rate: int, text: str, **kwargs):
    """Does ``audio`` say ``text``? A thin wrapper on ``audiopd.checker.score`` returning its ``Verdict``.

    Defined here rather than in audiopd.pipeline so importing audiopd for a check stays light (torch loads
    only with the phone recogniser, when the check runs).
    """
    from audiopd.checker import score  # lazy: pocketsphinx loads its models on first use

    return score(audio, sample_rate, text, **kwargs)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'audiopd' has no attribute {name!r}")
