"""A voice's mel refiner: the token mel of the voice's own codes -> the mel its teacher's codes would give.

A masked model samples each fine level of a frame on its own (right ~2-3% of the time at a finer level,
recipes/voice/README.md), so the codebook sum jumps from frame to frame where the teacher's tokens move smoothly;
the fast decoder then renders the jumps. The refiner is a small residual stack of 1-D convolutions over time,
trained with an L1 loss on ground-truth-aligned pairs: the teacher's durations and level 0 with the model's own
fine levels as input, the teacher's tokens as the target (Tacotron 2 trained its vocoder on such ground-truth-aligned
predictions, Shen et al. 2018, sec. 3.2; here the correction sits on the mel, ahead of a decoder shared by every
voice). It ships beside the voice it was trained on (``refiner.yaml`` + ``refiner.safetensors``, both in the voice's
SHA256SUMS) and is applied by the codec view of each speaker (``Codec.refined``, ``Synthesizer.codec_for``).

Artifact files (``format_version`` 1)::

    refiner.yaml         format_version, kind: mel_refiner, n_mels, dim, layers, kernel, voices, voice_sha256
                         (model.safetensors' digest: a refiner learns one set of weights' mistakes), training
    refiner.safetensors  the weights (float16 or float32)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import yaml
from torch import Tensor, nn

from audiopd.config import to_dict
from audiopd.errors import ArtifactError
from audiopd.fileio import atomic_path, write_text_atomic
from audiopd.model.refiner_config import (  # noqa: F401  (torch-free, re-exported)
    REFINER_CONFIG,
    REFINER_FORMAT_VERSION,
    REFINER_WEIGHTS,
    RefinerConfig,
    read_refiner_config,
    refiner_input,
)



class MelRefiner(nn.Module):
    """Log-mel ``[B, T, n_mels]`` + speaker ``[B]`` -> refined log-mel, the input plus a learnt correction
    (zero at initialisation, so an untrained refiner changes nothing)."""

    def __init__(self, cfg: RefinerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        pad = cfg.kernel // 2
        self.inp = nn.Conv1d(cfg.n_mels, cfg.dim, cfg.kernel, padding=pad)
        self.speaker = nn.Embedding(len(cfg.voices), cfg.dim)
        self.body = nn.ModuleList([nn.Conv1d(cfg.dim, cfg.dim, cfg.kernel, padding=pad) for _ in range(cfg.layers)])
        self.norms = nn.ModuleList([nn.GroupNorm(1, cfg.dim) for _ in range(cfg.layers)])
        self.out = nn.Conv1d(cfg.dim, cfg.n_mels, cfg.kernel, padding=pad)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, mel: Tensor, speakers: Tensor) -> Tensor:
        x = mel.transpose(1, 2)
        # A bfloat16 copy (model.precision) runs its body in bfloat16; the residual stays in the input's float32,
        # so rounding touches only the correction, not the mel it corrects.
        h = self.inp(x.to(self.inp.weight.dtype)) + self.speaker(speakers)[:, :, None]
        for conv, norm in zip(self.body, self.norms):
            h = h + conv(nn.functional.gelu(norm(h)))
        return (x + self.out(nn.functional.gelu(h)).to(x.dtype)).transpose(1, 2)

    @torch.no_grad()
    def refine(self, mel: np.ndarray, speaker: int) -> np.ndarray:
        """One log-mel ``[T, n_mels]`` of ``speaker`` (an index of ``cfg.voices``) -> float32 ``[T, n_mels]``."""
        m = refiner_input(mel, self.cfg, speaker)
        if m.shape[0] == 0:
            return m
        out = self(torch.from_numpy(m)[None], torch.tensor([speaker]))[0]
        return np.ascontiguousarray(out.numpy(), dtype=np.float32)

    def for_speaker(self, speaker: int):
        """``mel -> refined mel`` for one speaker: what a codec view applies (``Codec.refined``)."""
        def apply(mel: np.ndarray) -> np.ndarray:
            return self.refine(mel, speaker)

        return apply


def save_refiner(refiner: MelRefiner, directory: str | Path, *, dtype: str = "float16") -> Path:
    """Write ``refiner.yaml`` and ``refiner.safetensors`` into a voice directory (the caller rewrites SHA256SUMS)."""
    from safetensors.torch import save_file

    wanted = {"float16": torch.float16, "float32": torch.float32}
    if dtype not in wanted:
        raise ArtifactError(f"refiner weight dtype {dtype!r} not supported (float16 or float32)")
    directory = Path(directory)
    state = {k: v.detach().to(wanted[dtype]).contiguous() for k, v in refiner.state_dict().items()}
    with atomic_path(directory / REFINER_WEIGHTS) as tmp:
        save_file(state, str(tmp), metadata={"format_version": str(REFINER_FORMAT_VERSION)})
    write_text_atomic(directory / REFINER_CONFIG, yaml.safe_dump(to_dict(refiner.cfg), sort_keys=False))
    return directory


def load_refiner(directory: str | Path, *, voices: tuple[str, ...] | None, sums: dict[str, str],
                 own_weights: bool = True) -> MelRefiner | None:
    """The refiner shipped in voice ``directory`` (None when it has none). ``sums``: file name -> sha256 from its
    SHA256SUMS (already verified); both refiner files must be listed, its speakers must be ``voices`` (None: any,
    for a starting point) and, with ``own_weights``, its ``voice_sha256`` the listed digest of model.safetensors
    (without: a starting point for training another voice's, ``python -m audiopd.train.refiner --init-from``)."""
    from safetensors.torch import load_file

    directory = Path(directory)
    cfg = read_refiner_config(directory, voices=voices, sums=sums, own_weights=own_weights)
    if cfg is None:
        return None
    refiner = MelRefiner(cfg)
    try:
        state = load_file(str(directory / REFINER_WEIGHTS))
        refiner.load_state_dict({k: v.float() for k, v in state.items()})
    except (RuntimeError, OSError, ValueError) as exc:
        raise ArtifactError(f"{directory}: {REFINER_WEIGHTS} does not match {REFINER_CONFIG} "
                            f"({str(exc).splitlines()[0]})") from None
    return refiner.eval()

