"""English text normalisation: written text in, spoken-form words and pause punctuation out.

``normalize_text`` applies, in this order (order matters: later steps would mangle earlier patterns):

1. Unicode NFKC (full-width forms, ligatures, "…" -> "...", no-break spaces -> spaces).
2. Typographic variants to ASCII: curly quotes -> ' and ", en dash/minus sign -> "-", em dash -> " - ".
3. Accented Latin transliterated: NFKD with combining marks stripped ("café" -> "cafe"), plus letters
   that do not decompose: ß->ss, æ->ae, œ->oe, ø->o, ł->l, đ/ð->d, þ->th, ı->i.
4. E-mail addresses and URLs spoken: scheme dropped, "." -> dot, "@" -> at, "/" -> slash, "-" -> dash,
   "_" -> underscore, "www" -> "w w w", digits one by one ("example.com/a-b" -> "example dot com slash a dash b").
5. Abbreviations: Dr. (doctor; drive after a street name), Mr. mister, Mrs. missus, Ms. miz, Prof.
   professor, St. (street after a name or number, else saint), Mt. mount, Jr. junior, Sr. senior, vs.
   versus, etc. et cetera, e.g. for example, i.e. that is, Ave. avenue, Rd. road, Inc. incorporated,
   Ltd. limited, approx. approximately, No./no. before a number -> number, plus a few military/civil
   titles. A title's period is dropped; a period after etc./Jr./Ave./... is kept when it ends the
   sentence (end of text or a capital letter follows) so the pause survives.
6. Dates: ISO 2024-03-05, US numeric 3/5/2024 (month/day; two-digit years: < 50 -> 20xx, else 19xx),
   "March 5[, 2024]", "Mar. 5th", "5 March 2024" -> "March fifth, twenty twenty four" / "the fifth of March".
7. Times: "3:30 pm" -> "three thirty P M", "14:05" -> "fourteen oh five", "3:00" -> "three o'clock",
   "7am" -> "seven A M", "6:30am" and "6.30 a.m." -> "six thirty A M" (a dot only before a.m./p.m.),
   seconds read as "and N seconds".
8. Currency $ £ € ¥ (prefix, or € suffix): "$5" five dollars, "$3.50" three dollars and fifty cents,
   "$0.99" ninety nine cents, "$1.5 million" one point five million dollars, pence/penny for £.
9. Percentages ("5%", "-2.5 %" -> "minus two point five percent").
10. Ordinals 1st 22nd 103rd -> first, twenty second, one hundred third.
11. Numbers with units (km, m, cm, mm, kg, g, mg, lb, oz, mi, ft, s, ms, min, h, Hz, kHz, MHz, GHz,
    KB, MB, GB, TB, mph, km/h, °C, °F, V, W, kW, kWh, dB, L, ml ...): plural unless the value is 1.
12. Decades "1990s" -> nineteen nineties, "'80s"/"80s" -> eighties; years: a bare 4-digit number
    1100-2099 (no separators) is read as a year (1999 nineteen ninety nine, 2005 two thousand five).
13. Phone-like "555-1234"/"555-123-4567" digit by digit; other digit-digit hyphens are ranges ("to").
14. Fractions 1/2 one half, 3/4 three quarters, a/b "a over b"; dotted versions 1.2.3 "one dot two dot three";
    decimals 3.14 "three point one four"; integers with sign and thousands separators ("-1,200" ->
    "minus one thousand two hundred"); leading zeros digit by digit; letters glued to digits are split
    ("mp3" -> "mp three").
15. Symbols: & and, + plus, = equals, @ at, # number (before digits) / hash, % percent, / slash,
    < less than, > greater than, ~ about, × times, ° degrees.
16. Cleanup: brackets become commas (pauses), "--" and " - " become commas, "..." becomes a comma
    (a period at the end), hyphens between words become spaces, quotes and edge apostrophes are
    dropped (inner apostrophes stay: don't, John's). Any remaining character that is not an ASCII
    letter, space, apostrophe or one of . , ? ! ; : is dropped -- this is how unsupported scripts
    (Chinese, Arabic, Cyrillic, ...) disappear from mixed text. Runs of punctuation collapse to the
    strongest mark (? ! over . over , ; :), leading punctuation is dropped, whitespace collapses.

Case is preserved (acronym spelling in g2p needs it); numbers verbalise in lower case.
Steps 6-14 (the numeric readers) live in ``audiopd.text.numbers_read``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from audiopd.text import numbers as num
from audiopd.text.numbers_read import (
    read_currency,
    read_dates,
    read_numbers,
    read_times,
    sentence_ends_after,
)

_Sub = Callable[[re.Match[str]], str]

_TYPOGRAPHIC = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'", "\u00b4": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"', "\u2033": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2212": "-",
        "\u2014": " - ", "\u2015": " - ", "\u2044": "/", "\u00d7": " times ", "\u00f7": " divided by ",
    }
)  # fmt: skip
_NON_DECOMPOSING = str.maketrans(
    {
        "ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O",
        "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "TH", "ı": "i",
    }
)  # fmt: skip

_SEPARATOR_WORDS = {
    ".": " dot ", "/": " slash ", "-": " dash ", "_": " underscore ", ":": " colon ", "?": " question mark ",
    "=": " equals ", "&": " and ", "#": " hash ", "~": " tilde ", "%": " percent ", "@": " at ", "+": " plus ",
}  # fmt: skip
_TLDS = "com|org|net|edu|gov|io|ai|co|uk|de|fr|dev|app|info|biz|us|ca|eu"
# The lookbehinds make every pattern start only at the start of a run; without them a long run of
# near-misses ("a.a.a.a...") costs quadratic time.
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_URL = re.compile(
    rf"\b(?:https?://|www\.)[^\s<>\"]+|(?<![A-Za-z0-9.-])[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:{_TLDS})\b(?:/[^\s<>\"]*)?"
)


def _speak_address(address: str) -> str:
    address = re.sub(r"^[A-Za-z]+://", "", address)
    out = []
    for piece in re.split(r"([^A-Za-z0-9])", address):
        if piece in _SEPARATOR_WORDS:
            out.append(_SEPARATOR_WORDS[piece])
        elif piece.lower() == "www":
            out.append(" w w w ")
        else:
            # Digits inside addresses are identifiers, read one by one.
            out.append(re.sub(r"\d+", lambda m: " " + num.digits_to_words(m.group()) + " ", piece))
    return " " + " ".join("".join(out).split()) + " "


def _addresses(text: str) -> str:
    def url(m: re.Match[str]) -> str:
        raw = m.group()
        stripped = raw.rstrip(".,;:!?)'\"")
        return _speak_address(stripped) + raw[len(stripped) :]

    text = _EMAIL.sub(lambda m: _speak_address(m.group()), text)
    return _URL.sub(url, text)


# (pattern, spoken, keep_final_period). Titles precede names, so their period never ends a sentence.
_ABBREVIATIONS: tuple[tuple[str, str, bool], ...] = (
    (r"\bMrs(?:\.|(?=\s+[A-Z]))", "missus", False),
    (r"\bMr(?:\.|(?=\s+[A-Z]))", "mister", False),
    (r"\bMs(?:\.|(?=\s+[A-Z]))", "miz", False),
    (r"\bProf\.(?=\s)", "professor", False),
    (r"\bMt\.(?=\s+[A-Z])", "mount", False),
    (r"\bGov\.(?=\s+[A-Z])", "governor", False),
    (r"\bGen\.(?=\s+[A-Z])", "general", False),
    (r"\bCapt\.(?=\s+[A-Z])", "captain", False),
    (r"\bLt\.(?=\s+[A-Z])", "lieutenant", False),
    (r"\bSgt\.(?=\s+[A-Z])", "sergeant", False),
    (r"\bRev\.(?=\s+[A-Z])", "reverend", False),
    (r"\b[Nn]o\.\s*(?=\d)", "number ", False),
    (r"\b[Ff]ig\.\s*(?=\d)", "figure ", False),
    (r"\b[Vv]ol\.\s*(?=\d)", "volume ", False),
    (r"\b[Vv]s\.?(?=\s)", "versus", False),
    (r"\b[Ee]\.\s?g\.(?=[\s,]|$)", "for example", False),
    (r"\b[Ii]\.\s?e\.(?=[\s,]|$)", "that is", False),
    (r"\b[Ee]tc\.", "et cetera", True),
    (r"\bJr\.", "junior", True),
    (r"\bSr\.", "senior", True),
    (r"\bInc\.", "incorporated", True),
    (r"\bLtd\.", "limited", True),
    (r"\bAve\.", "avenue", True),
    (r"\bRd\.", "road", True),
    (r"\b[Aa]pprox\.", "approximately", True),
)
_ABBREVIATION_RES = tuple((re.compile(p), s, k) for p, s, k in _ABBREVIATIONS)
# Street/drive after a house/ordinal number ("5th St.") or after a capitalised name when no name follows
# ("Main St."); otherwise saint/doctor ("St. Louis", "Dr. Smith"). Cheap, and right for the common cases.
_AFTER_NAME = re.compile(r"\b[A-Z][a-z]+\s+$")
_AFTER_NUMBER = re.compile(r"\b\d+(?:st|nd|rd|th)?\s+$")


def _initials(text: str) -> str:
    """"U.S.A." -> "U S A" and "J. K. Rowling" -> "J K Rowling", so initials are not read as sentence ends."""

    def dotted(m: re.Match[str]) -> str:
        period = "." if sentence_ends_after(m.string, m.end()) else ""
        return " ".join(m.group().replace(".", " ").split()) + period

    text = re.sub(r"\b(?:[A-Z]\.){2,}", dotted, text)
    # A lone capital after another lone letter ("P M. Then") is not an initial; keep that period.
    return re.sub(r"(?<!\b[A-Za-z] )\b([A-Z])\.(?=\s+(?:[A-Z]\.\s+)*[A-Z][a-z])", r"\1", text)


def _abbreviations(text: str) -> str:
    for regex, spoken, keep in _ABBREVIATION_RES:

        def sub(m: re.Match[str], spoken: str = spoken, keep: bool = keep) -> str:
            period = "." if keep and sentence_ends_after(m.string, m.end()) else ""
            return spoken + period

        text = regex.sub(sub, text)

    def place(m: re.Match[str]) -> str:
        prefix = m.string[max(0, m.start() - 40) : m.start()]
        street = _AFTER_NUMBER.search(prefix) is not None or (
            _AFTER_NAME.search(prefix) is not None and not m.group(2)
        )
        word = ("street" if street else "saint") if m.group(1) == "St" else ("drive" if street else "doctor")
        dotted = m.group().endswith(".")
        period = "." if dotted and street and sentence_ends_after(m.string, m.end()) else ""
        return word + period

    return re.sub(r"\b(St|Dr)\b\.?(?=(\s+[A-Z])?)", place, text)


_SYMBOL_WORDS = (
    (r"&", " and "), (r"\+", " plus "), (r"=", " equals "), (r"@", " at "),
    (r"#", " hash "), (r"%", " percent "), (r"<", " less than "), (r">", " greater than "),
    (r"~\s?", " about "), (r"(?<=\w)/(?=\w)", " slash "), (r"°", " degrees "),
)  # fmt: skip
_STRENGTH = {"?": 3, "!": 3, ".": 2, ";": 1, ":": 1, ",": 0}


def _strongest(m: re.Match[str]) -> str:
    marks = [c for c in m.group() if c in _STRENGTH]
    return max(marks, key=lambda c: _STRENGTH[c]) + " "


def _cleanup(text: str) -> str:
    text = re.sub(r"\.{2,}(?=[\s\"')\]]*$)", ".", text)
    text = re.sub(r"\.{2,}", ",", text)
    text = re.sub(r"[()\[\]{}]", ",", text)
    text = re.sub(r"\s-+\s|--+", ", ", text)
    text = re.sub(r"(?<=[A-Za-z])'(?=[A-Za-z])", "\0", text)  # protect inner apostrophes
    text = text.replace("'", " ").replace("\0", "'")
    text = " ".join(re.sub(r"[^A-Za-z' .,?!;:]", " ", text).split())
    text = re.sub(r" ?[.,?!;:](?: ?[.,?!;:])*", _strongest, text)
    text = re.sub(r"^[\s.,?!;:]+", "", text)
    return " ".join(text.split())


def normalize_text(text: str) -> str:
    """Return the spoken form of English ``text`` (see the module docstring for every rule).

    The result holds only ASCII letters, apostrophes, spaces and the pause marks ``. , ? ! ; :``.
    It may be empty (nothing speakable); the frontend turns that into ``NothingToSpeakError``.
    """
    if not isinstance(text, str):
        raise TypeError(f"normalize_text expects str, got {type(text).__name__}")
    text = unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHIC).translate(_NON_DECOMPOSING)
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    text = _addresses(text)
    text = _abbreviations(text)
    text = read_dates(text)
    text = _initials(text)
    text = read_times(text)
    text = read_currency(text)
    text = re.sub(r"#\s?(?=\d)", " number ", text)
    text = read_numbers(text)
    for pattern, spoken in _SYMBOL_WORDS:
        text = re.sub(pattern, spoken, text)
    return _cleanup(text)
