"""audiopd.text: the English text frontend (normalisation, sentence chunking, G2P, phoneme inventory)."""

from audiopd.text.frontend import Phonemized, WordSpan, check_word_limits, phonemize, spoken_words
from audiopd.text.normalize import normalize_text
from audiopd.text.sentences import chunk_text, split_sentences
from audiopd.text.symbols import INVENTORY_VERSION, NUM_SYMBOLS, PAD_ID, SYMBOLS

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
