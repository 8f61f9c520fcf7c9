"""Stage 04: quantise the aligned utterances with the mel codec -> DATA/tokens/<codec>/<split>-NNN.safetensors.

Reads ``DATA/durations.jsonl`` (whatever stage 03 has aligned so far) and ``DATA/manifest.jsonl``, resamples each
utterance's audio to the codec's rate (``recipes/codec/codec_common.to_rate``: Kokoro's 24 kHz and Piper's
22.05 kHz both become the mel codec's 22,050 Hz), encodes it, and writes shards in the format of
``audiopd.train.shards`` (codes [Q, T], phoneme ids, frames per token, speaker ids), so ``python -m audiopd.train
--shards DATA/tokens/<codec>`` trains on them. Durations in seconds become frames per token by cumulative rounding
(``corpus_common.frames_per_token``, shared with the flite corpus's stage 06), summing exactly to T.

Speaker id = index in the shards' ``voices``: ``natural_common.DEFAULT_VOICES``'s order (or, with ``--voices``, the
named voices in that order, voices it does not list after them as given), fixed whatever stage 03 has reached, so
shards of a later run keep every id. Codes are cached per utterance in ``DATA/codes/<codec>-<fingerprint>/`` (a
rerun encodes only new utterances; a refitted codec gets a new folder); the shards are rebuilt from them on every
run (temp file + rename), stale shard files of a split removed. A row that cannot be used (not in the manifest,
tokens and durations of different lengths, a token outside the inventory, a missing wav, durations that do not
cover the audio) is logged as ``SKIPPED`` and counted. Marked done (``.done-04``) only once stage 03 is.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import natural_common as nc  # noqa: E402  (puts recipes/corpus on sys.path)

sys.path.insert(0, str(HERE.parent / "codec"))
import codec_common  # noqa: E402
from corpus_common import frames_per_token  # noqa: E402

STAGE = "04"
DEFAULT_CODEC = "mel22k"  # the shipped artifact (codecs/mel22k), found by name like any codec
# Durations may miss the codes' span by a frame or two (the mel codec's T is S // hop + 1); more means the
# alignment belongs to other audio (a wav rendered again after stage 03 ran).
MAX_MISMATCH_S = 0.05
SHARD_NAME = re.compile(r"^(train|dev|test)-\d{3,}\.safetensors$")


@dataclass(frozen=True)
class TokenConfig:
    """What one run writes: ``speakers`` in id order, ``per_shard`` utterances per file, shards in ``out``."""

    codec: str = DEFAULT_CODEC
    speakers: tuple[str, ...] = nc.DEFAULT_VOICES
    per_shard: int = 2000
    out: str = ""  # default DATA/tokens/<codec name>


def speaker_order(voices: str) -> tuple[str, ...]:
    """``--voices`` -> speakers in id order: DEFAULT_VOICES's order, then voices it does not list, as given."""
    named = list(dict.fromkeys(v.strip() for v in voices.split(",") if v.strip()))
    if not named:
        return nc.DEFAULT_VOICES
    return tuple([v for v in nc.DEFAULT_VOICES if v in named] + [v for v in named if v not in nc.DEFAULT_VOICES])


def cache_dir(data: Path, codec) -> Path:
    """Per-utterance codes of one codec; its token fingerprint in the name, so refitted codebooks never reuse them."""
    fp = getattr(codec, "token_fingerprint", "")
    return data / "codes" / (f"{codec.name}-{fp[:12]}" if fp else codec.name)


def row_problem(d: dict, m: dict | None, symbols: dict[str, int]) -> tuple[str, str] | None:
    """Why a durations row cannot become an utterance, as (kind for the counts, detail for the log); None: it can."""
    if m is None:
        return "no manifest row", "not in the manifest"
    tokens, durations = d.get("tokens") or [], d.get("durations_s") or []
    if not tokens or len(tokens) != len(durations):
        return "bad tokens", f"{len(tokens)} tokens but {len(durations)} durations"
    unknown = sorted({t for t in tokens if t not in symbols})
    if unknown:
        return "bad tokens", f"token(s) {unknown} not in the phoneme inventory"
    if min(durations) < 0:
        return "bad tokens", "a negative duration"
    if abs(sum(durations) - m["seconds"]) > MAX_MISMATCH_S:
        return "durations off the audio", f"durations sum to {sum(durations):.3f} s, the wav holds {m['seconds']} s"
    if d.get("split", m["split"]) != m["split"]:
        return "split mismatch", f"split {d.get('split')!r} but the manifest says {m['split']!r}"
    return None


def encode_audio(data: Path, m: dict, codec) -> np.ndarray:
    """A manifest row's wav -> codes [Q, T] int16, resampled from the teacher's rate to the codec's."""
    from audiopd.audio import read_audio

    audio, rate = read_audio(data / m["wav"])
    return codec.encode(codec_common.to_rate(audio, rate, codec.sample_rate))[0].astype(np.int16)


def save_codes(path: Path, codes: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as handle:
        np.save(handle, codes)
    os.replace(tmp, path)


def utterance_codes(data: Path, m: dict, d: dict, codec, cache: Path):
    """(codes, problem, encoded now): the cached codes while they still span the durations, else the wav's."""
    from audiopd.errors import AudioInputError

    path = cache / nc.voice_dir_name(m["voice"]) / f"{m['id']}.npy"
    total = float(sum(d["durations_s"]))
    limit = max(MAX_MISMATCH_S, 2.0 / codec.frame_rate)
    if path.is_file():
        codes = np.load(path)
        if abs(codes.shape[1] / codec.frame_rate - total) <= limit:
            return codes, None, False
    try:
        codes = encode_audio(data, m, codec)
    except AudioInputError as exc:
        return None, ("bad audio", str(exc)), False
    span = codes.shape[1] / codec.frame_rate
    if abs(span - total) > limit:
        return None, ("durations off the audio", f"durations sum to {total:.3f} s, the codes span {span:.3f} s"), True
    save_codes(path, codes)
    return codes, None, True


def shard_dir(data: Path, cfg: TokenConfig, codec) -> Path:
    return Path(cfg.out) if cfg.out else data / "tokens" / codec.name


def remove_stale(out: Path, written: set[str]) -> list[str]:
    """Shard files of an earlier run that this run did not rewrite (fewer utterances in a split, or none)."""
    stale = sorted(p.name for p in out.glob("*.safetensors") if SHARD_NAME.match(p.name) and p.name not in written)
    for name in stale:
        (out / name).unlink()
    return stale


def run(data: Path, cfg: TokenConfig, codec, log=print) -> dict:
    """Encode what stage 03 has aligned (cached codes reused) and rewrite every shard; returns counts."""
    from audiopd.text.symbols import INVENTORY_VERSION, SYMBOL_TO_ID
    from audiopd.train.shards import ShardMeta, Utterance, write_shard

    for name, stage in (("manifest.jsonl", "02_render"), ("durations.jsonl", "03_align")):
        if not (data / name).is_file():
            raise SystemExit(f"{data / name} is missing: run recipes/natural/{stage}.py --data {data} first")
    if codec.cardinality > 32768:
        raise SystemExit(f"codec {codec.name}: cardinality {codec.cardinality} does not fit the shards' int16 codes")
    manifest = {(r["voice"], r["id"]): r for r in nc.read_jsonl(data / "manifest.jsonl")}
    rank = {v: i for i, v in enumerate(cfg.speakers)}
    rows = {(r["voice"], r["id"]): r for r in nc.read_jsonl(data / "durations.jsonl")}
    durations = {k: r for k, r in rows.items() if k[0] in rank}
    meta = ShardMeta(codec=codec.name, sample_rate=codec.sample_rate, frame_rate=codec.frame_rate,
                     num_codebooks=codec.num_codebooks, cardinality=codec.cardinality,
                     inventory_version=str(INVENTORY_VERSION), voices=tuple(cfg.speakers))
    out = shard_dir(data, cfg, codec)
    cache = cache_dir(data, codec)
    skipped: dict[str, int] = {}
    counts: dict[str, dict] = {}
    written: set[str] = set()
    encoded, start = 0, time.monotonic()
    for split in nc.SPLITS:
        # The manifest's split (the durations row's when the manifest lacks it); sentence-major, so every shard
        # mixes the speakers, and the order is the same on every run.
        keys = sorted((k for k in durations if (manifest.get(k) or durations[k]).get("split") == split),
                      key=lambda k: (k[1], rank[k[0]]))
        utts: list = []
        total = {"utterances": 0, "shards": 0, "frames": 0}
        for n, key in enumerate(keys):
            d, m = durations[key], manifest.get(key)
            problem = row_problem(d, m, SYMBOL_TO_ID)
            if problem is None:
                codes, problem, fresh = utterance_codes(data, m, d, codec, cache)
                encoded += fresh
                if fresh and encoded % 200 == 0:
                    log(f"[{time.strftime('%H:%M:%S')}] encoded {encoded} utterances this run")
            if problem is not None:
                log(f"SKIPPED {key[0]} {key[1]}: {problem[1]}")
                skipped[problem[0]] = skipped.get(problem[0], 0) + 1
            else:
                utts.append(Utterance(
                    utt_id=f"{key[0]}/{key[1]}", speaker=rank[key[0]],
                    phonemes=np.array([SYMBOL_TO_ID[t] for t in d["tokens"]], dtype=np.int64),
                    durations=frames_per_token(d["durations_s"], codec.frame_rate, codes.shape[1]), codes=codes))
                total["utterances"] += 1
                total["frames"] += codes.shape[1]
            if utts and (len(utts) == cfg.per_shard or n == len(keys) - 1):
                name = f"{split}-{total['shards']:03d}.safetensors"
                write_shard(out / name, utts, meta)
                written.add(name)
                total["shards"] += 1
                utts = []
        if total["shards"]:
            counts[split] = total
    missing = [v for v in cfg.speakers if not any(k[0] == v for k in durations)]
    if missing:
        log(f"no aligned utterances yet for {', '.join(missing)} (their speaker ids stay reserved)")
    return {"codec": codec.name, "token_fingerprint": getattr(codec, "token_fingerprint", ""), "out": str(out),
            "voices": list(cfg.speakers), "splits": counts, "encoded_this_run": encoded, "skipped": skipped,
            "other_voices": len(rows) - len(durations), "cache": str(cache),
            "removed_stale": remove_stale(out, written) if out.is_dir() else [],
            "seconds": round(time.monotonic() - start, 1)}


def done_for(data: Path, info: dict) -> bool:
    """The marker counts only for the same codec (name and fingerprint), speakers and shard folder."""
    if not nc.is_done(data, STAGE):
        return False
    done = json.loads(nc.done_marker(data, STAGE).read_text(encoding="utf-8"))
    return all(done.get(k) == info[k] for k in ("codec", "token_fingerprint", "voices", "out"))


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--codec", default=DEFAULT_CODEC, help="codec artifact, by name or directory (default: mel22k)")
        p.add_argument("--voices", default="", help="only these voices, the speakers in this order: see the docstring "
                                                    "(comma-separated; default natural_common.DEFAULT_VOICES)")
        p.add_argument("--per-shard", type=int, default=2000, help="utterances per shard file")
        p.add_argument("--out", default="", help="shard folder (default: DATA/tokens/<codec name>)")
    args = nc.stage_args(__doc__.splitlines()[0], argv, extra)
    if args.per_shard < 1:
        raise SystemExit("--per-shard must be at least 1")
    from audiopd.codec import load_codec

    data = Path(args.data)
    cfg = TokenConfig(codec=args.codec, speakers=speaker_order(args.voices), per_shard=args.per_shard, out=args.out)
    codec = load_codec(cfg.codec)
    key = {"codec": codec.name, "token_fingerprint": getattr(codec, "token_fingerprint", ""),
           "voices": list(cfg.speakers), "out": str(shard_dir(data, cfg, codec))}
    if done_for(data, key) and not args.force:
        print(f"stage {STAGE} already done for codec {codec.name} ({nc.done_marker(data, STAGE)}); use --force to redo")
        return 0
    info = run(data, cfg, codec, log=lambda s: print(s, flush=True))
    print(json.dumps(info, indent=1, sort_keys=True))
    if nc.is_done(data, "03"):
        nc.mark_done(data, STAGE, {**info, "config": asdict(cfg)})
    else:
        print("stage 03 is still aligning: rerun this stage later to add the rest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
