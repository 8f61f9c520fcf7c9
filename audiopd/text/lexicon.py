"""A user's own pronunciations: words the frontend says the way a lexicon spells them, before any G2P rule.

Names, brands and jargon are where a dictionary plus letter-to-sound rules go wrong ("Nguyen", "Kubernetes"),
and a user who renders thousands of files needs to fix a word once, not per text. A lexicon maps a word to its
ARPAbet phones, the inventory of the CMU Pronouncing Dictionary (``audiopd.text.symbols``), in one of two files:

* text, the CMU dictionary's own format: one ``WORD  PH ON ES`` a line, ``;;;`` starts a comment line, and
  ``WORD(2)`` lines (the dictionary's alternative pronunciations) are skipped as the G2P skips them;
* ``.json``: one object, ``{"word": "PH ON ES"}`` (a string or a list of phones).

An entry matches a word as the normaliser spells it out (``audiopd.text.normalize``: "Dr." is "doctor", "$5" is
"five dollars"), case-insensitively; so a key is letters with inner apostrophes, as the frontend's words are.
Vowels carry their stress digit (``AH0``, ``EY1``); phones may be written in lower case. A lexicon word takes its
entry everywhere, weak forms included (``g2p.WEAK_FORMS``): the user's spelling is the one they asked for.

Every problem is a ``LexiconError`` naming the file, the line and what is wrong; a file over ``MAX_BYTES`` is
refused before it is read.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from audiopd.errors import AudiopdError
from audiopd.text.symbols import VOWELS, is_phone

MAX_BYTES = 64 * 1024 * 1024  # ~18x the whole CMU dictionary (3.6 MB): a lexicon, not a corpus
MAX_PHONES = 64  # per entry; the longest word the frontend accepts (48 letters) needs fewer
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")
_VARIANT = re.compile(r".+\(\d+\)")  # "word(2)": an alternative pronunciation


# --lexicon's help, the same in every command that takes one
LEXICON_HELP = ("your pronunciations, which come before the dictionary: a file of 'WORD  PH ON ES' lines (ARPAbet "
                "with stress digits, the CMU dictionary's format) or a .json object of words to phones")


def add_lexicon_argument(parser) -> None:
    """``--lexicon FILE`` (argparse; torch-free, so ``--help`` stays light)."""
    parser.add_argument("--lexicon", default=None, metavar="FILE", help=LEXICON_HELP)


class LexiconError(AudiopdError):
    """A lexicon that cannot be used: unreadable, malformed, or an entry the frontend could never apply."""


@dataclass(frozen=True)
class Lexicon:
    """Lower-case word -> its phones (``tuple`` of inventory symbols). Build with ``load_lexicon``."""

    entries: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = "<mapping>"
    digest: str | None = field(default=None, compare=False)  # sha256 when known (``merge_lexicons`` sets it)
    size: int | None = field(default=None, compare=False)  # number of words when known (``merge_lexicons``)

    def __post_init__(self) -> None:
        # A copy (a plain dict pickles to render workers), except ``merge_lexicons``' layers: a request's few words
        # over a server's dictionary-sized lexicon would otherwise copy all of it per call (21 ms at 126,000 words).
        if not isinstance(self.entries, ChainMap):
            object.__setattr__(self, "entries", dict(self.entries))

    @functools.cached_property
    def sha256(self) -> str:
        """Of the entries alone (sorted ``word phones`` lines): what a render's manifest records of its lexicon.
        Computed once: a dictionary-sized lexicon (126,000 words) takes ~0.1 s, more than a short sentence's
        synthesis, and every report and manifest row reads it."""
        if self.digest is not None:
            return self.digest
        lines = "".join(f"{w} {' '.join(p)}\n" for w, p in sorted(self.entries.items()))
        return hashlib.sha256(lines.encode("utf-8")).hexdigest()

    def get(self, word: str) -> tuple[str, ...] | None:
        """The phones of ``word`` (any case), or None when the lexicon does not have it."""
        return self.entries.get(word.lower())

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and word.lower() in self.entries

    def __len__(self) -> int:
        return len(self.entries) if self.size is None else self.size

    def report(self) -> dict[str, object]:
        """What a synthesis report says of it: source, size and the entries' sha256."""
        return {"source": self.source, "words": len(self), "sha256": self.sha256}


def merge_lexicons(base: Lexicon | None, extra: Lexicon | None) -> Lexicon | None:
    """``base`` with ``extra``'s entries over it (a request's words over a server's): either alone when the other is
    None or empty. Layered, not copied: the work is ``extra``'s size, whatever ``base``'s. The merged lexicon's
    sha256 is that of its two parts' sha256s (``base:extra``), so a call's few words over a large lexicon do not
    hash the large one again."""
    if not extra:
        return base
    if not base:
        return extra
    digest = hashlib.sha256(f"{base.sha256}:{extra.sha256}".encode("ascii")).hexdigest()
    size = len(base) + sum(word not in base.entries for word in extra.entries)
    return Lexicon(ChainMap(dict(extra.entries), base.entries), f"{base.source} + {extra.source}", digest, size)


LexiconLike = Lexicon | Mapping[str, str | Sequence[str]] | str | Path | None


def load_lexicon(lexicon: LexiconLike) -> Lexicon | None:
    """``lexicon`` as a checked ``Lexicon``: a ``Lexicon`` as it is, a mapping of words to phones (a string of
    space-separated phones or a sequence of them), or a file path (``.json``, else the CMU format). None -> None."""
    if lexicon is None or isinstance(lexicon, Lexicon):
        return lexicon
    if isinstance(lexicon, (str, Path)):
        return _from_file(Path(lexicon))
    if isinstance(lexicon, Mapping):
        return _from_pairs(((w, p, f"entry {w!r}") for w, p in lexicon.items()), "<mapping>")
    raise TypeError(f"a lexicon is a path, a mapping of words to phones or a Lexicon, not {type(lexicon).__name__}")


def parse_phones(phones: str | Sequence[str], where: str) -> tuple[str, ...]:
    """Checked inventory phones from ``"HH AH0 L OW1"`` or ``["HH", "AH0", ...]`` (any case)."""
    if isinstance(phones, str):
        parts = phones.split()
    elif isinstance(phones, Sequence) and all(isinstance(p, str) for p in phones):
        parts = list(phones)
    else:
        raise LexiconError(f"{where}: phones must be a string or a list of strings, not {type(phones).__name__}")
    if not parts:
        raise LexiconError(f"{where}: no phones")
    if len(parts) > MAX_PHONES:
        raise LexiconError(f"{where}: {len(parts)} phones; at most {MAX_PHONES} per word")
    out = []
    for p in parts:
        sym = p.strip().upper()
        if is_phone(sym):
            out.append(sym)
        elif sym in VOWELS:
            raise LexiconError(f"{where}: vowel {p!r} needs its stress digit ({sym}0, {sym}1 or {sym}2)")
        else:
            raise LexiconError(f"{where}: {p!r} is not an ARPAbet phone of the CMU dictionary's inventory")
    return tuple(out)


def _word(word: object, where: str) -> str:
    if not isinstance(word, str):
        raise LexiconError(f"{where}: a word must be a string, not {type(word).__name__}")
    from audiopd.text.g2p import MAX_WORD_LETTERS  # here, not above: the G2P's import is not --help's

    key = word.strip().lower()
    if not _WORD.fullmatch(key):
        raise LexiconError(f"{where}: {word!r} is not a word the frontend can meet (letters with inner "
                           "apostrophes; the normaliser splits at hyphens, spaces and digits)")
    if sum(c.isalpha() for c in key) > MAX_WORD_LETTERS:
        raise LexiconError(f"{where}: {word!r} is longer than the {MAX_WORD_LETTERS} letters the frontend accepts")
    return key


def _from_pairs(pairs, source: str) -> Lexicon:
    entries: dict[str, tuple[str, ...]] = {}
    seen: dict[str, str] = {}
    for word, phones, where in pairs:
        key = _word(word, where)
        if key in entries:
            raise LexiconError(f"{where}: {key!r} is already given ({seen[key]}); give each word once")
        entries[key], seen[key] = parse_phones(phones, where), where
    return Lexicon(entries, source)


def _from_file(path: Path) -> Lexicon:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise LexiconError(f"lexicon {path}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise LexiconError(f"lexicon {path}: not a file")
    if size > MAX_BYTES:
        raise LexiconError(f"lexicon {path}: {size:,} bytes; at most {MAX_BYTES:,} are read")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise LexiconError(f"lexicon {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise LexiconError(f"lexicon {path}: {exc.strerror or exc}") from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LexiconError(f"lexicon {path}: not JSON ({exc.msg}, line {exc.lineno})") from None
        if not isinstance(data, dict):
            raise LexiconError(f"lexicon {path}: the JSON must be one object of words to phones")
        return _from_pairs(((w, p, f"{path}: entry {w!r}") for w, p in data.items()), str(path))
    return _from_pairs(_cmu_lines(text, path), str(path))


def _cmu_lines(text: str, path: Path):
    for n, line in enumerate(text.splitlines(), 1):
        body = line.strip()
        if not body or body.startswith(";;;"):
            continue
        word, _, phones = body.replace("\t", " ").partition(" ")  # spaces or tabs between the word and its phones
        if _VARIANT.fullmatch(word):
            continue
        if not phones.strip():
            raise LexiconError(f"{path}:{n}: {word!r} has no phones (a line is 'WORD  PH ON ES')")
        yield word, phones.split("#")[0], f"{path}:{n}"
