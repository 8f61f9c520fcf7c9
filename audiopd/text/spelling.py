"""British -> American spelling for WER scoring, so a recogniser's spelling choice is not counted as an error.

Whisper (trained on mostly American text) writes "traveled" where a fortune says "travelled"; pocketsphinx's
dictionary is American too. The map is small and explicit (no suffix rules: "-our" -> "-or" would break
"four", "hour", "your"); each stem brings its usual inflections. Used by ``audiopd.text.wer.judge_words``.
"""

from __future__ import annotations

from collections.abc import Iterable

# British stem -> American stem; inflections "s", "ed", "ing", "er", "ers", "ful", "ly" are added to both.
_STEMS = {
    "colour": "color", "favour": "favor", "honour": "honor", "labour": "labor", "neighbour": "neighbor",
    "behaviour": "behavior", "humour": "humor", "flavour": "flavor", "harbour": "harbor", "rumour": "rumor",
    "vapour": "vapor", "vigour": "vigor", "valour": "valor", "armour": "armor", "odour": "odor",
    "endeavour": "endeavor", "splendour": "splendor", "glamour": "glamor", "savour": "savor", "parlour": "parlor",
    "centre": "center", "theatre": "theater", "metre": "meter", "litre": "liter", "fibre": "fiber",
    "sombre": "somber", "spectre": "specter", "calibre": "caliber", "meagre": "meager", "sabre": "saber",
    "realise": "realize", "organise": "organize", "recognise": "recognize", "apologise": "apologize",
    "criticise": "criticize", "civilise": "civilize", "memorise": "memorize", "sympathise": "sympathize",
    "emphasise": "emphasize", "summarise": "summarize", "utilise": "utilize", "agonise": "agonize",
    "analyse": "analyze", "paralyse": "paralyze", "defence": "defense", "offence": "offense",
    "pretence": "pretense", "licence": "license", "grey": "gray", "catalogue": "catalog", "dialogue": "dialog",
    "programme": "program", "cheque": "check", "tyre": "tire", "plough": "plow", "mould": "mold",
    "sceptic": "skeptic", "manoeuvre": "maneuver", "judgement": "judgment", "jewellery": "jewelry",
    "aluminium": "aluminum", "moustache": "mustache", "pyjama": "pajama", "ageing": "aging",
    "draught": "draft", "gaol": "jail", "kerb": "curb", "sulphur": "sulfur", "whisky": "whiskey",
    "doughnut": "donut", "ok": "okay", "enrol": "enroll", "fulfil": "fulfill", "instil": "instill",
    "skilful": "skillful", "wilful": "willful", "woollen": "woolen", "towards": "toward",
}  # fmt: skip
# Verbs whose final l doubles in British inflection only: travelled / traveled.
_DOUBLE_L = (
    "travel", "cancel", "label", "model", "signal", "level", "fuel", "marvel", "quarrel", "counsel", "jewel",
    "tunnel", "dial", "duel", "total", "rival", "channel", "shovel", "grovel", "revel", "pedal", "equal",
    "libel", "panel", "parcel", "pencil", "shrivel", "snivel", "swivel", "tinsel", "towel", "unravel", "yodel",
)  # fmt: skip
_SUFFIXES = ("", "s", "es", "ed", "d", "ing", "er", "ers", "ful", "ly", "ment", "ments", "ation", "ations")


def _build() -> dict[str, str]:
    out: dict[str, str] = {}
    for brit, amer in _STEMS.items():
        for suf in _SUFFIXES:
            # A final e drops before a vowel suffix on both sides ("realise" -> "realising" / "realizing").
            if suf[:1] in ("e", "i", "a") and brit.endswith("e") and amer.endswith("e"):
                out.setdefault(brit[:-1] + suf, amer[:-1] + suf)
            elif suf[:1] not in ("e", "i", "a") or not brit.endswith("e"):
                out.setdefault(brit + suf, amer + suf)
    for stem in _DOUBLE_L:
        for suf in ("ed", "ing", "er", "ers"):
            out[stem + "l" + suf] = stem + suf
    # The map must be idempotent: no American form may itself be a key.
    return {b: a for b, a in out.items() if b != a and a not in out}


BRITISH_TO_AMERICAN: dict[str, str] = _build()


def americanize(words: Iterable[str]) -> list[str]:
    """Lower-case words with British spellings replaced by American ones (unknown words unchanged)."""
    return [BRITISH_TO_AMERICAN.get(w, w) for w in words]
