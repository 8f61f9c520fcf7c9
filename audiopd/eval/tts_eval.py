"""Quality evaluation of a voice: ASR word error rate on held-out sentences, teacher vs parallel vs serial.

    python -m audiopd.eval.tts_eval --data data --voice joe --n 40 [--modes parallel,serial] \
        [--steps K] [--speakers slt,rms] [--split test|dev] [--batch 8] [--seed 0] [--join J] \
        [--out report.json] \
        [--asr whisper|pocketsphinx] [--no-mos] [--no-dnsmos] [--judge-cache FILE] [--peers kokoro:af_heart,piper:joe] \
        [--decoder hq|fast]

For every speaker of the voice the same ``N`` sentences of the corpus's held-out ``test`` split
(recipes/corpus: sentences no model or codec saw; ``--split dev`` takes the development split instead, for
choosing settings without looking at the test sentences) are judged (``audiopd.eval.judging``: ``--asr
whisper``, the default, or ``pocketsphinx`` for WER; DistillMOS and DNSMOS beside it) three ways: the
teacher's own recording from the corpus
(``DATA/corpus/wav/<speaker>/<id>.wav``, when the speaker is one of the corpus voices), and the voice
synthesising the sentence in each requested mode (checker off for ``parallel``/``serial``, so the
figures measure the decoder, not the ladder). The teacher's WER is the floor the ASR itself sets on
this text (pocketsphinx is far from perfect on flite speech), so the *gap* to the teacher is the
figure that says what the voice loses. WER is corpus-level (``audiopd.text.wer``), both sides normalised by
``judge_words``; the MOS columns are means over the row's clips.

Sentences are drawn (``audiopd.eval.heldout``) with ``random.Random(seed)`` from the test ids that every
evaluated corpus speaker has, so every speaker and mode speaks the same sentences and a rerun picks the same ones. Synthesis
runs through the facade (``Synthesizer.synthesize_batch``) in batches of ``--batch`` texts with the
same seed, in one process; the real-time factor is the wall time of those calls over the audio
seconds they produced (batched, so it is a throughput figure).

Peers: ``--peers kokoro:af_heart,piper:joe`` (``audiopd.eval.peers``, the ``teachers`` extra) speak the same
sentences (or passages) one text at a time with ``--threads``; each is a row of system ``peer`` named after it,
beside the voice's rows and not pooled with them. ``--modes ""`` with ``--peers`` leaves the voice out (its
speakers' teacher rows stay, to compare with).

Long texts: ``--join J`` speaks passages of J consecutive drawn sentences as one text each (``N // J``
passages; the facade cuts them into chunks at sentence boundaries, as for a user's paragraph), and the
teacher row recognises the parts' recordings joined by the facade's pause.

Cost: judging dominates: Whisper ~0.12-0.16 x real time per thread, DistillMOS ~0.1, DNSMOS ~0.3 s per clip
(it tiles a clip to 9 s), so ~1.5 s per 4 s clip on one thread; ``--n 40`` with four speakers, their teachers
and two modes (480 clips) takes ~12 min. Run long ones with nohup and ``--judge-cache`` (a rerun judges only
clips it has not seen).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audiopd.artifacts import DEFAULT_VOICE
from audiopd.codec.registry import add_decoder_argument
from audiopd.errors import AudiopdError
from audiopd.eval import judging
from audiopd.eval.heldout import (  # also imported from here by callers and tests
    SPLITS,
    TEACHER_PAUSE_S,  # noqa: F401
    EvalInputError,
    Sentence,
    join_sentences,
    read_manifest,
    select_sentences,
    teacher_audio,
)
from audiopd.lite import RUNTIMES
from audiopd.synthesis.config import PRECISIONS
from audiopd.text.wer import BROKEN_WER

EVAL_MODES = ("parallel", "serial", "auto")
TEACHER = "teacher"
PEER = "peer"

# recognizer(audio, sample_rate) -> recognised text
Recognizer = Callable[[np.ndarray, int], str]


@dataclass
class _Tally:
    """Per (speaker, system): reference and hypothesis words plus synthesis costs."""

    refs: list[list[str]]
    hyps: list[list[str]]
    passes: list[int]
    steps: list[int]
    scores: list[dict[str, Any]]
    wall_s: float = 0.0
    audio_s: float = 0.0

    def row(self, speaker: str, system: str, teacher_wer: float | None) -> dict[str, Any]:
        from audiopd.text.wer import wer

        w = round(100.0 * wer(self.refs, self.hyps), 2) if self.refs else None
        synth = system not in (TEACHER, PEER)
        timed = system != TEACHER
        return {
            "speaker": speaker, "system": system, "n": len(self.refs), "wer": w,
            "gap_pp": round(w - teacher_wer, 2) if synth and w is not None and teacher_wer is not None else None,
            "forward_passes": round(float(np.mean(self.passes)), 1) if synth and self.passes else None,
            "steps": round(float(np.mean(self.steps)), 1) if synth and self.steps else None,
            "rtf": round(self.wall_s / self.audio_s, 4) if timed and self.audio_s > 0 else None,
            "audio_s": round(self.audio_s, 3), "wall_s": round(self.wall_s, 3) if timed else None,
            **judging.mos_means(self.scores),
        }

    def add(self, ref: list[str], score: dict[str, Any], audio_s: float) -> None:
        self.refs.append(ref)
        self.hyps.append(score["hyp"])
        self.scores.append(score)
        self.audio_s += audio_s


def _tally() -> _Tally:
    return _Tally([], [], [], [], [])


def evaluate(tts, data: str | Path, *, n: int = 40, modes: Sequence[str] = ("parallel", "serial"),
             steps: int | None = None, seed: int = 0, batch: int = 8, speakers: Sequence[str] | None = None,
             join: int = 1, split: str = "test", speed: float = 1.0,
             recognizer: Recognizer | None = None, wav_dir: str | Path | None = None, voice_name: str = "",
             log: Callable[[str], None] | None = None, judge: judging.EvalJudge | None = None,
             peers: Sequence[Any] = ()) -> dict[str, Any]:
    """Run the evaluation with a loaded ``Synthesizer``; returns the JSON-able report (see module doc).

    ``forward_passes`` per text counts the passes of every model batch the text took part in (the
    facade's figure), so it does not shrink with batching; ``steps`` are level-0 steps (serial: one
    per frame). ``join`` > 1 evaluates passages of that many of the ``n`` sentences (``join_sentences``).
    ``judge`` scores every clip (default: Whisper with DistillMOS/DNSMOS); a bare ``recognizer`` instead means
    that recogniser's WER and no MOS. ``peers`` are loaded ``audiopd.eval.peers`` systems (``.name``,
    ``.synthesize(text) -> (audio, rate, durations)``), each judged on the same sentences as a ``peer`` row.
    """
    from audiopd.audio import write_audio

    log = log or (lambda msg: None)
    modes = list(dict.fromkeys(modes))
    bad = [m for m in modes if m not in EVAL_MODES]
    if bad or not (modes or peers):
        raise EvalInputError(f"modes must be a non-empty list of {', '.join(EVAL_MODES)}, got {list(modes)}")
    if batch < 1:
        raise EvalInputError(f"--batch must be >= 1, got {batch}")
    speakers = list(speakers) if speakers else list(tts.voices)
    unknown = [sp for sp in speakers if sp not in tts.voices]
    if unknown or not speakers:
        raise EvalInputError(f"unknown speaker(s) {', '.join(unknown) or '(none given)'}: "
                             f"the voice has {', '.join(tts.voices) or 'none'}")
    if judge is None:
        judge = judging.EvalJudge(recognizer) if recognizer else judging.make_judge(judging.JudgeConfig())
    data = Path(data)
    # A voice's speaker may be named apart from its teacher's recordings (``heart`` taught by kokoro:af_heart).
    teacher_of = {sp: tts.model.info.teacher(sp) for sp in speakers}
    sentences = select_sentences(read_manifest(data), [teacher_of[sp] for sp in speakers], n, seed, split)
    warnings = [] if len(sentences) == n else [f"only {len(sentences)} {split} sentences are eligible, not {n}"]
    if join > 1 and len(sentences) % join:
        warnings.append(f"{len(sentences) % join} sentence(s) left over after passages of {join} were dropped")
    sentences = join_sentences(sentences, join)
    refs = {s.id: judge.words(s.text) for s in sentences}
    rows, utts = [], []
    pooled: dict[str, _Tally] = {}
    t_start = time.perf_counter()
    for sp in speakers:
        tallies: dict[str, _Tally] = {}
        if all(teacher_of[sp] in s.wavs for s in sentences):
            tal = tallies[TEACHER] = _tally()
            for s in sentences:
                audio, rate = teacher_audio(data, s, teacher_of[sp])
                sc = judge.score(refs[s.id], audio, rate)
                tal.add(refs[s.id], sc, audio.size / rate)
                utts.append(_utt(sp, TEACHER, s, sc, audio.size / rate))
            log(f"{sp} teacher: {len(sentences)} sentences recognised")
        else:
            warnings.append(f"speaker {sp!r} is not a corpus voice: no teacher audio, no gap")
        for mode in modes:
            tal = tallies[mode] = _tally()
            for b0 in range(0, len(sentences), batch):
                part = sentences[b0 : b0 + batch]
                t0 = time.perf_counter()
                results = tts.synthesize_batch([s.text for s in part], voice=sp, mode=mode, steps=steps,
                                               seed=seed, speed=speed, check=None if mode == "auto" else False)
                tal.wall_s += time.perf_counter() - t0
                for s, res in zip(part, results):
                    sc = judge.score(refs[s.id], res.audio, res.sample_rate)
                    tal.add(refs[s.id], sc, res.duration_s)
                    tal.passes.append(int(res.report["forward_passes"]))
                    tal.steps.append(int(res.report["steps"]))
                    u = _utt(sp, mode, s, sc, res.duration_s)
                    u.update(forward_passes=tal.passes[-1], steps=tal.steps[-1])
                    if mode == "auto" and res.report.get("check") is not None:
                        u["check_passed"] = bool(res.report["check"]["passed"])
                        u["attempts"] = len(res.report.get("attempts", []))
                        u["delivered_mode"] = res.report.get("mode")
                    utts.append(u)
                    if wav_dir is not None:
                        write_audio(Path(wav_dir) / sp / mode / f"{s.id}.wav", res.audio, res.sample_rate)
            log(f"{sp} {mode}: {len(sentences)} sentences, {tal.wall_s:.1f} s wall for {tal.audio_s:.1f} s audio")
        teacher_wer = tallies[TEACHER].row(sp, TEACHER, None)["wer"] if TEACHER in tallies else None
        for system, tal in tallies.items():
            rows.append(tal.row(sp, system, teacher_wer))
            p = pooled.setdefault(system, _tally())
            p.refs += tal.refs
            p.hyps += tal.hyps
            p.passes += tal.passes
            p.steps += tal.steps
            p.scores += tal.scores
            p.wall_s += tal.wall_s
            p.audio_s += tal.audio_s
    if len(speakers) > 1:
        # Pooled gaps only when every speaker had a teacher, else they would compare different speaker sets.
        all_taught = TEACHER in pooled and len(pooled[TEACHER].refs) == len(sentences) * len(speakers)
        t_wer = pooled[TEACHER].row("all", TEACHER, None)["wer"] if all_taught else None
        rows += [tal.row("all", system, t_wer) for system, tal in pooled.items()]
    for peer in peers:
        tal = _tally()
        for s in sentences:
            t0 = time.perf_counter()
            audio, rate, _durations = peer.synthesize(s.text)
            tal.wall_s += time.perf_counter() - t0
            sc = judge.score(refs[s.id], audio, rate)
            tal.add(refs[s.id], sc, audio.size / rate)
            utts.append(_utt(peer.name, PEER, s, sc, audio.size / rate))
            if wav_dir is not None:
                write_audio(Path(wav_dir) / peer.name.replace(":", "_") / f"{s.id}.wav", audio, rate)
        rows.append(tal.row(peer.name, PEER, None))
        log(f"{peer.name}: {len(sentences)} sentences, {tal.wall_s:.1f} s wall for {tal.audio_s:.1f} s audio")
    return {
        "auto": auto_summary(utts),
        "voice": voice_name, "codec": tts.codec.name, "decoder": tts.codec.decoder,
        "runtime": tts.runtime, "precision": tts.precision,
        "data": str(data), "n": len(sentences), "join": join, "split": split, "seed": seed, "steps": steps,
        "speed": speed, "batch": batch,
        "modes": modes, "peers": [p.name for p in peers],
        "speakers": speakers, "sentences": [{"id": s.id, "text": s.text} for s in sentences],
        "rows": rows, "utterances": utts, "warnings": warnings, "judge": judge.describe(),
        "wall_s": round(time.perf_counter() - t_start, 2),
    }


def auto_summary(utts: list[dict[str, Any]], broken_wer: float = BROKEN_WER) -> dict[str, Any] | None:
    """Issue 4's figures for auto mode: how often it escalated or fell back to serial, and how many outputs an
    outside ASR finds broken (utterance WER > ``broken_wer``) were still delivered with ``passed = true``."""
    auto = [u for u in utts if u["system"] == "auto" and "attempts" in u]
    if not auto:
        return None
    n = len(auto)
    broken = [u for u in auto if u["edits"] > broken_wer * max(1, u["ref_words"])]
    return {
        "n": n,
        "escalated_share": round(sum(u["attempts"] > 1 for u in auto) / n, 3),
        "serial_fallback_share": round(sum(u["delivered_mode"] == "serial" for u in auto) / n, 3),
        "delivered_failing_share": round(sum(not u["check_passed"] for u in auto) / n, 3),
        "asr_broken": len(broken),
        "asr_broken_but_passed": sum(u["check_passed"] for u in broken),
    }


def _utt(speaker: str, system: str, s: Sentence, score: dict[str, Any], seconds: float) -> dict[str, Any]:
    return {"speaker": speaker, "system": system, "id": s.id, "ref": " ".join(score["ref"]),
            "hyp": " ".join(score["hyp"]), "edits": score["edits"], "ref_words": score["ref_words"],
            "audio_s": round(seconds, 3), **{k: score[k] for k in judging.MOS_KEYS}}


def _fmt(value: Any, suffix: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and suffix == "pp":
        return f"{value:+.2f}"
    return f"{value}{suffix}"


def markdown_table(report: dict[str, Any]) -> str:
    """One row per (speaker, system): WER %, gap to the teacher (percentage points), MOS, passes, steps, RTF."""
    asr = report.get("judge", {}).get("asr", "")
    lines = [f"| speaker | system | n | WER % {asr} | gap to teacher (pp) | {judging.MOS_HEADER} | forward passes "
             "| steps | RTF |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["rows"]:
        lines.append(f"| {r['speaker']} | {r['system']} | {r['n']} | {_fmt(r['wer'])} | {_fmt(r['gap_pp'], 'pp')} "
                     f"| {judging.mos_cells(r)} | {_fmt(r['forward_passes'])} | {_fmt(r['steps'])} "
                     f"| {_fmt(r['rtf'])} |")
    return "\n".join(lines)


def _csv(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m audiopd.eval.tts_eval", description=__doc__.splitlines()[0])
    p.add_argument("--data", default="data", help="corpus root holding corpus/manifest.jsonl (default: data)")
    p.add_argument("--voice", default=None, help=f"shipped voice name or a path like ./myvoice (default: {DEFAULT_VOICE})")
    add_decoder_argument(p)
    p.add_argument("--runtime", choices=RUNTIMES, default="torch",
                   help="the voice's runtime (audiopd.load): torch, or the torch-free NumPy path (default: torch)")
    p.add_argument("--precision", choices=PRECISIONS, default="auto",
                   help="torch's per-call dtype (audiopd.model.precision; default: auto, bfloat16 where the CPU "
                        "computes it natively)")
    p.add_argument("--n", type=int, default=40, help="held-out sentences per speaker (default: 40)")
    p.add_argument("--modes", default="parallel,serial", help="comma-separated of parallel, serial, auto")
    p.add_argument("--steps", type=int, default=None, metavar="K", help="level-0 step budget of parallel decoding")
    p.add_argument("--speakers", default=None, help="comma-separated speakers (default: all of the voice)")
    p.add_argument("--split", default="test", choices=SPLITS,
                   help="held-out split: test (default; the figures to report) or dev (for choosing settings)")
    p.add_argument("--batch", type=int, default=8, help="texts per synthesize_batch call (default: 8)")
    p.add_argument("--seed", type=int, default=0, help="sentence choice and synthesis seed (default: 0)")
    p.add_argument("--speed", type=float, default=1.0, help="speaking rate of every synthesis (default: 1.0)")
    p.add_argument("--join", type=int, default=1, metavar="J",
                   help="long texts: speak passages of J consecutive held-out sentences as one text (default: 1)")
    p.add_argument("--threads", type=int, default=1, help="torch and judge threads (default: 1)")
    p.add_argument("--peers", default=None, metavar="SYSTEM:VOICE,...",
                   help="also judge these peers on the same sentences (kokoro:<voice>, piper:joe; 'teachers' extra)")
    judging.add_arguments(p)
    p.add_argument("--save-wavs", default=None, metavar="DIR", help="also write the synthesised audio here")
    p.add_argument("--out", default=None, metavar="REPORT.json", help="write the full report as JSON")
    args = p.parse_args(argv)
    try:
        import torch

        import audiopd
        from audiopd.fileio import write_text_atomic

        if args.threads < 1:
            raise EvalInputError(f"--threads must be >= 1, got {args.threads}")
        if args.out and Path(args.out).is_dir():
            raise EvalInputError(f"--out {args.out} is a directory, not a file name")
        torch.set_num_threads(args.threads)
        judge = judging.from_args(args, threads=args.threads)
        tts = audiopd.load(args.voice, decoder=args.decoder, runtime=args.runtime, precision=args.precision)
        peers = []
        if args.peers:
            from audiopd.eval.peers import load_peer, parse_peers

            peers = [load_peer(spec.name, threads=args.threads) for spec in parse_peers(args.peers)]
        report = evaluate(tts, args.data, n=args.n, modes=_csv(args.modes), steps=args.steps, seed=args.seed,
                          batch=args.batch, speakers=_csv(args.speakers) if args.speakers else None, join=args.join,
                          split=args.split, speed=args.speed,
                          wav_dir=args.save_wavs, voice_name=tts.voice_name, judge=judge, peers=peers,
                          log=lambda m: print(m, file=sys.stderr, flush=True))
        report["torch_threads"] = torch.get_num_threads()
        what = "held-out sentences" if args.join == 1 else f"passages of {args.join} held-out sentences"
        print(f"voice {report['voice']}, codec {report['codec']} ({report['decoder']}), {report['n']} {what} x "
              f"{len(report['speakers'])} speakers, seed {report['seed']}, steps {report['steps'] or 'default'}, "
              f"{report['wall_s']:.0f} s")
        for w in report["warnings"]:
            print(f"warning: {w}")
        print(markdown_table(report))
        if report.get("auto"):
            print(f"auto mode: {report['auto']}")
        if args.out:
            write_text_atomic(args.out, json.dumps(report, indent=1) + "\n")
    except AudiopdError as exc:
        print(f"tts_eval: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
