"""Codec round-trip evaluation: levels used vs ASR WER, F0 error, mel-cepstral distortion, PESQ-wb, speed.

``python -m audiopd.eval.codec_eval --data data --codec world16k --levels 1,2,4,8 --limit 160``
evaluates on the corpus's held-out ``test`` split (sentences never used to fit the codec) and prints a
markdown table. WER (``--asr whisper``, the default, or ``pocketsphinx``), DistillMOS and DNSMOS come from
``audiopd.eval.judging``, for the originals and for each level count.
F0 error compares Harvest F0 of the decoded audio with Harvest F0 of the original, in cents, on frames voiced
in both (so it measures the whole round trip, not only the quantiser). Besides mean and median it reports the
two standard pitch-tracking figures (Rabiner et al. 1976; Chu & Alwan 2009): the gross pitch error rate (frames
more than 20% off) and the mean error of the remaining, fine frames.

Two reference rows separate what the codec loses from what its measurement loses:

* ``vocoder`` (WORLD and mel codecs): the unquantised analysis features (WORLD's, or the log-mel), resynthesised by
  the codec's own decode path (for a mel codec, its current decoder: ``--decoder hq|fast``). Whatever this row
  loses is the vocoder plus re-analysis, which no quantiser can win back.
* ``f0_token_mean_abs_cents`` (WORLD codecs): the decoded F0 track against the analysed one, before any
  synthesis: the error of the F0 tokens themselves. For mel codecs ``logmel_mae`` is the tokens' own error: mean
  absolute difference of decoded and analysed log-mel (natural-log units).

``--manifest FILE --set heldout`` evaluates the rows of a manifest (``recipes/codec``'s: ``set``, ``wav``, ``text``,
``voice``) instead of a flite corpus; ``--no-f0`` skips the Harvest pitch figures (the slowest measurement);
``decode_rtf`` is decode wall seconds per audio second on ``--threads`` torch threads (2 = issue 22's bar), and
``distillmos_by_voice`` splits the naturalness by speaker.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from audiopd.codec import Codec, load_codec
from audiopd.errors import AudiopdError
from audiopd.codec.mel import MelCodec
from audiopd.codec.world import WorldCodec, analyze
from audiopd.eval import judging

VOCODER = "vocoder"  # the reference row: unquantised analysis features through the codec's synthesis


@dataclass
class RoundTripStats:
    levels: int | str
    refs: list[list[str]] = field(default_factory=list)
    hyps: list[list[str]] = field(default_factory=list)
    f0_cents: list[np.ndarray] = field(default_factory=list)
    f0_token_cents: list[np.ndarray] = field(default_factory=list)
    vuv_errors: int = 0
    vuv_frames: int = 0
    mcd: list[float] = field(default_factory=list)
    scores: list[dict] = field(default_factory=list)
    pesq: list[float] = field(default_factory=list)
    logmel_mae: list[float] = field(default_factory=list)
    voices: list[str] = field(default_factory=list)
    decode_seconds: float = 0.0
    audio_seconds: float = 0.0

    def summary(self) -> dict:
        from audiopd.text.wer import wer

        cents = np.abs(np.concatenate(self.f0_cents)) if self.f0_cents else np.zeros(0)
        token = np.abs(np.concatenate(self.f0_token_cents)) if self.f0_token_cents else np.zeros(0)
        gross = cents > GROSS_CENTS

        def mean(a: np.ndarray) -> float | None:
            return round(float(np.mean(a)), 1) if a.size else None

        return {
            "levels": self.levels,
            "wer": round(100 * wer(self.refs, self.hyps), 2),
            **judging.mos_means(self.scores),
            "f0_mean_abs_cents": mean(cents),
            "f0_median_abs_cents": round(float(np.median(cents)), 1) if cents.size else None,
            "f0_gross_pct": round(100 * float(gross.mean()), 2) if cents.size else None,
            "f0_fine_mean_abs_cents": mean(cents[~gross]),
            "f0_token_mean_abs_cents": mean(token),
            "vuv_error_pct": round(100 * self.vuv_errors / max(1, self.vuv_frames), 2),
            "mcd_db": round(float(np.mean(self.mcd)), 3) if self.mcd else None,
            "pesq_wb": round(float(np.mean(self.pesq)), 3) if self.pesq else None,
            "logmel_mae": round(float(np.mean(self.logmel_mae)), 4) if self.logmel_mae else None,
            "decode_x_realtime": round(self.audio_seconds / max(1e-9, self.decode_seconds), 1),
            "decode_rtf": round(self.decode_seconds / max(1e-9, self.audio_seconds), 4),
            **by_voice(self.scores, self.voices),
            **item_scores(self.scores),
        }


def item_scores(scores: list[dict]) -> dict:
    """``{"distillmos_items": [...]}``: each item's DistillMOS in item order (None where unjudged), so that two
    rows of the same items can be compared pair by pair (``paired_change``)."""
    return {"distillmos_items": [None if s.get("distillmos") is None else round(float(s["distillmos"]), 4)
                                 for s in scores]}


def paired_change(row: dict, original: dict) -> dict | None:
    """Mean DistillMOS change of ``row`` from ``original`` over the items both judged, with a 95% bootstrap
    interval over items (``audiopd.eval.compare.paired_mean``); None when either lacks per-item scores."""
    from audiopd.eval.compare import paired_mean

    a, b = row.get("distillmos_items"), original.get("distillmos_items")
    if not a or not b or len(a) != len(b):
        return None
    return paired_mean({i: x for i, x in enumerate(a) if x is not None},
                       {i: x for i, x in enumerate(b) if x is not None})


def by_voice(scores: list[dict], voices: list[str]) -> dict:
    """``{"distillmos_by_voice": {voice: mean}}`` when the items name their voices, else {}."""
    if not voices or len(voices) != len(scores):
        return {}
    out = {v: judging.mos_means(s for s, w in zip(scores, voices) if w == v)["distillmos"] for v in sorted(set(voices))}
    return {"distillmos_by_voice": out}


# A gross pitch error is an estimate more than 20% off the reference (Rabiner et al. 1976), in either
# direction: +20% is 316 cents up, -20% is 386 cents down; the smaller bound keeps the rule symmetric in cents.
GROSS_CENTS = 1200.0 * float(np.log2(1.2))


def harvest_f0(audio: np.ndarray, sr: int) -> np.ndarray:
    import pyworld as pw

    f0, _ = pw.harvest(audio.astype(np.float64), sr, f0_floor=60.0, f0_ceil=500.0, frame_period=10.0)
    return f0


def f0_errors(ref: np.ndarray, hyp: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Cents errors on frames voiced in both, and voicing-decision errors over all frames."""
    n = min(len(ref), len(hyp))
    ref, hyp = ref[:n], hyp[:n]
    both = (ref > 0) & (hyp > 0)
    cents = 1200.0 * np.log2(hyp[both] / ref[both])
    return cents, int(((ref > 0) != (hyp > 0)).sum()), n


def mel_cepstral_distortion(ref: np.ndarray, hyp: np.ndarray) -> float:
    """MCD in dB over frames, c0 excluded (Kubichek 1993), on WORLD's coded (mel-cepstral) envelope."""
    n = min(len(ref), len(hyp))
    diff = ref[:n, 1:] - hyp[:n, 1:]
    return float(np.mean((10.0 / np.log(10.0)) * np.sqrt(2.0 * (diff**2).sum(axis=1))))


def pesq_wb(ref: np.ndarray, deg: np.ndarray, sr: int) -> float | None:
    try:
        from pesq import pesq
    except ImportError:  # optional tool: the table says "n/a" without it
        return None
    n = min(len(ref), len(deg))
    try:
        return float(pesq(sr, ref[:n], deg[:n], "wb"))
    except Exception:  # noqa: BLE001 - pesq raises its own error types (e.g. no utterance found): no figure
        return None


def evaluate(
    codec: Codec,
    items: list[tuple[np.ndarray, str]],
    levels: list[int],
    *,
    with_pesq: bool = True,
    with_vocoder: bool = True,
    with_f0: bool = True,
    judge: judging.EvalJudge | None = None,
    voices: list[str] | None = None,
    log: Callable[[str], None] | None = None,
) -> tuple[dict, list[dict]]:
    """Round-trip ``items`` (audio, text) through ``codec`` for each level count; return (original, rows).

    For a WORLD codec, ``rows`` starts with the ``vocoder`` reference row (unquantised features through
    the same synthesis) unless ``with_vocoder`` is false, and each level row carries the F0 tokens' own
    error (``f0_token_mean_abs_cents``). ``judge`` scores every clip (default: Whisper with DistillMOS/DNSMOS).
    """
    if judge is None:
        judge = judging.make_judge(judging.JudgeConfig())
    sr = codec.sample_rate
    original = RoundTripStats(levels="original")
    stats: dict[int | str, RoundTripStats] = {q: RoundTripStats(levels=q) for q in levels}
    world, mel = isinstance(codec, WorldCodec), isinstance(codec, MelCodec)
    if (world or mel) and with_vocoder:
        stats = {VOCODER: RoundTripStats(levels=VOCODER), **stats}
    t_start = time.perf_counter()
    for n, (audio, text) in enumerate(items):
        if log and n and n % 10 == 0:
            log(f"{n}/{len(items)} items in {time.perf_counter() - t_start:.0f} s")
        voice = [voices[n]] if voices else []
        original.voices += voice
        ref_words = judge.words(text)
        sc = judge.score(ref_words, audio, sr)
        original.refs.append(ref_words)
        original.hyps.append(sc["hyp"])
        original.scores.append(sc)
        f0_ref = harvest_f0(audio, sr) if with_f0 else None
        # A WORLD codec's tokens are made from these same features: analyse once, not once per use (Harvest and
        # D4C are most of the evaluation's time). Same float32 input as Codec.encode.
        feats = analyze(np.asarray(audio, dtype=np.float32), codec.cfg) if world else None
        logmel = codec.analyzer(audio) if mel else None
        if feats is not None:
            codes = codec.encode_features(feats)[None]
        else:
            codes = codec.encode_mel(logmel)[None] if mel else codec.encode(audio)
        for q, st in stats.items():
            st.voices += voice
            t = time.perf_counter()
            if q == VOCODER:
                y = (codec.synthesize(feats) if world else codec.vocode(logmel)[0])[: len(audio)]
            else:
                y = codec.decode(codes[:, :q])[0][: len(audio)]
            st.decode_seconds += time.perf_counter() - t
            st.audio_seconds += len(audio) / sr
            sc = judge.score(ref_words, y, sr)
            st.refs.append(ref_words)
            st.hyps.append(sc["hyp"])
            st.scores.append(sc)
            if f0_ref is not None:
                cents, vuv_err, frames = f0_errors(f0_ref, harvest_f0(y, sr))
                st.f0_cents.append(cents)
                st.vuv_errors += vuv_err
                st.vuv_frames += frames
            if logmel is not None:
                decoded = logmel if q == VOCODER else codec.decode_mel(codes[0, :q])
                st.logmel_mae.append(float(np.abs(decoded - logmel).mean()))
            if feats is not None:
                decoded = feats if q == VOCODER else codec.decode_features(codes[0, :q])
                st.mcd.append(mel_cepstral_distortion(feats.mcep, decoded.mcep))
                if q != VOCODER:
                    st.f0_token_cents.append(f0_errors(feats.f0, decoded.f0)[0])
            if with_pesq:
                p = pesq_wb(audio, y, sr)
                if p is not None:
                    st.pesq.append(p)
    from audiopd.text.wer import wer

    return ({"levels": "original", "wer": round(100 * wer(original.refs, original.hyps), 2),
             **judging.mos_means(original.scores), **by_voice(original.scores, original.voices),
             **item_scores(original.scores)},
            [st.summary() for st in stats.values()])


def markdown_table(original: dict, rows: list[dict]) -> str:
    cols = ["levels", "wer", *judging.MOS_KEYS, "f0_mean_abs_cents", "f0_median_abs_cents", "f0_gross_pct",
            "f0_fine_mean_abs_cents", "f0_token_mean_abs_cents", "vuv_error_pct", "mcd_db", "logmel_mae", "pesq_wb",
            "decode_x_realtime", "decode_rtf"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in [original, *rows]:
        lines.append("| " + " | ".join("" if r.get(c) is None else str(r.get(c)) for c in cols) + " |")
    return "\n".join(lines)


def load_test_items(data: Path, limit: int, voices: list[str] | None = None) -> list[tuple[np.ndarray, str, str]]:
    from audiopd.audio import read_audio

    rows = []
    with open(data / "corpus" / "manifest.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["split"] == "test" and (voices is None or r["voice"] in voices):
                rows.append(r)
    # Interleave voices so a limit still covers every voice.
    rows.sort(key=lambda r: (r["id"], r["voice"]))
    rows = rows[:limit]
    return [(read_audio(data / r["wav"])[0], r["text"], r["voice"]) for r in rows]


def load_manifest_items(manifest: Path, limit: int, which: str | None) -> list[tuple[np.ndarray, str, str]]:
    """Rows of a manifest (``wav`` relative to its folder, ``text``, ``voice``, ``set``), voices interleaved."""
    from audiopd.audio import read_audio

    rows = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if which is None or r.get("set") == which]
    rows.sort(key=lambda r: (r["id"], r["voice"]))
    return [(read_audio(manifest.parent / r["wav"])[0], r["text"], r["voice"]) for r in rows[:limit]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="data")
    p.add_argument("--codec", default="world16k")
    p.add_argument("--levels", default="1,2,4,8")
    p.add_argument("--limit", type=int, default=160)
    p.add_argument("--no-pesq", action="store_true")
    p.add_argument("--no-vocoder", action="store_true", help="leave out the unquantised-vocoder reference row")
    p.add_argument("--no-f0", action="store_true", help="skip the Harvest pitch figures (the slowest part)")
    p.add_argument("--manifest", default=None, help="evaluate this manifest's rows instead of DATA's corpus")
    p.add_argument("--set", default=None, help="with --manifest: only rows of this set (e.g. heldout)")
    p.add_argument("--decoder", default=None, help="the codec's decoder (default: its own)")
    p.add_argument("--threads", type=int, default=2, help="torch threads while decoding and judging (default 2)")
    p.add_argument("--json", help="also write the figures to this JSON file")
    judging.add_arguments(p)
    args = p.parse_args(argv)
    try:
        judge = judging.from_args(args, threads=args.threads)
    except AudiopdError as exc:
        print(f"codec_eval: error: {exc}", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(args.threads)
    codec = load_codec(args.codec, decoder=args.decoder)
    items = (load_manifest_items(Path(args.manifest), args.limit, args.set) if args.manifest
             else load_test_items(Path(args.data), args.limit))
    levels = [int(x) for x in args.levels.split(",")]
    t = time.time()
    original, rows = evaluate(codec, [(a, txt) for a, txt, _ in items], levels, with_pesq=not args.no_pesq,
                              with_vocoder=not args.no_vocoder, with_f0=not args.no_f0, judge=judge,
                              voices=[v for _, _, v in items], log=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"{len(items)} held-out utterances, {sum(len(a) for a, _, _ in items) / codec.sample_rate:.0f} s audio, "
          f"codec {codec.name} (decoder {codec.decoder}, {args.threads} threads), {time.time() - t:.0f} s, "
          f"WER by {judge.asr}")
    print(markdown_table(original, rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"original": original, "rows": rows, "judge": judge.describe(),
                                               "codec": codec.name, "decoder": codec.decoder,
                                               "threads": args.threads, "items": len(items)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
