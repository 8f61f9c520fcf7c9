"""Stage 05 (optional): relabel token shards with the weak forms of "to" and "for" -> OUT/<same names>.

Stage 03 aligned each utterance to the frontend's dictionary forms, where "to" is labelled like "two" and "for" like
"four" (``audiopd.text.g2p.WEAK_FORMS`` says why that costs a voice its "two" and "four"). This stage rewrites
each utterance's phoneme ids to ``phonemize(text, weak_forms=True)``'s and keeps its codes and timing: a word whose
weak form has as many tokens keeps its durations; a shorter one ("for": F AO1 R -> F ER0) gives its last token the
frames of the tokens it lost, so durations still sum to the utterance's frames. An utterance whose stored ids are
not the frontend's dictionary labelling of its text (the frontend changed since stage 03) is kept as it was and
counted. A voice trained on the output must be exported with ``--weak-forms`` so that it is spoken to the same way
(``VoiceInfo.weak_forms``).

    python recipes/natural/05_weak_forms.py --text DATA/text.tsv --out DATA/tokens/mel22k-weak DATA/tokens/mel22k/*.safetensors
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from audiopd.text.frontend import phonemize
from audiopd.text.symbols import symbols_to_ids
from audiopd.train.shards import Shard, Utterance, write_shard


def read_texts(paths: Sequence[Path]) -> dict[str, str]:
    """Sentence id -> spoken text, from stage 01's ``text.tsv`` files (later files win)."""
    texts: dict[str, str] = {}
    for path in paths:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            for row in reader:
                texts[row["id"]] = row["text"]
    return texts


def relabel(phonemes: np.ndarray, durations: np.ndarray, text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(ids, durations)`` of ``text`` in weak forms, the frames regrouped word by word; None when ``phonemes`` are
    not ``phonemize(text)``'s (nothing to map from)."""
    strong, weak = phonemize(text), phonemize(text, weak_forms=True)
    if tuple(int(i) for i in phonemes) != tuple(strong.ids):
        return None
    ids, durs = list(strong.ids), [int(d) for d in durations]
    # Right to left, so the spans still to visit keep their positions when a word shrinks.
    for sw, ww in reversed(list(zip(strong.words, weak.words))):
        new = weak.tokens[ww.start:ww.end]
        if tuple(strong.tokens[sw.start:sw.end]) == tuple(new):
            continue
        old = durs[sw.start:sw.end]
        kept = old[: len(new) - 1] + [sum(old[len(new) - 1:])]
        ids[sw.start:sw.end] = symbols_to_ids(new)
        durs[sw.start:sw.end] = kept
    if tuple(ids) != tuple(weak.ids):  # the word spans did not line up: refuse rather than mislabel
        return None
    return np.asarray(ids, dtype=np.int64), np.asarray(durs, dtype=np.int64)


def relabel_shard(path: Path, out: Path, texts: dict[str, str]) -> dict:
    shard = Shard(path)
    utts, changed, kept = [], 0, 0
    for i in range(len(shard)):
        u = shard.utterance(i)
        sentence = u.utt_id.rsplit("/", 1)[-1]
        got = relabel(u.phonemes, u.durations, texts[sentence]) if sentence in texts else None
        if got is None:
            kept += 1
            utts.append(u)
            continue
        changed += int(len(got[0]) != len(u.phonemes) or not np.array_equal(got[0], u.phonemes))
        utts.append(Utterance(utt_id=u.utt_id, speaker=u.speaker, phonemes=got[0], durations=got[1], codes=u.codes))
    write_shard(out / path.name, utts, shard.meta)
    return {"shard": path.name, "utterances": len(utts), "relabelled": changed, "kept_unmapped": kept}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("shards", nargs="+", help="stage 04's shard files")
    p.add_argument("--text", action="append", required=True, help="stage 01's text.tsv (repeat for several corpora)")
    p.add_argument("--out", required=True, help="folder for the relabelled shards (same file names)")
    args = p.parse_args(argv)
    out = Path(args.out)
    if any(Path(s).resolve().parent == out.resolve() for s in args.shards):
        raise SystemExit("--out must not be the shards' own folder (the inputs stay as they are)")
    missing = [t for t in args.text if not Path(t).is_file()]
    if missing:
        raise SystemExit(f"text table(s) not found: {', '.join(missing)} (stage 01's DATA/text.tsv)")
    texts = read_texts([Path(t) for t in args.text])
    for s in args.shards:
        print(json.dumps(relabel_shard(Path(s), out, texts)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
