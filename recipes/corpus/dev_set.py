"""A development set: held-out sentences, disjoint from the corpus's test split, for choosing decoding settings.

    python recipes/corpus/dev_set.py --data DATA --out DEV [--n 100] [--voices slt,rms,awb,kal16]
    python -m audiopd.eval.tts_eval --data DEV --n 100 ...

Decoding settings (step counts, fine passes, temperatures) must not be picked on the test sentences that the
figures are then reported on. Stage 01 keeps the ``--max-sentences`` lowest ids of the ~15,000 qualifying
sentences; every sentence beyond that cap is unseen by any model. This script takes the ``--n`` lowest-id
sentences of the ``test`` hash bucket that DATA's corpus does not hold (so no voice trained on them, and the
test split keeps its own sentences), writes them as DEV's stage-01 output and renders them with stage 02
(every teacher voice, ~15 s for 100 sentences). DEV is then a corpus that ``tts_eval`` reads like any other.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_common as cc  # noqa: E402

sentences_stage = importlib.import_module("01_sentences")
render_stage = importlib.import_module("02_render")


def corpus_ids(data: Path) -> set[str]:
    path = cc.corpus_dir(data) / "sentences.tsv"
    if not path.is_file():
        raise SystemExit(f"no {path}: build the corpus first (recipes/corpus/run.sh), or pass --data")
    with path.open(encoding="utf-8") as f:
        next(f)
        return {line.split("\t", 1)[0] for line in f}


def dev_rows(rows: list[tuple[str, str, str]], exclude: set[str], n: int) -> list[tuple[str, str, str]]:
    """The ``n`` lowest-id test-bucket rows whose id is not in ``exclude``."""
    return sorted(r for r in rows if r[1] == "test" and r[0] not in exclude)[:n]


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--out", required=True, help="root of the development corpus to write")
        p.add_argument("--n", type=int, default=100, help="sentences (default: 100)")
        p.add_argument("--voices", default=",".join(cc.VOICES), help="comma-separated flite voices")
        p.add_argument("--fortune-dir", default=str(sentences_stage.FORTUNE_DIR), help="root of the fortune files")
    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    if args.n < 1:
        raise SystemExit(f"--n must be >= 1, got {args.n}")
    out = Path(args.out)
    if out.resolve() == Path(args.data).resolve():
        raise SystemExit("--out must not be the corpus itself")
    files = sentences_stage.fortune_files(Path(args.fortune_dir))
    if not files:
        raise SystemExit(f"no fortune files under {args.fortune_dir}: apt-get install fortunes fortunes-min")
    texts = (f.read_text(encoding="utf-8", errors="replace") for f in files)
    rows = dev_rows(sentences_stage.build_rows(sentences_stage.collect(texts), None), corpus_ids(Path(args.data)),
                    args.n)
    if len(rows) < args.n:
        print(f"warning: only {len(rows)} unused test-bucket sentences exist, not {args.n}")
    sentences = cc.corpus_dir(out) / "sentences.tsv"
    if cc.is_done(out, sentences_stage.STAGE) and sentences.read_text(encoding="utf-8").count("\n") - 1 != len(rows):
        raise SystemExit(f"{out} holds a development set of another size; use a new --out")
    cc.atomic_write_text(sentences, "id\tsplit\ttext\n" + "".join(f"{i}\t{sp}\t{t}\n" for i, sp, t in rows))
    cc.mark_done(out, sentences_stage.STAGE, {"sentences": len(rows), "test": len(rows), "train": 0,
                                              "development_set_of": str(args.data)})
    print(f"wrote {sentences}: {len(rows)} test-bucket sentences that {args.data} does not hold")
    return render_stage.main(["--data", str(out), "--voices", args.voices])


if __name__ == "__main__":
    sys.exit(main())
