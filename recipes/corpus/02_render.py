"""Stage 02: render every sentence with four flite voices, keeping flite's own phone times.

Output per utterance: DATA/corpus/wav/<voice>/<id>.wav (16 kHz mono 16-bit) and
DATA/corpus/phones/<voice>/<id>.tsv (phone, start_s, end_s), both from one ``flite -psdur`` call so
the phone times belong to exactly that waveform. Then DATA/corpus/manifest.jsonl lists them all.
flite's built-in voices slt, rms, awb and kal16 all synthesise at 16 kHz (checked on each file);
sox resampling is only a fallback should a voice ever produce another rate.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_common as cc  # noqa: E402

STAGE = "02"
FLITE_TIMEOUT_S = 60


class RenderError(RuntimeError):
    """flite or sox failed, or produced output we cannot use, for one utterance."""


def parse_psdur(stdout: str) -> list[tuple[str, float, float]]:
    """Parse ``flite -psdur`` output ("pau:0.164 hh:0.255 ...", end times) into (phone, start, end).

    flite prints one line per utterance; should a later line restart its clock at zero we offset
    it by the previous end so times stay monotonic over the whole waveform.
    """
    phones: list[tuple[str, float, float]] = []
    offset = 0.0
    for line in stdout.splitlines():
        items = line.split()
        if not items or not all(":" in it for it in items):
            continue  # not a segment line (flite prints nothing else today, but be strict)
        line_start = phones[-1][2] if phones else 0.0
        first_end = float(items[0].rsplit(":", 1)[1])
        if phones and first_end < line_start:
            offset = line_start
        for item in items:
            name, end_text = item.rsplit(":", 1)
            end = float(end_text) + offset
            start = phones[-1][2] if phones else 0.0
            if end < start:
                raise RenderError(f"non-monotonic phone times in flite output near {item!r}")
            phones.append((name, start, end))
    if not phones:
        raise RenderError("flite printed no phone segments")
    return phones


def phones_tsv(phones: list[tuple[str, float, float]]) -> str:
    return "phone\tstart_s\tend_s\n" + "".join(f"{p}\t{s:.3f}\t{e:.3f}\n" for p, s, e in phones)


def render_one(voice: str, text: str, wav_path: Path, phones_path: Path) -> None:
    """Render ``text`` with ``voice``; write the wav and the phone table atomically."""
    wav_path.parent.mkdir(parents=True, exist_ok=True)
    phones_path.parent.mkdir(parents=True, exist_ok=True)
    tmp_wav = cc.temp_path_for(wav_path, ".wav")
    try:
        proc = subprocess.run(["flite", "-voice", voice, "-psdur", "-t", text, "-o", str(tmp_wav)],
                              capture_output=True, text=True, timeout=FLITE_TIMEOUT_S)
        if proc.returncode != 0:
            raise RenderError(f"flite exited {proc.returncode}: {proc.stderr.strip()[:200]}")
        phones = parse_psdur(proc.stdout)
        info = sf.info(str(tmp_wav))
        if info.frames == 0:
            raise RenderError("flite wrote an empty waveform")
        if info.channels != 1 or info.samplerate != cc.SAMPLE_RATE or info.subtype != "PCM_16":
            fixed = cc.temp_path_for(wav_path, ".wav")
            subprocess.run(["sox", str(tmp_wav), "-r", str(cc.SAMPLE_RATE), "-c", "1", "-b", "16", str(fixed)],
                           check=True, capture_output=True, timeout=FLITE_TIMEOUT_S)
            os.replace(fixed, tmp_wav)
        cc.atomic_write_text(phones_path, phones_tsv(phones))
        os.replace(tmp_wav, wav_path)  # the wav goes last: its presence means the item is complete
    finally:
        if tmp_wav.exists():
            tmp_wav.unlink()


def item_paths(data: str | Path, voice: str, utt_id: str) -> tuple[Path, Path]:
    root = cc.corpus_dir(data)
    return root / "wav" / voice / f"{utt_id}.wav", root / "phones" / voice / f"{utt_id}.tsv"


def manifest_rows(data: str | Path, sentences: list[tuple[str, str, str]],
                  voices: tuple[str, ...]) -> list[dict]:
    rows = []
    for voice in voices:
        for utt_id, split, text in sentences:
            wav, phones = item_paths(data, voice, utt_id)
            if not (wav.is_file() and phones.is_file()):
                continue
            info = sf.info(str(wav))
            rows.append({"id": utt_id, "voice": voice, "split": split, "text": text,
                         "wav": wav.relative_to(data).as_posix(), "seconds": round(info.frames / info.samplerate, 4),
                         "phones": phones.relative_to(data).as_posix()})
    return rows


def run(data: str | Path, voices: tuple[str, ...], jobs: int, limit: int | None = None) -> dict:
    """Render what is missing, write the manifest, return counts. Raises SystemExit on failures."""
    if shutil.which("flite") is None:
        raise SystemExit("flite is not installed (apt-get install flite)")
    sentences = cc.read_sentences(data)[:limit] if limit else cc.read_sentences(data)
    todo = []
    # Sentence-major order: a partial run already has every voice for the same sentences.
    for utt_id, _split, text in sentences:
        for voice in voices:
            wav, phones = item_paths(data, voice, utt_id)
            if not (wav.is_file() and phones.is_file()):
                todo.append((voice, utt_id, text, wav, phones))
    failures: list[str] = []

    def work(task):
        voice, utt_id, text, wav, phones = task
        try:
            render_one(voice, text, wav, phones)
        except (RenderError, subprocess.SubprocessError, OSError, RuntimeError) as exc:
            return f"{voice}/{utt_id}: {exc}"
        return None

    # Threads only drive the flite subprocesses, so `jobs` flite processes run at once.
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for n, err in enumerate(pool.map(work, todo), 1):
            if err:
                failures.append(err)
            if n % 500 == 0:
                print(f"  rendered {n}/{len(todo)}", flush=True)
    rows = manifest_rows(data, sentences, voices)
    cc.write_jsonl(cc.corpus_dir(data) / "manifest.jsonl", rows)
    if failures:
        raise SystemExit(f"{len(failures)} utterances failed, e.g. " + "; ".join(failures[:3]))
    hours = {v: round(sum(r["seconds"] for r in rows if r["voice"] == v) / 3600, 3) for v in voices}
    return {"rendered_now": len(todo), "utterances": len(rows), "hours": hours}


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--voices", default=",".join(cc.VOICES), help="comma-separated flite voices")
        p.add_argument("--jobs", type=int, default=2, help="flite processes at once")
        p.add_argument("--limit", type=int, default=0, help="render only the first N sentences (testing)")
    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    if cc.is_done(args.data, STAGE) and not args.force:
        print(f"stage {STAGE} already done ({cc.done_marker(args.data, STAGE)}); use --force to redo")
        return 0
    timer = cc.Timer()
    voices = tuple(v for v in args.voices.split(",") if v)
    info = run(args.data, voices, max(1, args.jobs), args.limit or None)
    info["seconds"] = timer.seconds
    if not args.limit:  # a partial (testing) run must not mark the stage complete
        cc.mark_done(args.data, STAGE, info)
    print(f"rendered {info['rendered_now']} new, {info['utterances']} utterances; hours {info['hours']}; "
          f"{timer.seconds} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
