"""Where a synthesis spends its time: ``audiopd bench --stages``, one table of stage costs per mode.

    audiopd bench --stages [--voice V] [--lengths 1,2,5,10,20] [--threads N] [--repeats 3] [--seed 0]
                           [--steps K] [--json OUT]

Each call is the real path users run, ``Synthesizer.synthesize`` at batch 1 on a bench text of about each target
length (``audiopd.eval.bench.build_text``), followed by writing its WAV bytes (``audiopd.audio.audio_bytes``,
what ``say -o``, ``render`` and the server do), inside ``audiopd.timing.collect()``. The stages mark themselves
with ``audiopd.timing`` spans where they run, and each row is a stage's *self* time (inner spans excluded), so
the rows of one call add up to its wall time exactly; the remainder no span covers is the row ``other``. Every
row is measured on that path: none comes from calling a part on its own.

Each column is the median call of its repeats (by wall time; ``summarize`` says why not per-stage medians), so
its rows add up to its total exactly. Rows (milliseconds in that call, with the share of its total):

* ``text frontend``: chunking, normalising and phonemizing the text;
* ``conditioning: durations``: encoder + duration model once per chunk (the facade predicts the lengths first,
  to refuse a broken duration predictor and to batch chunks by length);
* ``conditioning: frames``: encoder + length regulation once per decoder batch, with those durations;
* ``level-0 passes``: the masked decoder's iterative coarse passes; ``serial level-0``: the serial decoder's
  frame-by-frame coarse level (auto mode's fallback); ``fine passes``: levels 1..Q-1, either decoder;
* ``codec: ...``: the codec decoder's parts. For ``codecs/mel22k``'s ``fast`` decoder: ``mel lookup`` (summing
  RVQ codewords into log-mel), ``vocoder net`` (ConvNeXt trunk + head layer), ``harmonic head`` (F0, voicing,
  envelope and noise drawn into a magnitude comb and the harmonics' phase), ``postfilter`` (fine-structure
  sharpening), ``Griffin-Lim phase`` (fast Griffin-Lim iterations), ``iSTFT``, ``vocoder, rest`` (tensor glue
  between them; all of HiFi-GAN for ``hq``) and ``decode, rest`` (the renderer's numpy glue and peak limit; all
  of a codec that marks no parts, or of chunks a thread pool decodes side by side);
* ``checker``: auto mode's verdict on every attempt (with repairs and escalations, ``level-0 passes`` and the
  codec rows count every attempt too; the ``attempts / chunks`` row says how many there were);
* ``chunk joins``: the faded pauses between a text's chunks; ``write WAV``: 16-bit WAV bytes of the result;
* ``other``: what no span covers (option checks, batching, attempt bookkeeping, word times, the report).

Below them: ``total`` (the call's wall time), the audio seconds and RTF (total / audio); every run's own rows
are in the JSON. Modes: parallel
and auto (the checked default) get a table each; serial runs too, and its level-0 decode is one extra row of the
parallel table, outside that table's total. The modes run interleaved per repeat (P A S P A S ...), after one
untimed warm-up call per mode on the shortest text, whose time is reported as ``first call`` (what a one-off
``say`` pays on top of loading). Absolute times depend on the machine and its load; say so when quoting them.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from audiopd import timing
from audiopd.eval.bench import AUTO, PARALLEL, SERIAL, BenchOptionError, build_text, check_run_options

STAGE_LENGTHS = (1.0, 2.0, 5.0, 10.0, 20.0)
STAGE_MODES = (PARALLEL, AUTO, SERIAL)
TABLE_MODES = (PARALLEL, AUTO)  # printed as tables; serial only as one row of the parallel table


@dataclass(frozen=True)
class StagesConfig:
    lengths: tuple[float, ...] = STAGE_LENGTHS  # target seconds per text
    repeats: int = 3
    modes: tuple[str, ...] = STAGE_MODES
    steps: int | None = None  # parallel level-0 step budget (None: the voice's configured default)
    seed: int = 0
    warmup: bool = True

    def validate(self) -> None:
        check_run_options(self.lengths, self.repeats, self.steps, self.seed)
        if not self.modes or any(m not in STAGE_MODES for m in self.modes):
            raise BenchOptionError(f"modes must be among {', '.join(STAGE_MODES)}, got {list(self.modes)}")


def timed_call(tts, text: str, mode: str, cfg: StagesConfig, speaker: str | None) -> dict[str, Any]:
    """One synthesis + WAV bytes inside ``timing.collect()``: seconds per stage (summing to ``total_s``)."""
    from audiopd.audio import audio_bytes

    with timing.collect() as times:
        res = tts.synthesize(text, voice=speaker, mode=mode, steps=cfg.steps, seed=cfg.seed,
                             check=None if mode == AUTO else False)
        with timing.span(timing.WRITE):
            audio_bytes(res.audio, res.sample_rate, "WAV")
    return {"stages_s": dict(times.seconds), "total_s": times.total, "audio_s": res.duration_s,
            "attempts": len(res.report["attempts"]), "chunks": res.report["chunks"],
            "passed": None if res.report.get("check") is None else bool(res.report["check"]["passed"])}


def _ms(seconds: float) -> float:
    return round(1000.0 * seconds, 3)


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One (mode, length): the median call's stages, total and RTF, and every run.

    The median *call* (the lower middle one for an even count), not each stage's own median: on a loaded machine
    a preemption lands in a different stage each run, so per-stage medians drop it and add up to less than the
    median total, while one call's rows add up to its total exactly.
    """
    totals = [r["total_s"] for r in runs]
    pick = totals.index(statistics.median_low(totals))
    median = runs[pick]
    audio = median["audio_s"]
    return {
        "audio_s": round(audio, 3), "total_ms": _ms(median["total_s"]),
        "rtf": round(median["total_s"] / audio, 4) if audio > 0 else None,
        "stages_ms": {n: _ms(s) for n, s in median["stages_s"].items()}, "median_run": pick,
        "attempts": median["attempts"], "chunks": median["chunks"], "passed": median["passed"],
        "runs": [{"total_ms": _ms(r["total_s"]), "stages_ms": {n: _ms(s) for n, s in r["stages_s"].items()}}
                 for r in runs],
    }


def run_stages(tts, cfg: StagesConfig | None = None, *, speaker: str | None = None, voice_name: str = "",
               log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Time every (mode, length) and return the JSON-able report: ``modes[mode]`` is one cell per length."""
    import torch

    cfg = cfg or StagesConfig()
    cfg.validate()
    log = log or (lambda msg: None)
    spk = tts.model.info.speaker_id(speaker) if speaker is not None else 0
    texts = {target: build_text(tts, target, speaker=spk) for target in cfg.lengths}
    first_ms: dict[str, float] = {}
    if cfg.warmup:  # allocation, kernel choice, the checker's first load: not what a steady call costs
        for mode in cfg.modes:
            t0 = time.perf_counter()
            tts.synthesize(texts[min(cfg.lengths)], voice=speaker, mode=mode, steps=cfg.steps, seed=cfg.seed,
                           check=None if mode == AUTO else False)
            first_ms[mode] = _ms(time.perf_counter() - t0)
    t_start = time.perf_counter()
    cells: dict[str, list[dict[str, Any]]] = {m: [] for m in cfg.modes}
    for target in cfg.lengths:
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in cfg.modes}
        for _ in range(cfg.repeats):
            for mode in cfg.modes:  # interleaved, so a shared machine's load drifts hit every mode alike
                runs[mode].append(timed_call(tts, texts[target], mode, cfg, speaker))
        for mode in cfg.modes:
            cells[mode].append({"target_s": target, "text": texts[target], **summarize(runs[mode])})
        log(f"{target:g} s: " + ", ".join(f"{m} {cells[m][-1]['total_ms']:.0f} ms" for m in cfg.modes))
    return {
        "voice": voice_name, "codec": tts.codec.name, "decoder": tts.codec.decoder,
        "speaker": tts.voices[spk] if spk < len(tts.voices) else spk, "lengths": list(cfg.lengths),
        "repeats": cfg.repeats, "seed": cfg.seed, "steps": cfg.steps, "torch_threads": torch.get_num_threads(),
        "precision": tts.precision,
        "modes": cells, "first_call_ms": first_ms, "stage_order": list(timing.ORDER),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "python": platform.python_version(), "torch": torch.__version__,
        "total_wall_s": round(time.perf_counter() - t_start, 2),
    }


# ------------------------------------------------------------------------------------------ the table
def stage_rows(report: dict[str, Any], modes: tuple[str, ...] = TABLE_MODES) -> list[str]:
    """The stage names recorded in any of ``modes`` (``OTHER`` always), in ``timing.ORDER``, unknown ones after."""
    seen = {n for m in modes for c in report["modes"].get(m, []) for n in c["stages_ms"]} | {timing.OTHER}
    order = list(report.get("stage_order", timing.ORDER))
    rows = [n for n in order if n in seen and n != timing.OTHER]
    return rows + sorted(seen - set(order)) + [timing.OTHER]


def _cell(ms: float | None, total: float) -> str:
    if ms is None:
        return "-"
    return f"{ms:.1f} ({100 * ms / total:.0f}%)" if total > 0 else f"{ms:.1f}"


def markdown_table(report: dict[str, Any], mode: str) -> str:
    """Rows = stages, columns = target lengths; cells ``ms (share of the column's total)``, "-" = did not run."""
    cells = report["modes"][mode]
    rows = stage_rows(report)
    lines = ["| stage, ms in the median call (share) | " + " | ".join(f"{c['target_s']:g} s" for c in cells) + " |",
             "|---|" + "---:|" * len(cells)]
    for name in rows:
        vals = [_cell(c["stages_ms"].get(name), c["total_ms"]) for c in cells]
        lines.append(f"| {name} | " + " | ".join(vals) + " |")
    lines.append("| **total** | " + " | ".join(f"**{c['total_ms']:.1f}**" for c in cells) + " |")
    lines.append("| audio s | " + " | ".join(f"{c['audio_s']:.2f}" for c in cells) + " |")
    lines.append("| RTF | " + " | ".join("-" if c["rtf"] is None else f"{c['rtf']:.3f}" for c in cells) + " |")
    if mode == AUTO:
        # One attempt per chunk is a first-try pass; more means repairs or escalations.
        tries = [f"{c['attempts']:g} / {c['chunks']}" for c in cells]
        lines.append("| attempts / chunks | " + " | ".join(tries) + " |")
    serial = report["modes"].get(SERIAL)
    if mode == PARALLEL and serial:
        vals = [f"{c['stages_ms'].get(timing.SERIAL_LEVEL0, 0.0):.1f}" for c in serial]
        lines.append(f"| {timing.SERIAL_LEVEL0}, serial mode (not in this total) | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def print_report(report: dict[str, Any], out: Callable[[str], None] = print) -> None:
    """The heading line and one table per mode in ``TABLE_MODES`` that ran."""
    first = ", ".join(f"{m} {ms:.0f} ms" for m, ms in report["first_call_ms"].items())
    load = "" if report.get("load_s") is None else f"loading the voice {report['load_s']:.2f} s (imports included); "
    out(f"voice {report['voice']} (speaker {report['speaker']}), codec {report['codec']} ({report['decoder']} "
        f"decoder), {report['torch_threads']} torch thread(s) in {report['precision']}, batch 1, the median call of "
        f"{report['repeats']} repeats; "
        f"{load}first call (warm-up, not in the tables): {first or 'not run'}")
    for mode in TABLE_MODES:
        if mode in report["modes"]:
            out(f"\n{mode} mode\n")
            out(markdown_table(report, mode))
