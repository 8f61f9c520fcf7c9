"""Run the comparison: the same texts, seeds and voices through serial decoding and parallel at each K (and auto).

Every clip goes through the facade (``Synthesizer.synthesize``, batch 1, ``steps=K`` for parallel), is timed
(wall seconds of that one call, after an untimed warm-up per voice and system), checked by the voice's checker
(auto: the verdict it delivered with) and scored by the judges. The report is built in a temporary sibling of
DIR and renamed into place at the end, so a failed run never leaves a half-written report.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audiopd.compare.judging import Judge, Verdict, checker_for
from audiopd.errors import AudiopdError

MODES = ("parallel", "serial", "auto")
MAX_TEXTS = 2000
MAX_STEPS = 256
# Clip files only: the judges score the synthesised samples before they are encoded. Opus (~3.6 kB per second of
# speech, a fifth of FLAC's) keeps a committed report small; FLAC is lossless.
AUDIO_FORMATS = {"flac": ("FLAC", "PCM_16"), "ogg": ("OGG", "VORBIS"), "opus": ("OGG", "OPUS")}
SERIAL = "serial"


class CompareInputError(AudiopdError, ValueError):
    """Bad input to ``audiopd compare``: texts, voices, modes, K list, seeds or the output directory."""


@dataclass(frozen=True)
class CompareConfig:
    voices: tuple[str, ...] = ()  # speakers of the voice (empty: all of them)
    modes: tuple[str, ...] = ("parallel", "serial")
    steps: tuple[int, ...] = (1, 2, 3, 4, 8, 16)
    seeds: tuple[int, ...] = (0,)
    audio_format: str = "flac"
    spectrograms: int = 4  # worst parallel cases drawn beside serial
    bench: bool = True  # the workload map (audiopd.eval.bench) at bench_lengths x bench_batches x bench_steps
    bench_lengths: tuple[float, ...] = (2.0, 10.0)
    bench_batches: tuple[int, ...] = (1, 4)
    bench_steps: tuple[int, ...] = ()  # empty: the smallest, middle and largest K of ``steps``

    def validate(self) -> None:
        bad = [m for m in self.modes if m not in MODES]
        if bad or not self.modes or len(set(self.modes)) != len(self.modes):
            raise CompareInputError(f"--modes must be distinct names from {','.join(MODES)}, got {','.join(self.modes)}")
        if SERIAL not in self.modes:
            raise CompareInputError("--modes must include serial: every interval is against serial decoding")
        if "parallel" in self.modes and not self.steps:
            raise CompareInputError("--steps must list at least one K for parallel decoding")
        if any(not 1 <= k <= MAX_STEPS for k in self.steps) or len(set(self.steps)) != len(self.steps):
            raise CompareInputError(f"--steps must be distinct integers in 1..{MAX_STEPS}, got "
                                    f"{','.join(map(str, self.steps))}")
        if not self.seeds or any(s < 0 for s in self.seeds) or len(set(self.seeds)) != len(self.seeds):
            raise CompareInputError(f"--seeds must be distinct non-negative integers, got {list(self.seeds)}")
        if self.audio_format not in AUDIO_FORMATS:
            raise CompareInputError(f"--audio-format must be one of {', '.join(AUDIO_FORMATS)}")
        if self.spectrograms < 0:
            raise CompareInputError("--spectrograms must be >= 0")

    def systems(self) -> list[tuple[str, str, int | None]]:
        """(system name, facade mode, steps) in report order: serial, parallel-k1.., auto."""
        out: list[tuple[str, str, int | None]] = [(SERIAL, SERIAL, None)]
        if "parallel" in self.modes:
            out += [(f"parallel-k{k}", "parallel", k) for k in sorted(self.steps)]
        if "auto" in self.modes:
            out.append(("auto", "auto", None))
        return out


def parse_int_list(text: str, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise CompareInputError(f"{what} must be comma-separated integers, got {text!r}") from None
    if not values:
        raise CompareInputError(f"{what} must not be empty")
    return values


def read_texts(path: str | Path) -> list[str]:
    """One sentence per line; blank lines and lines starting with '#' are skipped. Every text must be speakable."""
    from audiopd.text import phonemize

    p = Path(path)
    if not p.is_file():
        raise CompareInputError(f"no texts file at {p}")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise CompareInputError(f"{p} is not UTF-8 text ({exc.reason})") from None
    texts = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not texts:
        raise CompareInputError(f"{p} holds no sentences (one per line; '#' lines are comments)")
    if len(texts) > MAX_TEXTS:
        raise CompareInputError(f"{p} holds {len(texts)} sentences; at most {MAX_TEXTS} per report")
    for i, t in enumerate(texts):
        try:
            phonemize(t)
        except AudiopdError as exc:
            raise CompareInputError(f"{p} line {i + 1}: {exc}") from None
    return texts


def resolve_voices(tts, wanted: Sequence[str]) -> list[str]:
    have = list(tts.voices)
    if not wanted:
        return have
    unknown = [v for v in wanted if v not in have]
    if unknown:
        raise CompareInputError(f"unknown voice {unknown[0]!r}: this voice's speakers are {', '.join(have)}")
    if len(set(wanted)) != len(wanted):
        raise CompareInputError(f"--voices names a speaker twice: {','.join(wanted)}")
    return list(wanted)


def prepare_outdir(outdir: Path) -> Path:
    """Refuse a DIR that holds something other than an earlier report; return the temporary build folder."""
    if outdir.exists():
        if not outdir.is_dir():
            raise CompareInputError(f"-o {outdir} exists and is not a directory")
        if any(outdir.iterdir()) and not (outdir / "results.json").is_file():
            raise CompareInputError(f"-o {outdir} is not empty and holds no earlier report: choose another folder")
    parent = outdir.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    try:
        return Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", dir=parent))
    except OSError as exc:
        raise CompareInputError(f"cannot write into {parent}: {exc.strerror or exc}") from None


def publish(tmp: Path, outdir: Path) -> None:
    """Move the finished report into place; an earlier report there is replaced only once the new one is whole."""
    old = None
    if outdir.exists():
        old = outdir.with_name(f".{outdir.name}.old-{int(time.time())}")
        outdir.rename(old)
    tmp.chmod(0o755)
    tmp.rename(outdir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def clip_name(voice: str, system: str, seed: int, index: int, ext: str, text: str = "") -> str:
    """Opaque file names, so the listening page's paths do not give the systems away."""
    digest = hashlib.sha256(f"{voice}|{system}|{seed}|{index}|{text}".encode()).hexdigest()[:16]
    return f"audio/{digest}.{ext}"


def write_clip(path: Path, audio: np.ndarray, sample_rate: int, audio_format: str) -> None:
    from audiopd.audio import audio_bytes

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(audio_bytes(audio, sample_rate, *AUDIO_FORMATS[audio_format]))


def synthesize_all(tts, texts: Sequence[str], cfg: CompareConfig, judge: Judge, build: Path, *,
                   checker: Verdict | None = None, log: Callable[[str], None] | None = None
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every (voice, text, seed, system): synthesise, time, check, judge; clips written under ``build``.

    Returns the results.json utterances and, in the same order, the details (transcript, verdict reasons,
    DNSMOS P.808, audio seconds) that do not belong in the issue's schema.
    """
    log = log or (lambda m: None)
    check = checker or checker_for(tts)
    voices = resolve_voices(tts, cfg.voices)
    systems = cfg.systems()
    ext = cfg.audio_format
    utts: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    for voice in voices:
        for name, mode, steps in systems:  # untimed warm-up: allocation, kernel choice, recogniser start-up
            tts.synthesize(texts[0], voice=voice, mode=mode, steps=steps, seed=cfg.seeds[0])
        for i, text in enumerate(texts):
            for seed in cfg.seeds:
                for name, mode, steps in systems:
                    t0 = time.perf_counter()
                    res = tts.synthesize(text, voice=voice, mode=mode, steps=steps, seed=seed,
                                         check=None if mode == "auto" else False)
                    wall = time.perf_counter() - t0
                    verdict = res.report.get("check") if mode == "auto" else None
                    if verdict is None:
                        verdict = check(res.audio, res.sample_rate, text)
                    sc = judge.score(res.audio, res.sample_rate, text)
                    rel = clip_name(voice, name, seed, i, ext, text)
                    write_clip(build / rel, res.audio, res.sample_rate, ext)
                    utts.append({
                        "text": text, "voice": voice, "system": name, "seed": seed, "audio": rel,
                        "distillmos": round(sc.distillmos, 4), "dnsmos": round(sc.dnsmos, 4),
                        "wer": round(sc.wer, 4), "passed": bool(verdict["passed"]),
                        "forward_passes": int(res.report["forward_passes"]), "wall_s": round(wall, 4),
                        "rtf": round(wall / res.duration_s, 4) if res.duration_s > 0 else None,
                    })
                    details.append({"index": i, "hypothesis": sc.hypothesis, "dnsmos_p808": round(sc.dnsmos_p808, 4),
                                    "audio_s": round(res.duration_s, 3), "score": verdict.get("score"),
                                    "reasons": list(verdict.get("reasons", [])), "steps": res.report.get("steps"),
                                    "mode": res.report.get("mode")})
            done = len(utts)
            log(f"{voice} {i + 1}/{len(texts)}: {done} clips, {time.perf_counter() - t_start:.0f} s")
    return utts, details


def workload_map(tts, cfg: CompareConfig, *, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Where serial wins on this machine: ``audiopd bench`` cells (length x batch) at a few K, one repeat each.

    Small on purpose (the full map is ``audiopd bench``); the two modes run interleaved inside each cell.
    """
    import torch

    from audiopd.eval.bench import BenchConfig, run_bench

    ks = cfg.bench_steps or tuple(sorted({min(cfg.steps), sorted(cfg.steps)[len(cfg.steps) // 2], max(cfg.steps)}))
    speaker = resolve_voices(tts, cfg.voices)[0]
    cells = []
    for k in ks:
        rep = run_bench(tts, BenchConfig(lengths=cfg.bench_lengths, batches=cfg.bench_batches, repeats=1, steps=k,
                                         seed=cfg.seeds[0]), speaker=speaker, log=log)
        for c in rep["cells"]:
            par, ser = c["modes"]["parallel"], c["modes"]["serial"]
            cells.append({"k": k, "target_s": c["target_s"], "audio_s": c["audio_s"], "batch": c["batch"],
                          "parallel_s": par["median_s"], "serial_s": ser["median_s"],
                          "parallel_passes": par["forward_passes"], "serial_passes": ser["forward_passes"],
                          "serial_over_parallel": c["serial_over_parallel"],
                          "serial_wins": bool(c["serial_over_parallel"] is not None and c["serial_over_parallel"] < 1)})
    return {"speaker": speaker, "steps": list(ks), "torch_threads": torch.get_num_threads(), "cells": cells}


def run_compare(tts, texts: Sequence[str], cfg: CompareConfig, judge: Judge, outdir: str | Path, *,
                checker: Verdict | None = None, voice_name: str = "default",
                log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Build the whole report (results.json, index.html, listen.html, plots, clips) in DIR; return results."""
    from audiopd.compare import stats

    cfg.validate()
    resolve_voices(tts, cfg.voices)  # before any folder is made
    if not texts:
        raise CompareInputError("no texts to compare")
    outdir = Path(outdir)
    build = prepare_outdir(outdir)
    try:
        t0 = time.perf_counter()
        utts, details = synthesize_all(tts, texts, cfg, judge, build, checker=checker, log=log)
        summary = stats.summarize(utts, [s for s, _, _ in cfg.systems()])
        summary["config"] = {**asdict(cfg), "voice": voice_name, "codec": tts.codec.name,
                             "decoder": tts.codec.decoder,
                             "judge": getattr(judge, "name", type(judge).__name__), "texts": len(texts)}
        costs = getattr(judge, "costs", None)
        cost = getattr(judge, "cost", None)
        summary["judge_cost"] = costs() if callable(costs) else cost.to_dict() if cost is not None else None
        summary["synthesis_wall_s"] = round(time.perf_counter() - t0, 1)
        if cfg.bench:
            summary["workload"] = workload_map(tts, cfg, log=log)
        results = {"utterances": utts, "summary": summary}
        _finish(results, details, build, outdir, spectrograms=cfg.spectrograms)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    return results


def _finish(results: dict[str, Any], details: list[dict], build: Path, outdir: Path, *, spectrograms: int) -> None:
    from audiopd.compare import pages, plots

    (build / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (build / "details.json").write_text(json.dumps(details, indent=1) + "\n", encoding="utf-8")
    figures = plots.draw_all(results, details, build, spectrograms=spectrograms)
    pages.write_index(results, details, figures, build)
    pages.write_listen(results, build)
    publish(build, outdir)


def _system_order(system: str) -> tuple[int, int, str]:
    from audiopd.compare.stats import system_k

    k = system_k(system)
    return (0, 0, system) if system == SERIAL else (1, k, system) if k is not None else (2, 0, system)


def merge_reports(sources: Sequence[str | Path], outdir: str | Path, *, spectrograms: int = 4) -> dict[str, Any]:
    """One report from several (e.g. one process per speaker, or more seeds later): clips copied, every
    aggregate, figure and page rebuilt. A (voice, text, seed, system) may come from one source only."""
    from audiopd.compare import stats

    loaded = []
    for src in map(Path, sources):
        try:
            res = json.loads((src / "results.json").read_text(encoding="utf-8"))
            det = json.loads((src / "details.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CompareInputError(f"{src} is not a compare report ({exc})") from None
        loaded.append((src, res, det))
    seen: dict[tuple, Path] = {}
    for src, res, _ in loaded:
        for u in res["utterances"]:
            key = (u["voice"], u["text"], u["seed"], u["system"])
            if key in seen:
                raise CompareInputError(f"{src} and {seen[key]} both hold {u['system']} of {u['voice']!r}, seed "
                                        f"{u['seed']}: merge reports of different speakers or seeds")
            seen[key] = src
    clips = [u["audio"] for _, res, _ in loaded for u in res["utterances"]]
    if len(set(clips)) != len(clips):
        raise CompareInputError("two of the reports name a clip file alike; merge reports of different speakers "
                                "or seeds")
    outdir = Path(outdir)
    build = prepare_outdir(outdir)
    try:
        utts, details = [], []
        for src, res, det in loaded:
            for u in res["utterances"]:
                (build / u["audio"]).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / u["audio"], build / u["audio"])
            utts += res["utterances"]
            details += det
        summary = stats.summarize(utts, sorted({u["system"] for u in utts}, key=_system_order))
        cfgs = [res["summary"].get("config", {}) for _, res, _ in loaded]
        summary["config"] = {**cfgs[0], "voices": sorted({u["voice"] for u in utts}),
                             "seeds": sorted({u["seed"] for u in utts}), "texts": len({u["text"] for u in utts}),
                             "merged_from": [str(src) for src, _, _ in loaded]}
        summary["judge_cost"] = [res["summary"].get("judge_cost") for _, res, _ in loaded]
        summary["synthesis_wall_s"] = [res["summary"].get("synthesis_wall_s") for _, res, _ in loaded]
        summary["workload"] = next((res["summary"]["workload"] for _, res, _ in loaded
                                    if res["summary"].get("workload")), None)
        results = {"utterances": utts, "summary": summary}
        _finish(results, details, build, outdir, spectrograms=spectrograms)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    return results
