"""Stage 04: round-trip evaluation on the held-out set -> DATA/eval/<decoder>-<tag>.json and DATA/eval/pareto.md.

For each decoder of ``--decoders`` (default ``hq``, plus ``fast`` when the artifact ships it), ``audiopd.eval.codec_eval``
judges the held-out utterances (test-split sentences by six Kokoro voices and Piper joe; no fitting or training heard
them) as originals, through the decoder from the unquantised log-mel (row ``vocoder``) and from the first Q levels of
the RVQ for each Q of ``--levels``: Whisper tiny.en WER, DistillMOS (``--dnsmos`` adds DNSMOS), log-mel token error,
decode RTF on ``--threads`` torch threads. Q above the artifact's own count comes from a copy of the artifact with
every level stage 02 fitted (``DATA/eval/codec-all``), so one run shows where more levels stop paying.

A result file is one candidate: ``<tag>`` is the first 12 hex digits of the fitted codebooks' fingerprint, and for
``fast`` also 8 of its weights' sha256 and its fast Griffin-Lim iterations and momentum (``-fgla12x0.99``). A
rerun adds its rows to the file (rows keyed by Q), a refit or a new vocoder checkpoint starts a new file, and
``pareto.md`` lists every file: every candidate ever evaluated. Judgements are cached
(``DATA/eval/judge-cache.jsonl``): a rerun judges only new audio (the originals once for all decoders).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import codec_common as cc  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def all_levels_artifact(data: Path, artifact: Path) -> Path:
    """The shipped artifact's config and fast weights with every fitted level's codebooks, in DATA/eval/codec-all."""
    import yaml
    from safetensors.numpy import load_file

    from audiopd.codec.mel import MelCodecConfig, replace_config
    from audiopd.codec.world_fit import write_codec_artifact
    from audiopd.config import from_dict

    books = load_file(str(data / "rvq" / "codebooks.safetensors"))["codebooks"]
    cfg = from_dict(MelCodecConfig, yaml.safe_load((artifact / "config.yaml").read_text()))
    out = data / "eval" / "codec-all"
    out.mkdir(parents=True, exist_ok=True)
    if cfg.fast.weights_file:
        shutil.copyfile(artifact / cfg.fast.weights_file, out / cfg.fast.weights_file)
    every = replace_config(cfg, name=f"{cfg.name}-all", num_codebooks=len(books))
    write_codec_artifact(out, every, books, f"# {every.name}\n\nEvaluation copy of {artifact} with every level.\n")
    return out


def merge_rows(path: Path, result: dict) -> dict:
    """``result`` with the rows of an earlier run of the same file that it did not redo (keyed by levels), so
    one file keeps every Q tried with one decoder and one set of codebooks."""
    if path.is_file():
        old = json.loads(path.read_text())
        if old.get("items") == result.get("items"):
            redone = {str(r["levels"]) for r in result["rows"]}
            result = {**result, "rows": [r for r in old["rows"] if str(r["levels"]) not in redone] + result["rows"]}
    result["rows"].sort(key=lambda r: (-1, 0) if r["levels"] == "vocoder" else (0, int(r["levels"])))
    return result


def pareto(results: dict[str, dict]) -> str:
    """One markdown table: every (candidate, levels) row with DistillMOS (and its paired change from the originals
    where the result keeps per-item scores), WER and decode RTF, originals first.
    ``results`` maps a label (``decoder @ tag``) to a codec_eval JSON."""
    from audiopd.eval.codec_eval import paired_change

    lines = ["| decoder | levels | DistillMOS | change [95%] | WER % | decode RTF | log-mel MAE |",
             "|---|---|---|---|---|---|---|"]
    first = next(iter(results.values()))
    o = first["original"]
    lines.append(f"| original | - | {o.get('distillmos')} | - | {o.get('wer')} | - | - |")
    for label, res in results.items():
        for r in res["rows"]:
            c = paired_change(r, res["original"])
            change = "-" if c is None else f"{c['diff']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"
            lines.append(f"| {label} | {r['levels']} | {r.get('distillmos')} | {change} | {r.get('wer')} | "
                         f"{r.get('decode_rtf')} | {r.get('logmel_mae')} |")
    n = first.get("items")
    return (f"Held-out round trip, {n} utterances, judged by {first['judge'].get('asr', 'whisper')} + DistillMOS; "
            f"decode on {first.get('threads')} threads.\n\n" + "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--codec", default=str(REPO / "codecs" / "mel22k"), help="the mel codec artifact")
        p.add_argument("--decoders", default=None, help="comma-separated (default: every decoder the codec has)")
        p.add_argument("--levels", default="2,4,8,12,16", help="Q values to decode from")
        p.add_argument("--limit", type=int, default=1000, help="at most this many held-out utterances")
        p.add_argument("--threads", type=int, default=2, help="torch threads (issue 22's RTF is at 2)")
        p.add_argument("--dnsmos", action="store_true", help="score DNSMOS too (slow: every clip as 9 s)")
    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    data, artifact = Path(args.data), Path(args.codec)
    from audiopd.codec import load_codec
    from audiopd.eval import codec_eval

    evaluated = all_levels_artifact(data, artifact)
    every = load_codec(evaluated)
    decoders = args.decoders.split(",") if args.decoders else list(every.decoders)
    held = len(cc.read_manifest(data, "heldout"))
    items = min(args.limit, held)
    probe = "" if items == held else f"-n{items}"  # a --limit probe keeps its own files and table
    for decoder in decoders:
        tag = cc.candidate_tag(every, evaluated, decoder)
        out = data / "eval" / f"{decoder}-{tag}{probe}.json"
        run = out.with_name(f".{out.name}.run")
        argv_eval = ["--manifest", str(data / "manifest.jsonl"), "--set", "heldout", "--codec", str(evaluated),
                     "--decoder", decoder, "--levels", args.levels, "--limit", str(args.limit), "--no-pesq",
                     "--no-f0", "--threads", str(args.threads), "--judge-cache",
                     str(data / "eval" / "judge-cache.jsonl"), "--json", str(run)]
        if not args.dnsmos:
            argv_eval.append("--no-dnsmos")
        if codec_eval.main(argv_eval) != 0:
            return 2
        merged = merge_rows(out, json.loads(run.read_text()))
        cc.atomic_write_text(out, json.dumps({**merged, "tag": tag}, indent=1) + "\n")
        run.unlink()
    results = {}  # every candidate judged on as many utterances as this run
    for path in sorted((data / "eval").glob("*-*.json"), key=lambda p: p.stat().st_mtime):
        res = json.loads(path.read_text())
        if "tag" in res and res.get("items") == items:
            results[f"{res['decoder']} @ {res['tag']}"] = res
    table = pareto(results)
    name = f"pareto{probe}.md"
    cc.atomic_write_text(data / "eval" / name, table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
