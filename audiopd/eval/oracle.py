"""Where a voice loses intelligibility: WER with more and more of the ground truth replaced by the model.

    python -m audiopd.eval.oracle --data data --voice joe [--n 40] [--speakers slt,rms] \
        [--systems teacher,codec,fine,gt_dur_parallel,gt_dur_serial,parallel,serial] [--out report.json]

The held-out token shard (``DATA/tokens/<codec>/test-*.safetensors``, or ``dev-*`` with ``--split dev``:
recipes/corpus stage 06 or recipes/natural stage 04, held-out sentences encoded by the corpus codec, never
trained on; a natural corpus names its speakers by teacher, matched to the voice's by its recorded teachers) holds, per utterance, the phoneme
ids, the frames per phoneme and the codec tokens of the teacher recording. Each system below keeps
some of that ground truth and lets the model produce the rest; the step from one row to the next is
the WER that one stage of the voice costs:

* ``teacher``: the corpus recording itself (what the recogniser makes of the teacher);
* ``codec``: the ground-truth tokens, decoded by the codec (the codec's own loss);
* ``fine``: ground-truth durations and level 0, fine levels by the model's refinement passes;
* ``gt_dur_parallel`` / ``gt_dur_serial``: ground-truth durations, every level by the decoder;
* ``parallel`` / ``serial``: durations predicted too (the voice as users hear it, without chunking
  or joining: one held-out sentence is one chunk).

The model is called directly (``audiopd.decoding``), with the facade's decoder configs
(``SynthesisConfig``: the shipped K and fine passes) and one seed. Clips are judged as in tts_eval
(``audiopd.eval.judging``: ``--asr whisper`` by default or ``pocketsphinx``; WER corpus-level after
``judge_words``; DistillMOS and DNSMOS means per row, printed as tables of the same shape as the WER one).
The utterances are the first ``n`` of each speaker in shard order (ids are hashes: an unbiased draw).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from audiopd.artifacts import DEFAULT_VOICE
from audiopd.errors import AudiopdError
from audiopd.eval import judging
from audiopd.eval.heldout import read_manifest

SYSTEMS = ("teacher", "codec", "fine", "gt_dur_parallel", "gt_dur_serial", "parallel", "serial")

# recognizer(audio, sample_rate) -> recognised text
Recognizer = Callable[[np.ndarray, int], str]


class OracleInputError(AudiopdError, ValueError):
    """The data or an option of the oracle evaluation is unusable."""


def decode_system(system: str, tts, utt, speaker: int, seed: int) -> np.ndarray:
    """Codes [Q, T] of one system for one shard utterance."""
    import torch

    from audiopd.decoding import api
    from audiopd.decoding.parallel import decode_parallel
    from audiopd.decoding.refine import DecodeStats, refine_fine_levels
    from audiopd.decoding.serial import decode_serial

    model, cfg = tts.model, tts.config
    if system == "codec":
        return np.asarray(utt.codes)
    phon = [utt.phonemes.tolist()]
    gt = None if system in ("parallel", "serial") else [utt.durations.tolist()]
    cond = api.build_condition(model, phon, speaker, durations=gt)
    gen = torch.Generator().manual_seed(seed)
    if system == "fine":
        codes = torch.zeros(1, model.num_codebooks, cond.num_frames, dtype=torch.long)
        codes[0, 0] = torch.as_tensor(utt.codes[0], dtype=torch.long)
        codes = refine_fine_levels(model, cond, codes, cond.frame_mask.clone(), fine_passes=cfg.parallel.fine_passes,
                                   sampling=cfg.parallel.fine_sampling, generator=gen,
                                   stats=DecodeStats(steps_per_level=[0] * model.num_codebooks),
                                   window=cfg.parallel.attention_window)
        return codes[0].numpy()
    if system.endswith("parallel"):
        res = decode_parallel(model, cond, cfg.parallel, generator=gen)
    else:
        res = decode_serial(model, cond, cfg.serial, generator=gen)
    return res.codes[0, :, : int(res.lengths[0])].numpy()


def pick_utterances(tts, data: str | Path, *, split: str = "test", n: int = 40,
                    speakers: Sequence[str] | None = None) -> tuple[dict[str, list], dict, dict[str, str]]:
    """The first ``n`` shard utterances of each speaker of the ``split`` token shard: (speaker -> utterances,
    (corpus voice, id) -> (text, wav), voice speaker -> corpus speaker)."""
    from audiopd.train.shards import Shard, find_shards

    data = Path(data)
    shard_dir = data / "tokens" / tts.codec.name
    if split not in ("dev", "test"):
        raise OracleInputError(f"split must be dev or test, got {split!r}")
    paths = [p for p in find_shards(shard_dir) if p.name.startswith(f"{split}-")] if shard_dir.is_dir() else []
    if not paths:
        raise OracleInputError(f"no held-out token shard ({split}-*.safetensors) in {shard_dir}: run the corpus's "
                               "token stage (recipes/corpus stage 06, recipes/natural stage 04)")
    texts = {(r["voice"], r["id"]): (r["text"], r["wav"]) for r in read_manifest(data)}
    voices = list(tts.voices)
    info = tts.model.info
    # The natural corpus names speakers by teacher (kokoro:af_heart), a voice by person (heart): both map here.
    corpus_name = {sp: info.teacher(sp) for sp in voices}
    speakers = list(speakers) if speakers else voices
    unknown = [s for s in speakers if s not in voices]
    if unknown:
        raise OracleInputError(f"unknown speaker(s) {', '.join(unknown)}: the voice has {', '.join(voices)}")
    picked: dict[str, list] = {s: [] for s in speakers}
    for path in paths:
        shard = Shard(path)
        table = list(shard.meta.voices) or voices
        by_corpus = {corpus_name[sp]: sp for sp in voices if corpus_name[sp] in table}
        if not by_corpus:
            raise OracleInputError(f"{path}: speakers {table} hold none of the voice's {voices} "
                                   f"(teachers {[corpus_name[sp] for sp in voices]})")
        for i in range(len(shard)):
            u = shard.utterance(i)
            sp = by_corpus.get(table[u.speaker]) if u.speaker < len(table) else None
            if sp in picked and len(picked[sp]) < n:
                picked[sp].append(u)
    return picked, texts, corpus_name


def evaluate(tts, data: str | Path, *, n: int = 40, speakers: Sequence[str] | None = None,
             systems: Sequence[str] = SYSTEMS, seed: int = 0, recognizer: Recognizer | None = None,
             log: Callable[[str], None] | None = None, judge: judging.EvalJudge | None = None,
             split: str = "test") -> dict[str, Any]:
    """WER per speaker and system (see the module doc) on the ``split`` token shard; returns a JSON-able report."""
    from audiopd.audio import read_audio
    from audiopd.text.wer import wer

    log = log or (lambda msg: None)
    bad = [s for s in systems if s not in SYSTEMS]
    if bad or not systems:
        raise OracleInputError(f"systems must be a non-empty list of {', '.join(SYSTEMS)}, got {list(systems)}")
    if n < 1:
        raise OracleInputError(f"n must be >= 1, got {n}")
    picked, texts, corpus_name = pick_utterances(tts, data, split=split, n=n, speakers=speakers)
    speakers, voices = list(picked), list(tts.voices)
    data = Path(data)
    if judge is None:
        judge = judging.EvalJudge(recognizer) if recognizer else judging.make_judge(judging.JudgeConfig())
    t0 = time.perf_counter()
    utts, rows = [], []
    for sp in speakers:
        for system in systems:
            refs, hyps, scores = [], [], []
            for u in picked[sp]:
                text, wav = texts[(corpus_name[sp], u.utt_id.split("/", 1)[1])]
                if system == "teacher":
                    audio, rate = read_audio(data / wav)
                else:
                    codes = decode_system(system, tts, u, voices.index(sp), seed)
                    # The codec row is the codec's own round trip; every other row decodes as the voice does (its
                    # speaker's view: the voice's mel refiner, its blur).
                    codec = tts.codec if system == "codec" else tts.codec_for(voices.index(sp))
                    audio, rate = codec.decode(codes[None])[0], tts.sample_rate
                sc = judge.score(text, audio, rate)
                refs.append(sc["ref"])
                hyps.append(sc["hyp"])
                scores.append(sc)
                utts.append({"speaker": sp, "system": system, "id": u.utt_id, "ref": " ".join(sc["ref"]),
                             "hyp": " ".join(sc["hyp"]), **{k: sc[k] for k in judging.MOS_KEYS}})
            rows.append({"speaker": sp, "system": system, "n": len(refs),
                         "wer": round(100 * wer(refs, hyps), 2) if refs else None, **judging.mos_means(scores)})
            log(f"{sp} {system}: WER {rows[-1]['wer']} on {len(refs)}")
    for system in systems:
        mine = [u for u in utts if u["system"] == system]
        rows.append({"speaker": "all", "system": system, "n": len(mine),
                     "wer": round(100 * wer([u["ref"] for u in mine], [u["hyp"] for u in mine]), 2) if mine else None,
                     **judging.mos_means(mine)})
    return {"data": str(data), "split": split, "codec": tts.codec.name, "n": n, "seed": seed, "speakers": speakers,
            "systems": list(systems), "rows": rows, "utterances": utts, "judge": judge.describe(),
            "wall_s": round(time.perf_counter() - t0, 2)}


def markdown_table(report: dict[str, Any], key: str = "wer") -> str:
    """Speakers as rows, systems as columns: WER % (``key="wer"``) or one of ``judging.MOS_KEYS``."""
    systems = report["systems"]
    first = "speaker" if key == "wer" else f"speaker ({key})"
    lines = [f"| {first} | n | " + " | ".join(systems) + " |", "|---|---:|" + "---:|" * len(systems)]
    by = {(r["speaker"], r["system"]): r for r in report["rows"]}
    for sp in [*report["speakers"], "all"]:
        cells = [by.get((sp, s), {}).get(key) for s in systems]
        n = by.get((sp, systems[0]), {}).get("n", 0)
        lines.append(f"| {sp} | {n} | " + " | ".join("-" if c is None else f"{c:.2f}" for c in cells) + " |")
    return "\n".join(lines)


def _csv(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audiopd.eval.oracle", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="corpus directory (recipes/corpus)")
    ap.add_argument("--voice", default=None, help=f"shipped voice name or a path like ./myvoice (default: {DEFAULT_VOICE})")
    ap.add_argument("--n", type=int, default=40, help="utterances per speaker")
    ap.add_argument("--speakers", default=None, help="comma-separated speakers (default: all)")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated systems")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", default="test", choices=("dev", "test"),
                    help="the held-out token shard to read (dev-* or test-*; default: test)")
    ap.add_argument("--out", default=None, help="write the JSON report here")
    judging.add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        import audiopd

        judge = judging.from_args(args)
        tts = audiopd.load(args.voice)
        report = evaluate(tts, args.data, n=args.n, speakers=_csv(args.speakers) if args.speakers else None,
                          systems=_csv(args.systems), seed=args.seed, judge=judge, split=args.split,
                          log=lambda m: print(m, file=sys.stderr, flush=True))
    except AudiopdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(markdown_table(report))
    for key in judging.MOS_KEYS if judge.mos else ():
        print()
        print(markdown_table(report, key))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
