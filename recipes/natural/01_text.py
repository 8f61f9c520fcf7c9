"""Stage 01: the natural corpus's sentences, offline only -> DATA/text.tsv (id, split, kind, text, written).

Sources: Debian's fortune sentences (the corpus recipe's cleaning), long sentences joined from them, and
generated questions, exclamations, numbers/dates/money, names and short phrases (``text_sources.py``). Every
written sentence goes through audiopd's normaliser; ``text`` is that spoken form (what the teachers read, so
their audio and our frontend say the same words), kept only if audiopd's frontend phonemizes it.
Split: SHA-1 of the spoken text's letters-only key, bucket < 5 of 100 ``test`` (never for fitting or training),
5-9 ``dev`` (choosing settings), else ``train``; a fortune sentence keeps the split it has in the flite corpus.
A long sentence is joined only from sentences of one split and takes that split, so no test text leaks.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import natural_common as nc  # noqa: E402
import text_sources  # noqa: E402

STAGE = "01"
FORTUNE_DIR = Path("/usr/share/games/fortunes")  # Debian's fixed install location, not a data path
DEFAULT_COUNTS = {"fortune": 3000, "long": 400, "question": 600, "exclamation": 300, "number": 700,
                  "name": 300, "short": 300}
LONG_WORDS = (31, 55)


def _corpus_stage01():
    """The corpus recipe's fortune reader (its file name starts with a digit, so load it by path)."""
    path = Path(__file__).resolve().parent.parent / "corpus" / "01_sentences.py"
    spec = importlib.util.spec_from_file_location("corpus_01_sentences", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def key_of(text: str) -> str:
    """Case- and punctuation-insensitive key (de-duplication and the split hash); same as the corpus recipe."""
    return " ".join(re.sub(r"[^a-z ]+", " ", text.lower().replace("'", "")).split())


def split_of(key: str) -> str:
    bucket = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) % 100
    return "test" if bucket < 5 else "dev" if bucket < 10 else "train"


def row_id(key: str) -> str:
    return "n" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:10]


def spoken(written: str) -> str | None:
    """The normalised spoken form, or None when audiopd's frontend cannot phonemize it."""
    from audiopd.errors import AudiopdError
    from audiopd.text.frontend import phonemize
    from audiopd.text.normalize import normalize_text

    text = " ".join(normalize_text(written).split())
    if not text:
        return None
    text = text[0].upper() + text[1:]
    try:
        phonemize(text)
    except AudiopdError:
        return None
    return text


def make_rows(kind: str, written: Iterable[str], seen: set[str], split: str | None = None) -> list[nc.TextRow]:
    """Rows for new sentences of one kind; ``seen`` (keys) de-duplicates across kinds."""
    rows = []
    for sentence in written:
        text = spoken(sentence)
        if text is None or "\t" in text or "\t" in sentence:
            continue
        key = key_of(text)
        if not key or key in seen:
            continue
        seen.add(key)
        rows.append(nc.TextRow(row_id(key), split or split_of(key), kind, text, sentence))
    return rows


def build(fortunes: list[str], counts: dict[str, int], seed: int) -> list[nc.TextRow]:
    """All rows, sorted by id (a stable, kind-mixed order: stage 02 renders in it)."""
    seen: set[str] = set()
    fortune_rows = sorted(make_rows("fortune", fortunes, seen), key=lambda r: r.id)
    rows = fortune_rows[: counts["fortune"]]
    seen = {key_of(r.text) for r in rows}
    rest = fortune_rows[counts["fortune"]:]  # long sentences are made from fortunes not used alone
    for split in nc.SPLITS:
        pool = [r.written for r in rest if r.split == split]
        share = round(counts["long"] * len(pool) / max(1, len(rest)))
        joined = text_sources.join_long(pool, *LONG_WORDS, seed=seed)[:share]
        rows += make_rows("long", joined, seen, split=split)
    for kind in text_sources.KINDS:
        # Templates repeat; draw generously and keep the first ``count`` unique ones.
        rows += make_rows(kind, text_sources.generate(kind, counts[kind] * 3, seed), seen)[: counts[kind]]
    return sorted(rows, key=lambda r: r.id)


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        for kind, n in DEFAULT_COUNTS.items():
            p.add_argument(f"--{kind}", type=int, default=n, help=f"{kind} sentences (default {n})")
        p.add_argument("--seed", type=int, default=0, help="seed of the generated sentences")
        p.add_argument("--fortune-dir", default=str(FORTUNE_DIR), help="root of the fortune files")
    args = nc.stage_args(__doc__.splitlines()[0], argv, extra)
    if nc.is_done(args.data, STAGE) and not args.force:
        print(f"stage {STAGE} already done ({nc.done_marker(args.data, STAGE)}); use --force to redo")
        return 0
    timer = nc.Timer()
    corpus01 = _corpus_stage01()
    files = corpus01.fortune_files(Path(args.fortune_dir))
    if not files:
        raise SystemExit(f"no fortune files under {args.fortune_dir}: apt-get install fortunes fortunes-min")
    fortunes = list(corpus01.collect(f.read_text(encoding="utf-8", errors="replace") for f in files))
    counts = {kind: getattr(args, kind) for kind in DEFAULT_COUNTS}
    rows = build(fortunes, counts, args.seed)
    out = nc.write_text_table(Path(args.data) / "text.tsv", rows)
    kinds = {k: sum(r.kind == k for r in rows) for k in DEFAULT_COUNTS}
    splits = {s: sum(r.split == s for r in rows) for s in nc.SPLITS}
    words = sum(len(r.text.split()) for r in rows)
    nc.mark_done(args.data, STAGE, {"sentences": len(rows), "kinds": kinds, "splits": splits, "words": words,
                                    "seed": args.seed, "seconds": timer.seconds})
    print(f"wrote {out}: {len(rows)} sentences, {words} words; {kinds}; {splits} in {timer.seconds} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
