"""audiopd: offline text-to-speech on codec tokens with parallel decoding."""

from audiopd.errors import ArtifactError, AudioInputError, AudiopdError, NothingToSpeakError
from audiopd.lazy import lazy_getattr

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
_LAZY = {"Synthesizer": "audiopd.pipeline", "Result": "audiopd.synthesis.result",
         "SynthesisConfig": "audiopd.synthesis.config"}


def load(voice=None, *, runtime: str = "torch", **kwargs):
    """Load a voice for synthesis: ``audiopd.pipeline.load`` with ``runtime="torch"`` (the default), or the
    torch-free NumPy path (``audiopd.lite.synth.load``) with "numpy" (refusing what it cannot serve) or "auto"
    (NumPy where it can, torch for the rest). Keyword arguments: ``codec``, ``decoder``, ``config``, ``precision``
    (torch's per-call dtype: "auto", "float32" or "bfloat16"; ``audiopd.model.precision``), ``lexicon`` (the
    user's pronunciations: a file or a mapping of words to ARPAbet phones, ``audiopd.text.lexicon``)."""
    if runtime == "torch":
        from audiopd.pipeline import load as torch_load

        return torch_load(voice, **kwargs)
    from audiopd.lite.synth import load as lite_load

    return lite_load(voice, runtime=runtime, **kwargs)


def check(audio, sample_rate: int, text: str, **kwargs):
    """Does ``audio`` say ``text``? A thin wrapper on ``audiopd.checker.score`` returning its ``Verdict``.

    Defined here rather than in audiopd.pipeline so a check stays light: it never imports torch (the phone
    recogniser runs in NumPy, ``audiopd.lite.recognizer``).
    """
    from audiopd.checker import score  # lazy: pocketsphinx loads its models on first use

    return score(audio, sample_rate, text, **kwargs)


__getattr__ = lazy_getattr(__name__, _LAZY)
