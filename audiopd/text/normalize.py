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
   "7am" -> "seven A M", seconds read as "and N seconds".
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
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from audiopd.text import numbers as num

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


_SENTENCE_START = re.compile(r"\s*(?:$|[\"')\]]*\s+[A-Z])")


def _sentence_ends_after(text: str, end: int) -> bool:
    """True when the period that ended at ``end`` also ends the sentence (end of text or a capital)."""
    return _SENTENCE_START.match(text, end) is not None


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
        period = "." if _sentence_ends_after(m.string, m.end()) else ""
        return " ".join(m.group().replace(".", " ").split()) + period

    text = re.sub(r"\b(?:[A-Z]\.){2,}", dotted, text)
    # A lone capital after another lone letter ("P M. Then") is not an initial; keep that period.
    return re.sub(r"(?<!\b[A-Za-z] )\b([A-Z])\.(?=\s+(?:[A-Z]\.\s+)*[A-Z][a-z])", r"\1", text)


def _abbreviations(text: str) -> str:
    for regex, spoken, keep in _ABBREVIATION_RES:

        def sub(m: re.Match[str], spoken: str = spoken, keep: bool = keep) -> str:
            period = "." if keep and _sentence_ends_after(m.string, m.end()) else ""
            return spoken + period

        text = regex.sub(sub, text)

    def place(m: re.Match[str]) -> str:
        prefix = m.string[max(0, m.start() - 40) : m.start()]
        street = _AFTER_NUMBER.search(prefix) is not None or (
            _AFTER_NAME.search(prefix) is not None and not m.group(2)
        )
        word = ("street" if street else "saint") if m.group(1) == "St" else ("drive" if street else "doctor")
        dotted = m.group().endswith(".")
        period = "." if dotted and street and _sentence_ends_after(m.string, m.end()) else ""
        return word + period

    return re.sub(r"\b(St|Dr)\b\.?(?=(\s+[A-Z])?)", place, text)


_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH_RE = (
    r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)


def _month(name_or_number: str) -> str | None:
    if name_or_number.isdigit():
        n = int(name_or_number)
        return _MONTHS[n - 1] if 1 <= n <= 12 else None
    return next(m for m in _MONTHS if m.startswith(name_or_number[:3]))


def _two_digit_year(yy: str) -> int:
    return int(yy) + (2000 if int(yy) < 50 else 1900) if len(yy) == 2 else int(yy)


def _dates(text: str) -> str:
    def numeric(month: str, day: str, yr: str, fallback: str) -> str:
        name = _month(month)
        if name is None or not 1 <= int(day) <= 31:
            return fallback
        return f"{name} {num.ordinal(int(day))}, {num.year(_two_digit_year(yr))}"

    text = re.sub(
        r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", lambda m: numeric(m[2], m[3], m[1], m.group()), text
    )
    text = re.sub(
        r"\b(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})\b", lambda m: numeric(m[1], m[2], m[3], m.group()), text
    )

    def month_day(m: re.Match[str]) -> str:
        day = int(m[2])
        if not 1 <= day <= 31:
            return m.group()
        out = f"{_month(m[1])} {num.ordinal(day)}"
        return out + (f"{m[3] or ' '}{num.year(int(m[4]))}" if m[4] else "")

    text = re.sub(rf"\b{_MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:(,?\s+)(\d{{4}})\b)?", month_day, text)

    def day_month(m: re.Match[str]) -> str:
        day = int(m[1])
        if not 1 <= day <= 31:
            return m.group()
        out = f"the {num.ordinal(day)} of {_month(m[2])}"
        return out + (f" {num.year(int(m[3]))}" if m[3] else "")

    return re.sub(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH_RE}\b\.?(?:,?\s+(\d{{4}})\b)?", day_month, text)


_AMPM = r"(?:\s*([AaPp])\.?\s?[Mm]\b\.?)"


def _times(text: str) -> str:
    def ampm(m: re.Match[str], letter: str | None) -> str:
        if not letter:
            return ""
        period = "." if m.group().endswith(".") and _sentence_ends_after(m.string, m.end()) else ""
        return f" {letter.upper()} M{period}"

    def clock(m: re.Match[str]) -> str:
        hour, minute = int(m[1]), int(m[2])
        if hour > 24 or minute > 59:
            return m.group()
        suffix = ampm(m, m[4])
        if minute == 0:
            spoken = num.cardinal(hour) + (suffix or (" o'clock" if hour <= 12 else " hundred"))
        else:
            mins = ("oh " + num.cardinal(minute)) if minute < 10 else num.cardinal(minute)
            spoken = f"{num.cardinal(hour)} {mins}{suffix}"
        if m[3]:
            spoken = spoken.replace(suffix, "") + f" and {num.cardinal(int(m[3]))} seconds" + suffix
        return spoken

    text = re.sub(rf"\b(\d{{1,2}}):(\d{{2}})(?::(\d{{2}}))?\b{_AMPM}?", clock, text)

    def bare(m: re.Match[str]) -> str:
        hour = int(m[1])
        return m.group() if not 1 <= hour <= 12 else num.cardinal(hour) + ampm(m, m[2])

    return re.sub(rf"\b(\d{{1,2}}){_AMPM}(?![A-Za-z])", bare, text)


_CURRENCIES = {  # symbol: (unit, units, subunit, subunits)
    "$": ("dollar", "dollars", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "€": ("euro", "euros", "cent", "cents"),
    "¥": ("yen", "yen", "", ""),
}
_AMOUNT = r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?"
_SCALE = r"(?:\s?(thousand|million|billion|trillion)\b)?"


def _money(symbol: str, whole: str, frac: str | None, scale: str | None) -> str:
    unit, units, sub, subs = _CURRENCIES[symbol]
    if scale:
        amount = num.decimal(f"{whole}.{frac}") if frac else num.number(whole)
        return f"{amount} {scale} {units}"
    digits = whole.replace(",", "").lstrip("0")  # compare as text: amounts may be absurdly long
    if frac and (len(frac) != 2 or not sub):
        return f"{num.decimal(whole + '.' + frac)} {units}"
    cents = int(frac) if frac else 0
    parts = []
    if digits or not cents:
        parts.append(f"{num.number(whole)} {unit if digits == '1' else units}")
    if cents:
        parts.append(f"{num.cardinal(cents)} {sub if cents == 1 else subs}")
    return " and ".join(parts)


def _currency(text: str) -> str:
    symbols = "".join(re.escape(s) for s in _CURRENCIES)
    text = re.sub(
        rf"(-?)([{symbols}])\s?{_AMOUNT}{_SCALE}",
        lambda m: ("minus " if m[1] else "") + _money(m[2], m[3], m[4], m[5]),
        text,
    )
    return re.sub(rf"\b{_AMOUNT}{_SCALE}\s?€", lambda m: _money("€", m[1], m[2], m[3]), text)


_NUMBER = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"


def _read_number(literal: str) -> str:
    return num.decimal(literal) if "." in literal else num.number(literal)


# unit symbol: (singular, plural). Case-sensitive: "M" is not "m".
_UNITS = {
    "km/h": ("kilometer per hour", "kilometers per hour"), "kph": ("kilometer per hour", "kilometers per hour"),
    "mph": ("mile per hour", "miles per hour"), "km": ("kilometer", "kilometers"), "cm": ("centimeter", "centimeters"),
    "mm": ("millimeter", "millimeters"), "nm": ("nanometer", "nanometers"), "m": ("meter", "meters"),
    "mi": ("mile", "miles"), "ft": ("foot", "feet"), "yd": ("yard", "yards"), "kg": ("kilogram", "kilograms"),
    "mg": ("milligram", "milligrams"), "g": ("gram", "grams"), "lbs": ("pound", "pounds"), "lb": ("pound", "pounds"),
    "oz": ("ounce", "ounces"), "ms": ("millisecond", "milliseconds"), "µs": ("microsecond", "microseconds"),
    "ns": ("nanosecond", "nanoseconds"), "sec": ("second", "seconds"), "s": ("second", "seconds"),
    "min": ("minute", "minutes"), "hrs": ("hour", "hours"), "hr": ("hour", "hours"), "h": ("hour", "hours"),
    "GHz": ("gigahertz", "gigahertz"), "MHz": ("megahertz", "megahertz"), "kHz": ("kilohertz", "kilohertz"),
    "Hz": ("hertz", "hertz"), "TB": ("terabyte", "terabytes"), "GB": ("gigabyte", "gigabytes"),
    "MB": ("megabyte", "megabytes"), "KB": ("kilobyte", "kilobytes"), "kB": ("kilobyte", "kilobytes"),
    "Mbps": ("megabit per second", "megabits per second"), "°C": ("degree Celsius", "degrees Celsius"),
    "°F": ("degree Fahrenheit", "degrees Fahrenheit"), "°": ("degree", "degrees"), "kWh": ("kilowatt hour", "kilowatt hours"),
    "kW": ("kilowatt", "kilowatts"), "W": ("watt", "watts"), "V": ("volt", "volts"), "mA": ("milliamp", "milliamps"),
    "dB": ("decibel", "decibels"), "ml": ("milliliter", "milliliters"), "mL": ("milliliter", "milliliters"),
    "L": ("liter", "liters"),
}  # fmt: skip
_UNIT_RE = re.compile(
    rf"(?<![\w.])({_NUMBER})\s?("
    + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
    + r")(?![A-Za-z0-9])"
)


def _units(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        singular, plural = _UNITS[m[2]]
        one = m[1].lstrip("-") == "1"
        return f"{_read_number(m[1])} {singular if one else plural}"

    return _UNIT_RE.sub(sub, text)


_FRACTIONS = {(1, 2): "one half", (1, 3): "one third", (2, 3): "two thirds", (1, 4): "one quarter", (3, 4): "three quarters"}


def _numbers(text: str) -> str:
    text = re.sub(
        r"\b(\d{3})-(\d{3})-(\d{4})\b|\b(\d{3})-(\d{4})\b",
        lambda m: ", ".join(num.digits_to_words(g) for g in m.groups() if g),
        text,
    )
    text = re.sub(r"(?<=\d)\s?-\s?(?=\d)", " to ", text)
    text = re.sub(rf"(?<![\w.,])({_NUMBER})\s?%", lambda m: _read_number(m[1]) + " percent", text)
    text = re.sub(
        r"\b(\d{1,3}(?:,\d{3})+|\d{1,15})(st|nd|rd|th)\b",
        lambda m: num.ordinal(int(m[1].replace(",", ""))),
        text,
        flags=re.IGNORECASE,
    )
    # Decades before units, or "80s" would be read as eighty seconds.
    text = re.sub(r"\b(1[0-9]\d0|20\d0)'?s\b", lambda m: num.plural_year(int(m[1])), text)
    text = re.sub(r"(?<![\w])'?([2-9]0)'?s\b", lambda m: num.plural_year(int(m[1])), text)
    text = _units(text)
    text = re.sub(r"(?<![\d.,$£€-])\b(1[1-9]\d\d|20\d\d)\b(?![.,]\d)", lambda m: num.year(int(m[1])), text)
    text = re.sub(
        r"\b(\d{1,6})/(\d{1,6})\b",
        lambda m: _FRACTIONS.get((int(m[1]), int(m[2])), f"{num.number(m[1])} over {num.number(m[2])}"),
        text,
    )
    text = re.sub(
        r"\b\d+(?:\.\d+){2,}\b", lambda m: " dot ".join(num.number(p) for p in m.group().split(".")), text
    )
    # Letters glued to digits ("mp3", "4K") read as separate words.
    text = re.sub(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])", " ", text)
    text = re.sub(
        r"(?<![\w.])(-?)(\d{1,3}(?:,\d{3})+|\d+)?\.(\d+)\b",
        lambda m: num.decimal(f"{m[1]}{m[2] or ''}.{m[3]}"),
        text,
    )
    text = re.sub(r"(?<![\w])(-?)(\d{1,3}(?:,\d{3})+(?!\d)|\d+)", lambda m: num.number(m[1] + m[2]), text)
    # Anything numeric left (e.g. "3.4" glued to a word) is read digit by digit rather than dropped.
    return re.sub(r"\d+", lambda m: " " + num.digits_to_words(m.group()) + " ", text)


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
    text = _dates(text)
    text = _initials(text)
    text = _times(text)
    text = _currency(text)
    text = re.sub(r"#\s?(?=\d)", " number ", text)
    text = _numbers(text)
    for pattern, spoken in _SYMBOL_WORDS:
        text = re.sub(pattern, spoken, text)
    return _cleanup(text)
