"""Number verbalisation for the English frontend: cardinals, ordinals, years, decimals, digit strings.

Own code rather than ``num2words`` so the frontend has no extra dependency and its readings are pinned
by our tests (a dependency upgrade must not change what a trained voice was taught to say).
Readings follow common US TTS practice: no "and" inside cardinals ("one hundred five"), years in
pairs ("nineteen ninety nine"), 2000-2009 as "two thousand five", decimals digit by digit after
"point". Hyphens are never produced ("twenty one", not "twenty-one") so every output is plain words.
"""

from __future__ import annotations

_ONES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)  # fmt: skip
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (10**3, "thousand"))
# Above this we read digit by digit: nobody says "four quadrillion ...", and it bounds output length.
MAX_CARDINAL = 10**15 - 1

_ORDINAL_IRREGULAR = {
    "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
    "nine": "ninth", "twelve": "twelfth",
}  # fmt: skip


def _below_thousand(n: int) -> str:
    parts: list[str] = []
    hundreds, rest = divmod(n, 100)
    if hundreds:
        parts += [_ONES[hundreds], "hundred"]
    if rest >= 20:
        tens, ones = divmod(rest, 10)
        parts.append(_TENS[tens])
        if ones:
            parts.append(_ONES[ones])
    elif rest or not parts:
        parts.append(_ONES[rest])
    return " ".join(parts)


def digits_to_words(digits: str) -> str:
    """Read a digit string one digit at a time ("007" -> "zero zero seven")."""
    return " ".join(_ONES[int(d)] for d in digits if d.isdigit())


def cardinal(n: int) -> str:
    """Spell an integer: ``cardinal(-1205) == "minus one thousand two hundred five"``."""
    if n < 0:
        return "minus " + cardinal(-n)
    if n > MAX_CARDINAL:
        return digits_to_words(str(n))
    if n < 1000:
        return _below_thousand(n)
    parts: list[str] = []
    for value, name in _SCALES:
        if n >= value:
            count, n = divmod(n, value)
            parts += [_below_thousand(count), name]
    if n:
        parts.append(_below_thousand(n))
    return " ".join(parts)


def ordinal(n: int) -> str:
    """Spell an ordinal: ``ordinal(22) == "twenty second"``, ``ordinal(100) == "one hundredth"``."""
    words = cardinal(n).split(" ")
    last = words[-1]
    if last in _ORDINAL_IRREGULAR:
        last = _ORDINAL_IRREGULAR[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return " ".join(words[:-1] + [last])


def year(n: int) -> str:
    """Read a year the way people say it: 1999 "nineteen ninety nine", 1905 "nineteen oh five",
    1900 "nineteen hundred", 2005 "two thousand five", 2024 "twenty twenty four"."""
    if n < 0:
        return cardinal(-n) + " B C"
    if n < 1000 or n >= 10000:
        return cardinal(n)
    if 2000 <= n <= 2009 or n % 1000 == 0:
        return cardinal(n)
    high, low = divmod(n, 100)
    if low == 0:
        return cardinal(high) + " hundred"
    if low < 10:
        return cardinal(high) + " oh " + _ONES[low]
    return cardinal(high) + " " + cardinal(low)


def plural_year(n: int) -> str:
    """Decades: 1990 -> "nineteen nineties", 2000 -> "two thousands", 80 -> "eighties"."""
    words = (year(n) if n >= 100 else cardinal(n)).split(" ")
    last = words[-1]
    last = last[:-1] + "ies" if last.endswith("y") else last + "s"
    return " ".join(words[:-1] + [last])


def decimal(text: str) -> str:
    """Read a decimal literal such as "-3.14", "0.5" or ".5" ("point five")."""
    negative = text.startswith("-")
    text = text.lstrip("-+")
    whole, _, frac = text.partition(".")
    whole = whole.replace(",", "")
    spoken = _integer_digits(whole) if whole else ""
    if frac:
        spoken = (spoken + " point " + digits_to_words(frac)).strip()
    return ("minus " + spoken) if negative else spoken


def number(text: str) -> str:
    """Read an integer literal, with optional sign and thousands separators ("1,234", "-5").

    Leading zeros ("007") are read digit by digit, as people do for codes and ids.
    """
    negative = text.startswith("-")
    digits = text.lstrip("-+").replace(",", "")
    if len(digits) > 1 and digits.startswith("0"):
        spoken = digits_to_words(digits)
    else:
        spoken = _integer_digits(digits)
    return ("minus " + spoken) if negative else spoken


def _integer_digits(digits: str) -> str:
    # Check the length before int(): Python refuses int() of > 4300 digits, and the text is user input.
    if len(digits) > len(str(MAX_CARDINAL)):
        return digits_to_words(digits)
    return cardinal(int(digits))
