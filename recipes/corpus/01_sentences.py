"""Stage 01: English sentences from Debian's offline fortune files -> DATA/corpus/sentences.tsv.

Fortune files hold entries separated by ``%`` lines. We drop attribution lines ("-- Author"),
all-caps lines, and anything needing text normalisation (digits, symbols, acronyms, initials), so
that the frontend and flite read every sentence the same way without number/abbreviation rules.
The train/test split is a hash of the normalised sentence, so it is fixed whatever the source
order and never leaks a test sentence into training when the corpus is rebuilt.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_common as cc  # noqa: E402

STAGE = "01"
FORTUNE_DIR = Path("/usr/share/games/fortunes")  # Debian's fixed install location, not a data path
MIN_WORDS, MAX_WORDS = 4, 30
TEST_PERCENT = 5
DEFAULT_MAX_SENTENCES = 3600  # keeps rendering 4 voices within the time budget on 2 shared cores

_ALLOWED = re.compile(r"^[A-Za-z .,?!;:'-]+$")
# A sentence ends at . ? ! followed by space and a capital (or the entry end). Abbreviations are
# not special-cased: sentences containing them are rejected below instead.
_SPLIT = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")
_ATTRIBUTION = re.compile(r"^\s*(--|- |~~)")
_ABBREV = re.compile(r"\b(Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Gen|Col|Capt|Lt|Sgt|Rev|Hon|Inc|Ltd|Co|vs|etc|viz|ie|eg|Mt|No)\.",
                     re.IGNORECASE)
_QUOTES = "\"'`"


def fortune_files(root: Path = FORTUNE_DIR) -> list[Path]:
    """The plain fortune files under ``root``: no ``.dat`` indexes, no ``.u8`` links, no ``off/`` dirs."""
    files = []
    for path in sorted(root.rglob("*")):
        if "off" in path.relative_to(root).parts[:-1]:
            continue  # offensive collections are kept in off/ subfolders
        if path.is_symlink() or not path.is_file() or path.suffix in {".dat", ".u8"}:
            continue
        files.append(path)
    return files


def split_entries(text: str) -> list[str]:
    """Split a fortune file's text into entries at lines holding only ``%``."""
    entries, current = [], []
    for line in text.splitlines():
        if line.strip() == "%":
            if current:
                entries.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        entries.append("\n".join(current))
    return entries


def _is_all_caps(line: str) -> bool:
    letters = [c for c in line if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def entry_sentences(entry: str) -> list[str]:
    """Candidate sentences of one entry: attribution and all-caps lines dropped, lines joined, split."""
    lines = [ln for ln in entry.splitlines() if not _ATTRIBUTION.match(ln) and not _is_all_caps(ln)]
    joined = " ".join(ln.strip() for ln in lines if ln.strip())
    return [s.strip() for s in _SPLIT.split(joined) if s.strip()]


def clean_sentence(sentence: str) -> str | None:
    """Return the cleaned sentence, or None when it needs normalisation we do not do.

    Kept: ASCII letters, spaces and . , ? ! ; : ' - ; a capital start and a . ? ! end; 4-30 words;
    quotes only when they wrap the whole sentence (then removed). Rejected: digits, other symbols,
    inner quotations, ellipses, dashes used as punctuation, acronyms, initials, abbreviations.
    """
    s = " ".join(sentence.split())
    wrapped = re.fullmatch(r"([\"'`])(.+?)([.?!]?)\1([.?!]?)", s)
    if wrapped:  # "Whole sentence." or "Whole sentence".  -> Whole sentence.
        s = wrapped.group(2).strip() + (wrapped.group(3) or wrapped.group(4))
    if s.count('"') == 1:
        s = s.strip('"').strip()  # a quotation opened or closed in another sentence of the entry
    if not s or not s.isascii() or not _ALLOWED.match(s):
        return None
    if not s[0].isupper() or s[-1] not in ".?!":
        return None
    if ".." in s or "--" in s or _ABBREV.search(s) or re.search(r"[.,?!;:][^\s]", s[:-1]):
        return None  # ellipses, dashes, abbreviations, and "a.b" / "e.g." style runs need rules
    words = s.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS:
        return None
    for word in words:
        bare = word.strip(".,?!;:")
        if not bare or not re.fullmatch(r"[A-Za-z]+(?:['-][A-Za-z]+)*", bare):
            return None  # stray quote, leading/trailing hyphen or apostrophe, lone punctuation
        if len(bare) >= 2 and bare.isupper():
            return None  # acronyms are spelled out by some readers and not others
    if re.search(r"(^|\s)[A-Za-z]\.(\s|$)", s) and not re.fullmatch(r".*\b[Ia]\.", s):
        return None  # initials such as "J. Smith"
    if re.match(r"^[A-Za-z]+:", s):
        return None  # speaker labels "Q:" / "Bob:" in dialogues
    return s


def normalise_key(sentence: str) -> str:
    """Case- and punctuation-insensitive key used for de-duplication and the split hash."""
    return " ".join(re.sub(r"[^a-z ]+", " ", sentence.lower().replace("'", "")).split())


def split_of(key: str) -> str:
    """``test`` for ~TEST_PERCENT % of keys, chosen by a stable hash (never Python's salted hash())."""
    bucket = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) % 100
    return "test" if bucket < TEST_PERCENT else "train"


def sentence_id(key: str) -> str:
    return "s" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:10]


def collect(texts: Iterable[str]) -> Iterator[str]:
    """Unique cleaned sentences from fortune file texts, in source order."""
    seen: set[str] = set()
    for text in texts:
        for entry in split_entries(text):
            for candidate in entry_sentences(entry):
                cleaned = clean_sentence(candidate)
                if cleaned is None:
                    continue
                key = normalise_key(cleaned)
                if key in seen:
                    continue
                seen.add(key)
                yield cleaned


def build_rows(sentences: Iterable[str], max_sentences: int | None) -> list[tuple[str, str, str]]:
    """(id, split, text) rows. With a cap we keep the lowest ids: an unbiased, stable sample."""
    rows = [(sentence_id(normalise_key(s)), split_of(normalise_key(s)), s) for s in sentences]
    if max_sentences is not None and len(rows) > max_sentences:
        keep = {r[0] for r in sorted(rows)[:max_sentences]}
        rows = [r for r in rows if r[0] in keep]
    return rows


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--max-sentences", type=int, default=DEFAULT_MAX_SENTENCES,
                       help="cap on the number of sentences kept (0 = no cap)")
        p.add_argument("--fortune-dir", default=str(FORTUNE_DIR), help="root of the fortune files")
    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    if cc.is_done(args.data, STAGE) and not args.force:
        print(f"stage {STAGE} already done ({cc.done_marker(args.data, STAGE)}); use --force to redo")
        return 0
    timer = cc.Timer()
    files = fortune_files(Path(args.fortune_dir))
    if not files:
        raise SystemExit(f"no fortune files under {args.fortune_dir}: apt-get install fortunes fortunes-min")
    texts = (f.read_text(encoding="utf-8", errors="replace") for f in files)
    rows = build_rows(collect(texts), args.max_sentences or None)
    out = cc.corpus_dir(args.data) / "sentences.tsv"
    cc.atomic_write_text(out, "id\tsplit\ttext\n" + "".join(f"{i}\t{sp}\t{t}\n" for i, sp, t in rows))
    counts = {sp: sum(1 for r in rows if r[1] == sp) for sp in ("train", "test")}
    info = {"sentences": len(rows), **counts, "sources": [f.name for f in files], "seconds": timer.seconds}
    cc.mark_done(args.data, STAGE, info)
    print(f"wrote {out}: {len(rows)} sentences (train {counts['train']}, test {counts['test']}) "
          f"from {len(files)} files in {timer.seconds} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
