"""audiopd.text: the English text frontend (normalisation, sentence chunking, G2P, phoneme inventory).

Its names load on first use (``audiopd.lazy``), so a light module such as ``audiopd.text.lexicon`` or
``audiopd.text.symbols`` can be imported (``--help``, argparse set-up) without the normaliser and the G2P."""

from audiopd.lazy import lazy_getattr

__all__ = [
    "INVENTORY_VERSION",
    "NUM_SYMBOLS",
    "PAD_ID",
    "SYMBOLS",
    "Phonemized",
    "WordSpan",
    "check_word_limits",
    "chunk_text",
    "normalize_text",
    "phonemize",
    "split_sentences",
    "spoken_words",
]

_HOMES = {
    **dict.fromkeys(("Phonemized", "WordSpan", "check_word_limits", "phonemize", "spoken_words"),
                    "audiopd.text.frontend"),
    "normalize_text": "audiopd.text.normalize",
    **dict.fromkeys(("chunk_text", "split_sentences"), "audiopd.text.sentences"),
    **dict.fromkeys(("INVENTORY_VERSION", "NUM_SYMBOLS", "PAD_ID", "SYMBOLS"), "audiopd.text.symbols"),
}

__getattr__ = lazy_getattr(__name__, _HOMES)
