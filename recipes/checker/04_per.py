"""Stage 04: a recogniser's greedy phone error rate on held-out speech: the natural corpus's test-split teacher
audio (``recipes/natural`` stage 02) and, with ``--voice``, that voice's own parallel output of the same sentences.

The checker's phone findings (``audiopd/checker/ctc.py``) stand on how well the recogniser hears clean speech: a
recogniser that mishears a voice's clean clips makes its phone error rate noisy, and the thresholds must then be
loose. Run it for the shipped recogniser and a new one side by side:

    python recipes/checker/04_per.py --natural DATA/natural --recognizer checkers/phones16k --voice natural
    python recipes/checker/04_per.py --natural DATA/natural --recognizer NEW_DIR --voice natural
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--natural", required=True, help="natural corpus root (manifest.jsonl, wav/)")
    p.add_argument("--recognizer", default="phones16k", help="recogniser artifact name or directory")
    p.add_argument("--voice", default=None, help="also the voice's own parallel output (its speakers' teachers)")
    p.add_argument("--n", type=int, default=226, help="test sentences per teacher (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="also write the figures here")
    args = p.parse_args(argv)
    import soundfile as sf

    from audiopd.checker.ctc import phone_errors
    from audiopd.checker.phones import labels_of_ids
    from audiopd.lite.recognizer import load_recognizer
    from audiopd.text import phonemize

    root = Path(args.natural)
    rows = [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["split"] == "test"]
    rec = load_recognizer(args.recognizer)
    tts, speaker_of = None, {}
    if args.voice:
        import audiopd

        tts = audiopd.load(args.voice)
        speaker_of = {t: v for v, t in zip(tts.model.info.voices, tts.model.info.teachers)}
    out: dict[str, dict[str, float]] = {}
    for teacher in sorted({r["voice"] for r in rows}):
        mine = sorted((r for r in rows if r["voice"] == teacher), key=lambda r: r["id"])[: args.n]
        counts = {"teacher": [0, 0], "voice": [0, 0]}
        for r in mine:
            labels = [lbl for lbl, _ in labels_of_ids(phonemize(r["text"]).ids)]
            audio, rate = sf.read(root / r["wav"], dtype="float32")
            counts["teacher"][0] += phone_errors(rec.posteriors(audio, rate), labels)
            counts["teacher"][1] += len(labels)
            if teacher in speaker_of:
                res = tts.synthesize(r["text"], voice=speaker_of[teacher], mode="parallel", seed=args.seed,
                                     check=False)
                counts["voice"][0] += phone_errors(rec.posteriors(res.audio, res.sample_rate), labels)
                counts["voice"][1] += len(labels)
        out[teacher] = {k: round(100 * e / n, 2) for k, (e, n) in counts.items() if n}
        out[teacher]["sentences"] = len(mine)
        print(teacher, json.dumps(out[teacher]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"recognizer": str(args.recognizer), "per_percent": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
