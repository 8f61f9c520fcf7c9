"""The dtype a loaded voice computes in: float32, or bfloat16 for its per-call networks where the CPU has bfloat16
arithmetic of its own.

Why: a synthesis of 5 s spends about half its time in the masked model's passes (``audiopd bench --stages``), most
of it in GEMMs; on a CPU with AVX512-BF16 or AMX, oneDNN runs those GEMMs in bfloat16 at up to twice float32's
rate. On this project's 2-core machine that made whole syntheses 1.0-1.15x faster at unchanged Whisper WER and
DistillMOS (recipes/voice/README.md, "bfloat16 where the CPU computes it"). A CPU without those instructions
emulates bfloat16 more slowly than float32, so ``"auto"`` asks the CPU first.

Only the parts that run once per call at frame rate change dtype: the masked model (body and heads) and the mel
refiner's body. The conditioner (durations), the serial decoder's incremental steps and everything after the
refiner's residual stay float32; logits come back as float32 before any softmax or sampling. Training steps always
run in float32; what goes through ``audiopd.load`` (the mel refiner's training pairs among it) decodes as users do.
"""

from __future__ import annotations

import copy
import sys
from functools import lru_cache
from pathlib import Path

import torch

from audiopd.synthesis.config import PRECISIONS

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
# /proc/cpuinfo's names of the instructions that do bfloat16 arithmetic natively (x86: AVX512-BF16, AMX).
_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@lru_cache(maxsize=1)
def native_bfloat16() -> bool:
    """Whether this CPU computes bfloat16 natively (Linux x86: AVX512-BF16 or AMX in /proc/cpuinfo). False where
    that cannot be told (other systems): float32 is then the safe choice, never slower than an emulation."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return bool(_BF16_FLAGS & set(line.split(":", 1)[-1].split()))
    return False


def resolve_precision(precision: str) -> torch.dtype:
    """``"auto"`` (bfloat16 where :func:`native_bfloat16`, else float32), ``"float32"`` or ``"bfloat16"`` -> dtype."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "auto":
        return torch.bfloat16 if native_bfloat16() else torch.float32
    return _DTYPES[precision]


def precision_name(dtype: torch.dtype) -> str:
    """The name a report gives ``dtype`` (``"float32"`` or ``"bfloat16"``)."""
    return {v: k for k, v in _DTYPES.items()}[dtype]


def for_inference(model, dtype: torch.dtype):
    """``model`` itself for float32; else a copy whose masked model and mel refiner (if any) hold ``dtype`` weights.
    The caller's model is never changed (a test or a trainer may hold it)."""
    if dtype == torch.float32:
        return model
    if dtype not in _DTYPES.values():
        raise ValueError(f"unsupported compute dtype {dtype}")
    model = copy.deepcopy(model)
    model.masked.to(dtype)
    refiner = getattr(model, "refiner", None)
    if refiner is not None:
        refiner.to(dtype)
    return model
