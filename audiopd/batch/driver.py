"""``audiopd render``: many rows -> ``OUTDIR/<id>.<ext>`` + ``OUTDIR/manifest.jsonl``, resumable.

The driver: it reads the previous manifest (audiopd.batch.manifest), skips rows already rendered (same
request, file matching its sha256), records bad rows as "error" lines, plans the rest into batches
(audiopd.batch.worker.plan), has an engine render them (``run_local`` / ``run_ray`` there) and writes each
finished row durably, then its manifest line. Progress goes to stderr (a tqdm bar on a terminal, plain lines
otherwise); ``render`` returns a ``Summary``. The command's arguments and handler live here too (cli.py only
registers them); this module stays torch-free at import so ``audiopd render --help`` is quick.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from audiopd.artifacts import VOICE_HELP
from audiopd.batch.inputs import (FORMATS, MODES, SPEED_RANGE, InputError, Row, parse_shard, read_rows,
                                   select_shard)
from audiopd.batch.manifest import MANIFEST, Manifest, ManifestError, remove_temp_files, write_durable
from audiopd.batch.worker import (AUDIO_FORMATS, ENGINES, ROWS_PER_CALL, Loader, Settings, Worker, plan,
                                   row_settings, run_local, run_ray)
from audiopd.checker.config import CHECK_LEVELS
from audiopd.errors import AudiopdError
from audiopd.text.lexicon import Lexicon, add_lexicon_argument, load_lexicon

DEFAULT_DECODER = "default"
EXIT_OK, EXIT_ROW_ERRORS = 0, 1


class RenderOptionError(AudiopdError, ValueError):
    """A render option is out of range or not supported by this engine."""


@dataclass(frozen=True)
class RenderOptions:
    voice: str | None = None  # the --voice spec, recorded in the manifest (the loader resolves it)
    speaker: str | None = None  # a speaker of the loaded voice, when --voice named one
    mode: str = "auto"
    steps: int | None = None
    seed: int | None = None
    speed: float = 1.0
    check_level: str = "fast"
    format: str = "wav"
    decoder: str | None = None
    lexicon: Lexicon | None = None  # the user's pronunciations; the manifest records their sha256
    engine: str = "local"
    workers: int | None = None  # local: processes (1 = this one); ray: actors (None = one per cluster CPU)
    threads: int | None = None  # torch threads per worker
    manifest: str = MANIFEST
    rows_per_call: int = ROWS_PER_CALL
    progress_interval_s: float = 10.0

    def validate(self) -> None:
        if self.mode not in MODES:
            raise RenderOptionError(f"--mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.steps is not None and not 1 <= self.steps <= 256:
            raise RenderOptionError(f"--steps must be in 1..256, got {self.steps}")
        if self.seed is not None and self.seed < 0:
            raise RenderOptionError(f"--seed must be >= 0, got {self.seed}")
        if not SPEED_RANGE[0] <= self.speed <= SPEED_RANGE[1]:
            raise RenderOptionError(f"--speed must be in {SPEED_RANGE[0]}..{SPEED_RANGE[1]}, got {self.speed}")
        if self.check_level not in CHECK_LEVELS:
            raise RenderOptionError(f"--checker must be one of {', '.join(CHECK_LEVELS)}, got {self.check_level!r}")
        if self.format not in AUDIO_FORMATS:
            raise RenderOptionError(f"--format must be one of {', '.join(AUDIO_FORMATS)}, got {self.format!r}")
        if self.engine not in ENGINES:
            raise RenderOptionError(f"--engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        for name, flag in (("workers", "--workers"), ("threads", "--threads"), ("rows_per_call", "--batch-rows")):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise RenderOptionError(f"{flag} must be >= 1, got {value}")
        if self.engine == "ray" and importlib.util.find_spec("ray") is None:
            raise RenderOptionError("--engine ray needs Ray: pip install 'audiopd[ray]'")
        check_decoder(self.decoder)

    @property
    def defaults(self) -> Settings:
        return Settings(voice=self.speaker, mode=self.mode, steps=self.steps, seed=self.seed, speed=self.speed,
                        check_level=self.check_level)


def check_decoder(decoder: str | None) -> None:
    """``--decoder``: a name, checked against the codec's decoders when the voice loads (``audiopd.load``)."""
    if decoder is not None and not decoder.strip():
        raise RenderOptionError("--decoder must name a decoder (e.g. hq or fast), not be empty")


@dataclass
class Summary:
    rows: int = 0
    rendered: int = 0
    skipped: int = 0
    errors: int = 0
    audio_s: float = 0.0  # every ok row of the input, skipped ones included
    rendered_audio_s: float = 0.0
    failed_checks: int = 0
    wall_s: float = 0.0
    load_s: float = 0.0
    temp_files_removed: int = 0
    error_ids: list[Any] = field(default_factory=list)

    @property
    def rtf(self) -> float | None:
        """Wall seconds per rendered audio second (voice loading included)."""
        return self.wall_s / self.rendered_audio_s if self.rendered_audio_s else None

    def text(self) -> str:
        rtf = "n/a" if self.rtf is None else f"{self.rtf:.4f}"
        return (f"rows {self.rows}: {self.rendered} rendered, {self.skipped} already done, {self.errors} errors; "
                f"audio {self.audio_s / 3600:.3f} h ({self.rendered_audio_s:.1f} s rendered now); wall "
                f"{self.wall_s:.1f} s (start-up {self.load_s:.1f} s); RTF {rtf}; failed checks {self.failed_checks}")


def request_of(row: Row, options: RenderOptions) -> dict[str, Any]:
    """What was asked for a row: a rerun skips the row only if this is unchanged (and its file intact)."""
    s = row_settings(row, options.defaults)
    request = {"voice_spec": options.voice, "speaker": s.voice, "mode": s.mode, "steps": s.steps, "seed": s.seed,
               "speed": s.speed, "format": options.format, "decoder": options.decoder or DEFAULT_DECODER}
    if s.check_level != "fast":  # recorded only when not the default, so manifests written before it stay valid
        request["check_level"] = s.check_level
    if options.lexicon is not None:  # likewise: a changed lexicon renders the rows again
        request["lexicon_sha256"] = options.lexicon.sha256
    return request


def _same_request(entry: dict[str, Any], row: Row, options: RenderOptions, voice_sha256: str | None) -> bool:
    old, new = entry.get("request") or {}, request_of(row, options)
    if new["seed"] is None:  # "any seed" is satisfied by the one drawn last time
        old = {**old, "seed": None}
    return entry.get("text") == row.text and old == new and entry.get("voice_sha256") == voice_sha256


def render(rows: list[Row], outdir: str | Path, loader: Loader, options: RenderOptions,
           log: TextIO | None = None) -> Summary:
    """Render ``rows`` into ``outdir``; see the module docstring."""
    options.validate()
    log = log if log is not None else sys.stderr
    t0 = time.perf_counter()
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise ManifestError(f"-o {outdir} is not a directory")
    summary = Summary(rows=len(rows))
    ext = options.format
    workers = options.workers if options.engine == "ray" else (options.workers or 1)
    local = None
    if options.engine == "local" and workers == 1:
        # Load here, before OUTDIR is touched: a voice that does not load is a usage error with nothing written.
        loader = local = Worker(loader, options.format, options.threads)
    with Manifest(outdir, options.manifest) as manifest:
        fingerprint = None
        if manifest.entries:  # resuming: a skip needs the same voice, so this process loads it once too
            fingerprint = (local or Worker(loader, options.format, options.threads)).fingerprint
        # The manifest's own name too: a kill during its compaction leaves a ".manifest.jsonl.*.tmp".
        names = [f"{r.id}.{ext}" for r in rows if r.error is None] + [manifest.path.name]
        summary.temp_files_removed = remove_temp_files(outdir, names)
        todo, stale = [], []
        for row in rows:
            entry = manifest.entries.get(row.id) if row.error is None else None
            if (entry is not None and entry.get("path") == f"{row.id}.{ext}"
                    and _same_request(entry, row, options, fingerprint)):
                summary.skipped += 1
                _count_ok(summary, entry)
            elif row.error is None:
                todo.append(row)
                if entry is not None:
                    stale.append(row.id)
        manifest.forget(stale)  # their lines would otherwise stand beside the new ones
        for row in rows:
            if row.error is not None:
                _record_error(manifest, summary, row, row.error, options)
        batches = plan(todo, options.defaults, options.rows_per_call)
        engine = run_ray if options.engine == "ray" else run_local
        progress = Progress(len(rows), summary.skipped + summary.errors, log, options.progress_interval_s)
        by_index = {r.index: r for r in todo}

        def ready() -> None:
            summary.load_s = time.perf_counter() - t0
            progress.start()

        try:
            # Nothing left to do starts no workers (no Ray instance, no processes).
            work = engine(batches, loader, options.format, workers, options.threads, ready) if batches else iter(())
            for _batch, results in work:
                for res in results:
                    row = by_index[res["index"]]
                    if res["status"] == "ok":
                        _record_ok(manifest, summary, row, res, options, outdir)
                    else:
                        _record_error(manifest, summary, row, res["error"], options)
                # Once per batch: a line in the middle of one would time the batch's first row as if alone.
                progress.update(len(results), sum(r.get("seconds", 0.0) for r in results))
        finally:
            progress.close()
    summary.wall_s = time.perf_counter() - t0
    return summary


def _count_ok(summary: Summary, entry: dict[str, Any]) -> None:
    summary.audio_s += float(entry.get("seconds") or 0.0)
    check = entry.get("check")
    if check is not None and not check.get("passed", True):
        summary.failed_checks += 1


def _record_ok(manifest: Manifest, summary: Summary, row: Row, res: dict[str, Any], options: RenderOptions,
               outdir: Path) -> None:
    rel = f"{row.id}.{options.format}"
    write_durable(outdir / rel, res["data"])  # the file first: a manifest line always names a complete file
    entry = {"id": row.id, "status": "ok", "path": rel, "text": row.text,
             **{k: res[k] for k in ("voice", "mode", "requested_mode", "steps", "seed", "speed", "seconds", "samples",
                                    "sample_rate", "sha256", "chunks", "check", "warnings", "timings",
                                    "voice_sha256")},
             "decoder": options.decoder or DEFAULT_DECODER, "line": row.line, "request": request_of(row, options)}
    manifest.append(entry)
    summary.rendered += 1
    summary.rendered_audio_s += float(res["seconds"])
    _count_ok(summary, entry)


def _record_error(manifest: Manifest, summary: Summary, row: Row, error: str, options: RenderOptions) -> None:
    s = row_settings(row, options.defaults)
    manifest.append({"id": row.id, "status": "error", "path": None, "text": row.text, "voice": s.voice,
                     "mode": s.mode, "error": error, "line": row.line, "decoder": options.decoder or DEFAULT_DECODER})
    summary.errors += 1
    summary.error_ids.append(row.id)


class Progress:
    """A tqdm bar with ETA when stderr is a terminal (and tqdm installed); else a line every ``interval`` s."""

    def __init__(self, total: int, done: int, log: TextIO, interval: float) -> None:
        self.total, self.done, self.log, self.interval = total, done, log, interval
        self.audio_s = 0.0
        self.bar = None
        self.t0 = self.last = time.monotonic()

    def start(self) -> None:
        self.t0 = self.last = time.monotonic()
        self._started_at = self.done
        if getattr(self.log, "isatty", lambda: False)():
            try:
                from tqdm import tqdm
            except ImportError:  # the `render` extra is absent: plain lines it is
                return
            self.bar = tqdm(total=self.total, initial=self.done, unit="row", file=self.log, desc="render",
                            dynamic_ncols=True)

    def update(self, n: int, audio_s: float) -> None:
        self.done += n
        self.audio_s += audio_s
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._line(now)

    def _line(self, now: float) -> None:
        elapsed = now - self.t0
        made = self.done - getattr(self, "_started_at", 0)
        eta = (self.total - self.done) * elapsed / made if made else float("nan")
        print(f"render: {self.done}/{self.total} rows, {self.audio_s:.1f} s audio, {elapsed:.0f} s elapsed, "
              f"ETA {eta:.0f} s", file=self.log, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.done > getattr(self, "_started_at", self.done):
            self._line(time.monotonic())


def summary_dict(summary: Summary) -> dict[str, Any]:
    return {**asdict(summary), "rtf": summary.rtf}


# ---------------------------------------------------------------------------------------- the command
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", metavar="INPUT", help="a .txt (a line per utterance, ids from line numbers), .csv/.tsv "
                   "(header id,text[,voice,mode,steps,seed,speed]) or .jsonl file, or '-' for stdin")
    p.add_argument("-o", "--outdir", required=True, metavar="OUTDIR",
                   help=f"where <id>.<ext> files and {MANIFEST} go (created; a rerun resumes)")
    p.add_argument("--input-format", choices=FORMATS, default=None,
                   help="input format (default: from the suffix; stdin: JSON lines if it starts with '{', else text)")
    p.add_argument("--voice", default=None, help=VOICE_HELP + "; a row's 'voice' names a speaker of that voice")
    p.add_argument("--mode", choices=MODES, default="auto", help="decoding path for rows that name none "
                   "(default: auto, which checks every output)")
    p.add_argument("--checker", choices=CHECK_LEVELS, default="fast",
                   help="the check of auto mode: fast (a small phone recogniser) or thorough (PocketSphinx)")
    p.add_argument("--steps", type=int, default=None, metavar="K", help="level-0 step budget of parallel decoding")
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="random seed for rows that name none (default: %(default)s, so a rerun reproduces a row)")
    p.add_argument("--speed", type=float, default=1.0, metavar="S", help="speaking rate factor (default: 1.0)")
    p.add_argument("--format", choices=tuple(AUDIO_FORMATS), default="wav", help="audio file format (16-bit)")
    p.add_argument("--decoder", default=None, metavar="NAME", help="how the codec turns tokens into audio, e.g. hq or "
                   f"fast for a mel codec (default: {DEFAULT_DECODER}, the codec's own; recorded in the manifest)")
    add_lexicon_argument(p)
    p.add_argument("--engine", choices=ENGINES, default="local",
                   help="local: this machine; ray: a Ray actor pool (RAY_ADDRESS or a local instance)")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="local: worker processes, each loading "
                   "the voice once (default 1: this process); ray: actors (default: one per cluster CPU)")
    p.add_argument("--threads", type=int, default=None, metavar="N", help="torch threads per worker")
    p.add_argument("--batch-rows", type=int, default=ROWS_PER_CALL, metavar="N",
                   help="rows per synthesis call; the facade packs their chunks into padded decoder batches of "
                   "similar length (default: %(default)s)")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="render only rows with index %% N == I (0-based), e.g. a Slurm array task; its manifest "
                   "is manifest.shard-I-of-N.jsonl so shards can share OUTDIR")


def run_command(args: argparse.Namespace, load_voice: Callable) -> int:
    """Validate everything cheap, then render; exit 0 when every row is ok, 1 when some erred."""
    shard = parse_shard(args.shard) if args.shard is not None else None
    kwargs = {} if args.decoder in (None, DEFAULT_DECODER) else {"decoder": args.decoder}
    lexicon = load_lexicon(args.lexicon)
    if lexicon is not None:
        kwargs["lexicon"] = lexicon  # loaded once here: workers get the checked entries, not a path to re-read
    options = RenderOptions(
        voice=args.voice, mode=args.mode, steps=args.steps, seed=args.seed, speed=args.speed,
        check_level=args.checker, format=args.format,
        decoder=args.decoder, lexicon=lexicon, engine=args.engine, workers=args.workers, threads=args.threads,
        rows_per_call=args.batch_rows,
        manifest=MANIFEST if shard is None else f"manifest.shard-{shard[0]}-of-{shard[1]}.jsonl")
    options.validate()
    every = read_rows(args.input, args.input_format, lexicon)
    if not every:
        raise InputError(f"{'stdin' if args.input == '-' else args.input} holds no rows to render")
    rows = select_shard(every, shard)  # may be empty: more shards than rows
    outdir = Path(args.outdir)
    loader = functools.partial(load_voice, args.voice, **kwargs)
    summary = render(rows, outdir, loader, options)
    print(f"audiopd render: {summary.text()}", file=sys.stderr)
    print(f"manifest: {outdir / options.manifest}")
    if summary.errors:
        shown = ", ".join(repr(i) for i in summary.error_ids[:5]) + (" ..." if summary.errors > 5 else "")
        print(f"audiopd render: {summary.errors} row(s) failed (status \"error\" in the manifest): {shown}",
              file=sys.stderr)
        return EXIT_ROW_ERRORS
    return EXIT_OK
