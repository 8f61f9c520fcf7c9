"""Speed benchmark of a voice: parallel vs serial decoding, side by side, at batch 1 and 8, 1 to 20 s.

    audiopd bench [--voice V] [--lengths 1,2,5,10,20] [--batch 1,8] [--repeats 3] [--auto] [--json OUT]
                  [--peers kokoro:af_heart,piper:joe]

Texts: sentences written for this benchmark (``BENCH_SENTENCES``; held-out style: plain English, no
digits or abbreviations, in no corpus), concatenated from a different start sentence per batch item
and cut at a word boundary where the voice's *own predicted duration* comes closest to the target
(the facade's chunking and joining pauses included). So every cell measures the lengths the voice
really produces; the table reports the actual audio seconds, not the target.

Each cell (target length x batch size) runs the modes interleaved per repeat (parallel, serial,
[auto,] parallel, serial, ...), so slow drifts of a shared machine's load hit both modes alike,
and reports medians over the repeats. One untimed warm-up call per mode comes first (allocation,
kernel selection, pocketsphinx start-up for auto). Speed figures run with the checker off
(``mode="parallel"``/``"serial"``); ``--auto`` adds the checked ``auto`` mode at batch 1.

Figures per cell and mode, all from one ``Synthesizer.synthesize_batch`` call over the batch:

* ``median_s``: end-to-end wall time (frontend, durations, token decoding, codec decode, joining);
* ``rtf``: ``median_s`` / audio seconds of the whole batch (a throughput figure at batch 8);
* ``rtf_model``: the same without codec decoding (timed around ``Codec.decode``): what the
  token decoder (plus frontend and duration prediction) costs;
* ``codec_share``: codec decode time / wall time;
* ``forward_passes``, ``steps``: the facade's report, mean per text (passes of every model batch the
  text took part in; level-0 steps, serial = one per frame);
* ``serial_over_parallel``: the ratio of the medians (> 1: parallel is faster).

Threads: torch's own choice unless ``--threads N`` (the same default as ``audiopd say`` and ``serve``, so the
table says what a user of this machine gets); the report records the count. Both modes always run with the
same count, side by side.

``--peers`` times natural peer systems (Kokoro, Piper) in the same rounds on the same texts and thread count
(``audiopd.eval.bench_peers`` describes their figures); they need the ``teachers`` extra. Then each system's
timed call follows an untimed call of its own (``BenchConfig.rewarm``; ``--no-rewarm`` turns it off): a call
right after another engine's runs measurably slower than the same call in a process that serves only it.

The command itself (options, the Markdown table, printing, the JSON file) is ``audiopd.eval.bench_cli``;
``audiopd bench --stages`` breaks one call at batch 1 down into its stages instead (``audiopd.eval.bench_stages``).

No speed figure is ever asserted in a test; tests check the structure on a tiny voice.
"""

from __future__ import annotations

import platform
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from audiopd.codec.base import Codec
from audiopd.errors import AudiopdError

PARALLEL, SERIAL, AUTO = "parallel", "serial", "auto"
MAX_LENGTH_S = 120.0
MAX_BATCH = 64

BENCH_SENTENCES: tuple[str, ...] = (
    "The old bridge over the river was painted green last summer.",
    "She keeps a small notebook in her coat pocket for new ideas.",
    "Nobody expected the quiet librarian to win the singing contest.",
    "We should leave early if we want to catch the morning train.",
    "The children built a tall tower of wooden blocks on the kitchen floor.",
    "A cold wind blew across the empty field all night long.",
    "He promised to fix the broken gate before the weekend.",
    "The museum opens its new garden to visitors in the spring.",
    "Please remember to water the plants while I am away.",
    "Her brother studies the behaviour of birds along the coast.",
    "The bakery on the corner sells fresh bread every morning.",
    "They walked slowly through the market, looking at the bright fruit.",
    "My neighbour plays the piano quietly after dinner.",
    "The small boat drifted toward the harbour as the fog lifted.",
    "Reading a good book is a pleasant way to spend a rainy afternoon.",
    "The teacher asked everyone to write a short letter to a friend.",
    "A family of foxes lives under the shed behind the school.",
    "The new road will make the journey to the village much shorter.",
    "He could hear the sound of distant thunder over the hills.",
    "We found an old map of the town hidden inside a drawer.",
    "The cat watched the birds from the window with great interest.",
    "Most of the snow had melted by the time we reached the valley.",
    "She laughed when she saw the size of the giant pumpkin.",
    "The engineers tested the machine again before sending it away.",
    "Our guide told us the story of the castle and its lonely king.",
    "The lights of the city slowly came on as evening fell.",
    "A warm cup of tea is exactly what I need right now.",
    "The players shook hands with each other after the long match.",
    "Fresh paint makes the whole room look bigger and brighter.",
    "He wrote the answer on the board and turned to the class.",
    "The river rose quickly after three days of heavy rain.",
    "Everyone agreed that the picnic had been a great success.",
    "The farmer counted his sheep twice before closing the barn.",
    "She found her missing glasses on top of her own head.",
    "The clock in the hall stopped exactly at midnight.",
    "We listened to the waves while the sun went down behind the rocks.",
    "The little dog barked at every stranger who passed the house.",
    "The band played one more song before the crowd went home.",
    "Gardening teaches patience, because nothing grows overnight.",
    "The pilot announced that we would land a few minutes early.",
)


class BenchOptionError(AudiopdError, ValueError):
    """A benchmark option is out of range, or the voice cannot produce the asked lengths."""


def check_run_options(lengths: tuple[float, ...], repeats: int, steps: int | None, seed: int) -> None:
    """The options every bench view shares (target lengths, repeats, level-0 steps, seed), each a one-line error."""
    if not lengths or any(not 0 < x <= MAX_LENGTH_S for x in lengths):
        raise BenchOptionError(f"lengths must be seconds in (0, {MAX_LENGTH_S:.0f}], got {list(lengths)}")
    if repeats < 1:
        raise BenchOptionError(f"repeats must be >= 1, got {repeats}")
    if steps is not None and not 1 <= steps <= 256:
        raise BenchOptionError(f"steps must lie in 1..256, got {steps}")
    if seed < 0:
        raise BenchOptionError(f"seed must be >= 0, got {seed}")


@dataclass(frozen=True)
class BenchConfig:
    lengths: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 20.0)  # target seconds per text
    batches: tuple[int, ...] = (1, 8)
    repeats: int = 3
    auto: bool = False  # add the checked auto mode at batch 1
    steps: int | None = None  # parallel level-0 step budget (None: the voice's configured default)
    seed: int = 0
    warmup: bool = True
    # With peers, each system's first timed call in a round follows an untimed call of its own on the same texts,
    # as in a process that serves one engine: right after Kokoro and Piper (ONNX Runtime) a 1 s parallel synthesis
    # took 122 ms against 79 back to back and 65 after one untimed call of its own (5 s: 263 / 194 / 202), and Piper
    # lost ~30% after Kokoro in the same way (recipes/voice/README.md, "Two passes and a fair bench"). A pause
    # alone (0.3 or 1 s) left 10-16% on a 5 s call. The warm-up calls are not timed.
    rewarm: bool = True

    def validate(self) -> None:
        check_run_options(self.lengths, self.repeats, self.steps, self.seed)
        if not self.batches or any(not 1 <= b <= MAX_BATCH for b in self.batches):
            raise BenchOptionError(f"batch sizes must lie in 1..{MAX_BATCH}, got {list(self.batches)}")

    def modes(self, batch: int) -> tuple[str, ...]:
        return (PARALLEL, SERIAL, AUTO) if self.auto and batch == 1 else (PARALLEL, SERIAL)


class TimedCodec(Codec):
    """A codec that measures the wall time during which any of its ``decode`` calls ran.

    The renderer decodes through it, possibly several chunks at once (``Codec.concurrent_decode``); summing
    the calls' durations would then count overlapping time twice, so ``seconds`` is the union of the busy
    intervals: the share of the wall clock that codec decoding occupied.
    """

    def __init__(self, inner: Codec) -> None:
        self.inner = inner
        self.name, self.sample_rate, self.frame_rate = inner.name, inner.sample_rate, inner.frame_rate
        self.num_codebooks, self.cardinality = inner.num_codebooks, inner.cardinality
        self.concurrent_decode = inner.concurrent_decode
        self.seconds = 0.0
        self._lock = threading.Lock()
        self._active = 0
        self._since = 0.0

    def encode(self, audio: np.ndarray) -> np.ndarray:
        return self.inner.encode(audio)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        return self._timed(self.inner.decode, codes)

    def decode_split(self, codes: np.ndarray, parts: int) -> np.ndarray:
        return self._timed(self.inner.decode_split, codes, parts)

    def _timed(self, fn, *args):
        with self._lock:
            if self._active == 0:
                self._since = time.perf_counter()
            self._active += 1
        try:
            return fn(*args)
        finally:
            with self._lock:
                self._active -= 1
                if self._active == 0:
                    self.seconds += time.perf_counter() - self._since

    def _encode(self, audio: np.ndarray) -> np.ndarray:  # pragma: no cover - encode/decode delegate
        raise NotImplementedError

    def _decode(self, codes: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


# ------------------------------------------------------------------------------------------- texts
def predicted_seconds(tts, text: str, speaker: int = 0) -> float:
    """Seconds the facade will produce for ``text``: predicted chunk durations + joining pauses."""
    import torch

    from audiopd.errors import NothingToSpeakError
    from audiopd.text import chunk_text, phonemize

    frames, chunks = 0, 0
    for chunk in chunk_text(text, tts.config.max_chunk_chars):
        try:
            ids = phonemize(chunk).ids
        except NothingToSpeakError:
            continue
        cond = tts.model.condition(torch.tensor([list(ids)]), torch.tensor([speaker]))
        frames += int(cond.durations.sum())
        chunks += 1
    return frames / tts.frame_rate + max(0, chunks - 1) * tts.config.join.pause_s


def _text_of(words: Sequence[str]) -> str:
    text = " ".join(words).rstrip(",;:")
    return text if text.endswith((".", "?", "!")) else text + "."


def build_text(tts, target_s: float, *, speaker: int = 0, offset: int = 0,
               sentences: Sequence[str] = BENCH_SENTENCES) -> str:
    """Sentences from ``offset`` on, cut at the word where the predicted duration is closest to ``target_s``."""
    words: list[str] = []
    k = offset
    while True:
        words += sentences[k % len(sentences)].split()
        k += 1
        if predicted_seconds(tts, _text_of(words), speaker) >= target_s:
            break
        if k - offset > 4 * len(sentences):  # duration grows with text unless the predictor is broken
            raise BenchOptionError(f"the voice predicts under {target_s} s for {len(words)} words")
    lo, hi = 1, len(words)  # smallest prefix reaching the target (predicted duration ~ monotone in words)
    while lo < hi:
        mid = (lo + hi) // 2
        if predicted_seconds(tts, _text_of(words[:mid]), speaker) >= target_s:
            hi = mid
        else:
            lo = mid + 1
    best = _text_of(words[:lo])
    if lo > 1:
        shorter = _text_of(words[: lo - 1])
        if target_s - predicted_seconds(tts, shorter, speaker) < predicted_seconds(tts, best, speaker) - target_s:
            best = shorter
    return best


# --------------------------------------------------------------------------------------- measuring
def _run(tts, timer: TimedCodec, texts: list[str], mode: str, cfg: BenchConfig,
         speaker: str | None) -> dict[str, Any]:
    timer.seconds = 0.0
    t0 = time.perf_counter()
    results = tts.synthesize_batch(texts, voice=speaker, mode=mode, steps=cfg.steps, seed=cfg.seed,
                                   check=None if mode == AUTO else False)
    wall = time.perf_counter() - t0
    out = {
        "wall_s": wall, "codec_s": timer.seconds, "audio_s": sum(r.duration_s for r in results),
        "forward_passes": float(np.mean([r.report["forward_passes"] for r in results])),
        "steps": float(np.mean([r.report["steps"] for r in results])),
        "chunks": float(np.mean([r.report["chunks"] for r in results])),
    }
    if mode == AUTO:
        out["attempts"] = float(np.mean([len(r.report["attempts"]) for r in results]))
        checks = [r.report["check"] for r in results if r.report.get("check") is not None]
        out["passed"] = sum(bool(c["passed"]) for c in checks) / len(checks) if checks else None
        out["first_path"] = sorted({r.report["first_path"] for r in results})
    return out


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    wall = [r["wall_s"] for r in runs]
    model = [r["wall_s"] - r["codec_s"] for r in runs]
    audio = runs[0]["audio_s"]
    med = statistics.median(wall)
    out = {
        "wall_s": [round(w, 4) for w in wall], "median_s": round(med, 4),
        "codec_s": round(statistics.median(r["codec_s"] for r in runs), 4),
        "rtf": round(med / audio, 4) if audio > 0 else None,
        "rtf_model": round(statistics.median(model) / audio, 4) if audio > 0 else None,
        "codec_share": round(statistics.median(r["codec_s"] for r in runs) / med, 4) if med > 0 else None,
        "forward_passes": round(statistics.median(r["forward_passes"] for r in runs), 1),
        "steps": round(statistics.median(r["steps"] for r in runs), 1),
        "chunks": runs[0]["chunks"],
    }
    for key in ("attempts", "passed", "first_path"):
        if key in runs[0]:
            out[key] = runs[-1][key]
    return out


def run_bench(tts, cfg: BenchConfig | None = None, *, speaker: str | None = None, voice_name: str = "",
              log: Callable[[str], None] | None = None, peers: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every cell (target length x batch size) and return the JSON-able report (see module doc).

    ``speaker`` is one of ``tts.voices`` (default: the first); ``voice_name`` only labels the report.
    ``peers`` (name -> loaded peer, ``audiopd.eval.peers``) are timed in the same rounds on the same texts.
    """
    import torch

    from audiopd.eval import bench_peers

    cfg = cfg or BenchConfig()
    cfg.validate()
    log = log or (lambda msg: None)
    spk = tts.model.info.speaker_id(speaker) if speaker is not None else 0
    texts: dict[tuple[float, int], str] = {}

    def text_for(target: float, j: int) -> str:
        # Item j of a batch starts at another sentence; 7 is prime to len(BENCH_SENTENCES) = 40.
        key = (target, j)
        if key not in texts:
            texts[key] = build_text(tts, target, speaker=spk, offset=7 * j)
        return texts[key]

    inner = tts.codec
    timer = tts.codec = TimedCodec(inner)
    order: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    peers = dict(peers or {})
    t_start = time.perf_counter()
    try:
        if cfg.warmup:
            for mode in cfg.modes(1):
                _run(tts, timer, [text_for(min(cfg.lengths), 0)], mode, cfg, speaker)
            for peer in peers.values():
                bench_peers.run_peer(peer, [text_for(min(cfg.lengths), 0)])
        for target in cfg.lengths:
            for batch in cfg.batches:
                batch_texts = [text_for(target, j) for j in range(batch)]
                modes = cfg.modes(batch)
                runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
                peer_runs: dict[str, list[dict[str, float]]] = {p: [] for p in peers}
                for r in range(cfg.repeats):
                    if peers and cfg.rewarm:  # the peers ran last: one untimed call of audiopd's own first
                        _run(tts, timer, batch_texts, modes[0], cfg, speaker)
                    for mode in modes:  # interleaved: A B A B, so load drifts hit both modes alike
                        runs[mode].append(_run(tts, timer, batch_texts, mode, cfg, speaker))
                        order.append({"target_s": target, "batch": batch, "repeat": r, "mode": mode})
                    for name, peer in peers.items():
                        if cfg.rewarm:
                            bench_peers.run_peer(peer, batch_texts)
                        peer_runs[name].append(bench_peers.run_peer(peer, batch_texts))
                        order.append({"target_s": target, "batch": batch, "repeat": r, "mode": name})
                summary = {m: _summary(rs) for m, rs in runs.items()}
                audio = runs[PARALLEL][0]["audio_s"]
                par, ser = summary[PARALLEL]["median_s"], summary[SERIAL]["median_s"]
                cells.append({
                    "target_s": target, "batch": batch, "audio_s": round(audio / batch, 3),
                    "audio_s_total": round(audio, 3), "texts": batch_texts, "modes": summary,
                    "serial_over_parallel": round(ser / par, 3) if par > 0 else None,
                })
                if peers:
                    walls = [r["wall_s"] for r in runs[PARALLEL]]
                    cells[-1]["peers"] = {name: bench_peers.summarize(rs, par, ser, summary[PARALLEL]["rtf"], walls)
                                          for name, rs in peer_runs.items()}
                log(f"{target:g} s x {batch}: audio {audio / batch:.2f} s, parallel {par:.3f} s, serial {ser:.3f} s"
                    + "".join(f", {n} {p['median_s']:.3f} s" for n, p in cells[-1].get("peers", {}).items()))
    finally:
        tts.codec = inner
    return {
        "voice": voice_name, "codec": inner.name, "sample_rate": tts.sample_rate, "frame_rate": tts.frame_rate,
        "speakers": list(tts.voices), "speaker": tts.voices[spk] if spk < len(tts.voices) else spk,
        "lengths": list(cfg.lengths), "batches": list(cfg.batches), "repeats": cfg.repeats, "seed": cfg.seed,
        "steps": cfg.steps, "auto": cfg.auto, "rewarm": cfg.rewarm, "torch_threads": torch.get_num_threads(),
        "precision": tts.precision,
        "cost_model": tts.cost.source, "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "python": platform.python_version(), "torch": torch.__version__,
        "cells": cells, "order": order, "total_wall_s": round(time.perf_counter() - t_start, 2),
    }

