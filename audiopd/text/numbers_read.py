"""Readers for the numeric expressions of written English: dates, times, money, units and plain numbers.

These are steps 6-14 of ``audiopd.text.normalize`` (see its docstring for every rule and the order
they run in). They live apart from the rest of the normaliser because they form one family: each
finds a numeric pattern in text and spells it with the verbalisers of ``audiopd.text.numbers``.
``normalize_text`` calls ``read_dates``, ``read_times``, ``read_currency`` and ``read_numbers``.
"""

from __future__ import annotations

import re

from audiopd.text import numbers as num

_SENTENCE_START = re.compile(r"\s*(?:$|[\"')\]]*\s+[A-Z])")


def sentence_ends_after(text: str, end: int) -> bool:
    """True when the period that ended at ``end`` also ends the sentence (end of text or a capital).

    Shared with the abbreviation rules of ``audiopd.text.normalize``: "3 p.m. Then" and "etc. Then" keep
    their period by the same test.
    """
    return _SENTENCE_START.match(text, end) is not None


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


def read_dates(text: str) -> str:
    """Spell ISO, US numeric, "March 5[, 2024]" and "5 March [2024]" dates (step 6)."""
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


def read_times(text: str) -> str:
    """Spell clock times "3:30 pm", "6:30am", "6.30 a.m.", "14:05", "7am" (step 7)."""
    def ampm(m: re.Match[str], letter: str | None) -> str:
        if not letter:
            return ""
        period = "." if m.group().endswith(".") and sentence_ends_after(m.string, m.end()) else ""
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

    # The minutes end at a non-digit, not a word boundary, so "6:30am" keeps its period of day. A dot
    # separates hours and minutes only before a.m./p.m. ("6.30 a.m.", British style, and Whisper's),
    # where it cannot be a decimal; a bare "3.14" stays a number. Its empty group stands in for the seconds, so
    # ``clock`` reads both patterns.
    text = re.sub(rf"\b(\d{{1,2}}):(\d{{2}})(?::(\d{{2}}))?(?!\d){_AMPM}?", clock, text)
    text = re.sub(rf"\b(\d{{1,2}})\.(\d{{2}})()(?!\d){_AMPM}", clock, text)

    def bare(m: re.Match[str]) -> str:
        hour = int(m[1])
        return m.group() if not 1 <= hour <= 12 else num.cardinal(hour) + ampm(m, m[2])

    # Not after "<digit>.": "12.5 am" is a decimal, never "twelve. five a m".
    return re.sub(rf"(?<!\d\.)\b(\d{{1,2}}){_AMPM}(?![A-Za-z])", bare, text)


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


def read_currency(text: str) -> str:
    """Spell amounts of money with a $ £ € ¥ prefix or a € suffix (step 8)."""
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


def read_numbers(text: str) -> str:
    """Spell every remaining number: percentages, ordinals, decades, units, years, fractions, decimals (9-14)."""
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
