"""Stage 01: training clips for the checker's phone recogniser -> DATA/shards/NNNN.npz (log-mel + phone labels).

Text: the natural corpus's train split (``recipes/natural/01_text.py`` writes DATA/text.tsv), minus every
sentence of the checker benchmark's calibration and benchmark parts (``audiopd.eval.bench_clips``) and the
joined long ones (they are built from fortunes), so thresholds are set and measured on text the recogniser
never heard. Each sentence is spoken by two sources round-robin from: the flite teachers (slt, rms, awb,
kal16), the shipped voice's own parallel output (its four speakers), Piper joe, and Kokoro voices for every
``--kokoro-every``-th sentence. Labels are the frontend's intended phones (stress dropped), what CTC needs.
Shards of ``--shard`` clips are written atomically and skipped when present: rerun to resume.

``--corpus ROOT`` adds the teachers of a natural token corpus (recipes/natural stages 01-04: ROOT/text.tsv and
ROOT/tokens/CODEC/train-*.safetensors, e.g. the Kokoro corpus of af_heart and am_adam) as ``corpus-NNNN.npz``:
each train utterance's tokens decoded by their codec's default decoder. That is the teachers' own speech as the
voice's decoder renders it, at ~1% of the cost of speaking it again (the codec round trip keeps their
intelligibility: codecs/mel22k/README.md), and none of the voice model's own predictions.

``--roundtrip SOURCE`` adds SOURCE (e.g. piper:joe) speaking the first ``--roundtrip-n`` train sentences, each
through ``--roundtrip-codec``'s encoder and decoder, as ``roundtrip-NNNN.npz``: a teacher whose tokens are in no
shared corpus, heard as the voice's decoder renders it.

    python recipes/checker/01_clips.py --data DATA --natural DATA/natural [--corpus ROOT] [--roundtrip piper:joe]
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "natural"))

BASE_SOURCES = ("flite:slt", "flite:rms", "flite:awb", "flite:kal16", "voice:slt", "voice:rms", "voice:awb",
                "voice:kal16", "piper:joe")
KOKORO = ("kokoro:af_heart", "kokoro:am_michael", "kokoro:bf_emma", "kokoro:bm_george", "kokoro:af_bella",
          "kokoro:am_adam")


def training_rows(natural: Path) -> list[tuple[str, str]]:
    """(id, text) of natural train rows that the checker benchmark never uses."""
    import natural_common as nc

    held, key_of = held_keys(), _text01().key_of
    rows = nc.read_text_table(natural)
    return [(r.id, r.text) for r in rows if r.split == "train" and r.kind != "long" and key_of(r.text) not in held]


def plan(rows: list[tuple[str, str]], kokoro_every: int) -> list[tuple[str, str, str]]:
    jobs = []
    for i, (uid, text) in enumerate(rows):
        jobs.append((uid, text, BASE_SOURCES[i % len(BASE_SOURCES)]))
        jobs.append((uid, text, BASE_SOURCES[(i + 4) % len(BASE_SOURCES)]))
        if kokoro_every and i % kokoro_every == 0:
            jobs.append((uid, text, KOKORO[(i // kokoro_every) % len(KOKORO)]))
    return jobs


class Sources:
    """Speaks (text, source) -> (audio, rate); loads each engine once, when first asked."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._tts = None
        self._peers: dict[str, object] = {}
        self._tmp = Path(tempfile.mkdtemp(prefix="checker-clips-"))

    def speak_many(self, items: list[tuple[str, str]]) -> list[tuple[np.ndarray, int]]:
        out: list = [None] * len(items)
        voice_items: dict[str, list[int]] = {}
        for k, (text, src) in enumerate(items):
            kind, name = src.split(":", 1)
            if kind == "voice":
                voice_items.setdefault(name, []).append(k)
            elif kind == "flite":
                from audiopd.eval.bench_clips import render

                clip = render(text, name, self._tmp)
                out[k] = (clip.audio, clip.sample_rate)
            else:
                peer = self._peers.get(src)
                if peer is None:
                    from audiopd.eval.peers import load_peer

                    peer = self._peers[src] = load_peer(src, threads=self.threads)
                audio, rate, _ = peer.synthesize(text)
                out[k] = (np.asarray(audio, dtype=np.float32), int(rate))
        if voice_items:
            if self._tts is None:
                import audiopd

                self._tts = audiopd.load("flite")  # "voice:slt" etc.: the flite voice's speakers
            for speaker, idx in voice_items.items():
                for j in range(0, len(idx), 8):
                    part = idx[j : j + 8]
                    res = self._tts.synthesize_batch([items[k][0] for k in part], voice=speaker, mode="parallel",
                                                     check=False, seed=j)
                    for k, r in zip(part, res):
                        out[k] = (r.audio, r.sample_rate)
        return out


def write_shard(path: Path, jobs, clips) -> float:
    from audiopd.checker.phones import labels_of_ids, log_mel, to_16k
    from audiopd.text import phonemize

    feats, labels, flen, llen = [], [], [], []
    seconds = 0.0
    for (uid, text, src), (audio, rate) in zip(jobs, clips):
        f = log_mel(to_16k(audio, rate)).astype(np.float16)
        lab = [lbl for lbl, _ in labels_of_ids(phonemize(text).ids)]
        feats.append(f)
        labels.append(np.asarray(lab, dtype=np.int8))
        flen.append(len(f))
        llen.append(len(lab))
        seconds += len(audio) / rate
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, feats=np.concatenate(feats), labels=np.concatenate(labels), feat_lengths=np.asarray(flen),
             label_lengths=np.asarray(llen), ids=np.asarray([j[0] for j in jobs]),
             sources=np.asarray([j[2] for j in jobs]))
    tmp.rename(path)
    return seconds


def corpus_jobs(root: Path, held: set[str]) -> list[tuple[Path, int, str, str, str]]:
    """(shard, index, id, text, "corpus:VOICE") of every train utterance of a token corpus whose sentence the
    checker benchmark does not use (``held``: their keys)."""
    import natural_common as nc

    from audiopd.train.shards import Shard, find_shards

    text = {r.id: r.text for r in nc.read_text_table(root)}
    key_of = _text01().key_of
    jobs = []
    for path in find_shards(sorted((root / "tokens").glob("*/train-*.safetensors"))):
        shard = Shard(path)
        for i in range(len(shard)):
            u = shard.utterance(i)
            sentence = text.get(u.utt_id.rsplit("/", 1)[-1])  # stage 04 names them VOICE/ID
            if sentence is not None and key_of(sentence) not in held:
                jobs.append((path, i, u.utt_id, sentence, "corpus:" + shard.meta.voices[u.speaker]))
    return jobs


def corpus_clips(jobs) -> list[tuple[np.ndarray, int]]:
    """The jobs' tokens through their codec (one codec load per shard's codec name)."""
    from audiopd.codec import load_codec
    from audiopd.train.shards import Shard

    out, codecs, shards = [], {}, {}
    for path, i, *_ in jobs:
        shard = shards.setdefault(path, Shard(path))
        codec = codecs.setdefault(shard.meta.codec, load_codec(shard.meta.codec))
        out.append((codec.decode(shard.utterance(i).codes.astype(np.int64)).reshape(-1), int(codec.sample_rate)))
    return out


def roundtrip_clips(items: list[tuple[str, str]], sources: Sources, codec_name: str) -> list[tuple[np.ndarray, int]]:
    """(text, source) spoken by ``sources``, then through the codec's encoder and default decoder."""
    from audiopd.audio import resample
    from audiopd.codec import load_codec

    codec = load_codec(codec_name)
    out = []
    for audio, rate in sources.speak_many(items):
        x = resample(np.asarray(audio, dtype=np.float32), int(rate), int(codec.sample_rate))
        out.append((codec.decode(codec.encode(x)).reshape(-1), int(codec.sample_rate)))
    return out


@functools.lru_cache(maxsize=1)
def _text01():
    """recipes/natural/01_text.py as a module (its key_of and spoken), loaded once."""
    from importlib import util

    spec = util.spec_from_file_location("natural_01_text", HERE.parent / "natural" / "01_text.py")
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def held_keys() -> set[str]:
    """Keys of the checker benchmark's calibration and benchmark sentences: never trained on."""
    from audiopd.eval.bench_clips import load_sentences

    text01 = _text01()
    held = set()
    for split in ("calib", "bench"):
        for s in load_sentences(split):
            spoken = text01.spoken(s)
            held.add(text01.key_of(spoken or s))
    return held


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="output root (shards/ goes under it)")
    p.add_argument("--natural", required=True, help="natural corpus root holding text.tsv (stage 01 there)")
    p.add_argument("--shard", type=int, default=200, help="clips per shard")
    p.add_argument("--kokoro-every", type=int, default=8, help="also a Kokoro voice for every N-th sentence (0: none)")
    p.add_argument("--max-shards", type=int, default=0, help="stop after this many shards (0: all)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--corpus", default=None, metavar="ROOT",
                   help="also a natural token corpus's train utterances, decoded by their codec (see above)")
    p.add_argument("--corpus-only", action="store_true", help="only the --corpus (and --roundtrip) shards")
    p.add_argument("--roundtrip", default=None, metavar="SOURCE", help="also SOURCE through a codec (see above)")
    p.add_argument("--roundtrip-n", type=int, default=1200, help="train sentences for --roundtrip")
    p.add_argument("--roundtrip-codec", default="mel22k")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    out = Path(args.data) / "shards"
    out.mkdir(parents=True, exist_ok=True)
    if args.corpus:  # decoded from tokens: no engine to load
        cjobs = corpus_jobs(Path(args.corpus), held_keys())
        n_corpus = (len(cjobs) + args.shard - 1) // args.shard
        print(f"{len(cjobs)} corpus clips in {n_corpus} shards", flush=True)
        for s in range(n_corpus):
            path = out / f"corpus-{s:04d}.npz"
            if path.exists():
                continue
            part = cjobs[s * args.shard : (s + 1) * args.shard]
            t0 = time.monotonic()
            secs = write_shard(path, [(uid, text, src) for _, _, uid, text, src in part], corpus_clips(part))
            print(f"[{time.strftime('%H:%M:%S')}] corpus shard {s + 1}/{n_corpus}: {secs / 60:.1f} min of audio "
                  f"in {time.monotonic() - t0:.0f} s", flush=True)
    sources = Sources(args.threads)
    if args.roundtrip:
        rjobs = [(uid, text, f"roundtrip:{args.roundtrip}")
                 for uid, text in training_rows(Path(args.natural))[: args.roundtrip_n]]
        for s in range((len(rjobs) + args.shard - 1) // args.shard):
            path = out / f"roundtrip-{s:04d}.npz"
            if path.exists():
                continue
            part = rjobs[s * args.shard : (s + 1) * args.shard]
            t0 = time.monotonic()
            secs = write_shard(path, part, roundtrip_clips([(t, args.roundtrip) for _, t, _ in part], sources,
                                                            args.roundtrip_codec))
            print(f"[{time.strftime('%H:%M:%S')}] roundtrip shard {s + 1}: {secs / 60:.1f} min of audio "
                  f"in {time.monotonic() - t0:.0f} s", flush=True)
    if args.corpus_only:
        return 0
    jobs = plan(training_rows(Path(args.natural)), args.kokoro_every)
    n_shards = (len(jobs) + args.shard - 1) // args.shard
    print(f"{len(jobs)} clips in {n_shards} shards", flush=True)
    for s in range(n_shards if not args.max_shards else min(n_shards, args.max_shards)):
        path = out / f"{s:04d}.npz"
        if path.exists():
            continue
        part = jobs[s * args.shard : (s + 1) * args.shard]
        t0 = time.monotonic()
        secs = write_shard(path, part, sources.speak_many([(t, src) for _, t, src in part]))
        print(f"[{time.strftime('%H:%M:%S')}] shard {s + 1}/{n_shards}: {secs / 60:.1f} min of audio "
              f"in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
