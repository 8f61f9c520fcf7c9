"""audiopd.lite.decode against the torch parallel decoder, through an adapter that runs a tiny torch voice behind the
NumPy model interface (the NumPy voice has its own tests)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch

from audiopd.decoding.config import ParallelConfig, SamplingConfig
from audiopd.decoding.parallel import decode_parallel as torch_decode
from audiopd.decoding.schedules import annealed_temperature, masked_after_step
from audiopd.lite.decode import LiteDecodeResult, decode_parallel, fine_level_groups, sample_rows
from audiopd.model.config import ModelConfig
from audiopd.model.encoder import FrameCondition
from audiopd.model.voice import VoiceModel

Q, CARD, FRAMES = 4, 128, 60
GREEDY = ParallelConfig(sampling=SamplingConfig(temperature=0.0), choice_noise=0.0)
# The shipped parallel settings (SynthesisConfig, with a voice's 2 level-0 steps).
SHIPPED = ParallelConfig(steps=2, fine_passes=1, attention_window=64)


def tiny_voice(sharpness: float) -> VoiceModel:
    """d 32, 2 masked layers, 4 levels x 128 tokens; ``sharpness`` scales the heads (1: near-uniform predictions,
    3 and 5: a fifth to most of the frames confident), so both the confident-commit and the low-confidence paths
    run. Code embeddings are scaled down and the condition up: at random init the four [MASK] embeddings swamp
    the condition, and every frame would predict the same token."""
    torch.manual_seed(0)
    cfg = ModelConfig(num_symbols=20, num_codebooks=Q, cardinality=CARD, num_speakers=2, d_model=32, n_heads=2,
                      ff_mult=2, dropout=0.0, encoder_layers=1, duration_channels=32, masked_layers=2,
                      serial_layers=1, max_frames=256)
    voice = VoiceModel(cfg).eval()
    with torch.no_grad():
        voice.masked.head_weight.mul_(sharpness)
        voice.masked.code_embed.weight.mul_(0.3)
        voice.masked.cond_proj.weight.mul_(3.0)
    return voice


def condition(voice: VoiceModel, frames: int = FRAMES) -> FrameCondition:
    """One item of exactly ``frames`` frames (3 per phoneme)."""
    k = (frames + 2) // 3
    gen = torch.Generator().manual_seed(1)
    ph = torch.randint(1, 20, (1, k), generator=gen)
    dur = torch.full((1, k), 3)
    dur[0, -1] = frames - 3 * (k - 1)
    return voice.condition(ph, torch.tensor([1]), durations=dur)


class TorchAdapter:
    """The NumPy masked-model interface over a torch VoiceModel; records each call's (codes, rows, logits)."""

    def __init__(self, voice: VoiceModel) -> None:
        self.masked = voice.masked
        self.num_codebooks, self.cardinality, self.mask_id = voice.num_codebooks, voice.cardinality, voice.mask_id
        self.calls: list[tuple[np.ndarray, np.ndarray | None, np.ndarray]] = []

    def _cond(self, frames: np.ndarray) -> FrameCondition:
        t = frames.shape[0]
        return FrameCondition(frames=torch.from_numpy(frames)[None], frame_mask=torch.ones(1, t, dtype=torch.bool),
                              durations=torch.ones(1, t, dtype=torch.long), lengths=torch.tensor([t]))

    @torch.no_grad()
    def logits(self, codes: np.ndarray, frames: np.ndarray, levels: list[int], window: int = 0,
               rows: np.ndarray | None = None) -> np.ndarray:
        c = torch.from_numpy(codes)[None]
        sel = None if rows is None else torch.from_numpy(rows)[None]
        out = self.masked(c, self._cond(frames), levels, window, frames=sel)
        out = (out[0] if rows is None else out).numpy()
        self.calls.append((codes.copy(), None if rows is None else rows.copy(), out))
        return out

    @torch.no_grad()
    def greedy(self, codes: np.ndarray, frames: np.ndarray, levels: list[int], window: int = 0) -> np.ndarray:
        return self.masked.greedy(torch.from_numpy(codes)[None], self._cond(frames), levels, window)[0].numpy()


@pytest.fixture(scope="module", params=[1.0, 3.0, 5.0], ids=["flat", "mixed", "sharp"])
def setup(request) -> tuple[VoiceModel, FrameCondition]:
    voice = tiny_voice(request.param)
    return voice, condition(voice)


def lite(voice: VoiceModel, cond: FrameCondition, cfg: ParallelConfig, seed: int = 0,
         adapter: TorchAdapter | None = None) -> LiteDecodeResult:
    return decode_parallel(adapter or TorchAdapter(voice), cond.frames[0].numpy(), cfg, np.random.default_rng(seed))


@pytest.mark.parametrize("fine_passes,window", [(None, 0), (1, 16)])
@pytest.mark.parametrize("adaptive", [True, False])
@pytest.mark.parametrize("steps", [1, 2, 3, 8])
def test_greedy_matches_torch(setup, steps: int, adaptive: bool, fine_passes: int | None, window: int) -> None:
    voice, cond = setup
    cfg = replace(GREEDY, steps=steps, adaptive=adaptive, fine_passes=fine_passes, attention_window=window)
    ref = torch_decode(voice, cond, cfg, generator=torch.Generator().manual_seed(0))
    got = lite(voice, cond, cfg)
    assert got.codes.dtype == np.int64 and got.confidence.dtype == np.float32
    np.testing.assert_array_equal(got.codes, ref.codes[0].numpy())
    np.testing.assert_allclose(got.confidence, ref.confidence[0].numpy(), atol=1e-5)
    assert got.forward_passes == ref.stats.forward_passes
    assert got.steps == ref.stats.steps_per_level[0]
    assert got.stopped_early == ref.stats.stopped_early
    np.testing.assert_allclose(got.level0_trace, ref.stats.level0_trace, atol=1e-9)


def test_adaptive_paths_are_exercised() -> None:
    # The comparison above means little unless adaptive decoding commits confident tokens early and stops on
    # convergence for some of its cases.
    voice = tiny_voice(3.0)
    cond = condition(voice)
    got = lite(voice, cond, replace(GREEDY, steps=8))
    assert got.stopped_early and got.steps < 8
    assert got.forward_passes == got.steps + Q - 1
    assert got.level0_trace[0] < 0.9  # a tenth of the frames or more committed as confident on the first pass


def test_same_seed_same_codes(setup) -> None:
    voice, cond = setup
    for cfg in (SHIPPED, replace(SHIPPED, steps=4, fine_sampling=SamplingConfig(temperature=0.7, top_k=20))):
        a, b, c = lite(voice, cond, cfg, 5), lite(voice, cond, cfg, 5), lite(voice, cond, cfg, 6)
        np.testing.assert_array_equal(a.codes, b.codes)
        np.testing.assert_array_equal(a.confidence, b.confidence)
        assert a.level0_trace == b.level0_trace
        assert not np.array_equal(a.codes, c.codes)
        assert ((a.codes >= 0) & (a.codes < CARD)).all()
        assert ((a.confidence > 0) & (a.confidence <= 1)).all()
        assert a.forward_passes == a.steps + len(fine_level_groups(Q, cfg.fine_passes))


def _nucleus(logits: np.ndarray, temp: float, top_k: int, top_p: float) -> np.ndarray:
    """Bool [N, C]: each row's tokens that filter_logits keeps (computed plainly, in float64)."""
    x = logits.astype(np.float64) / temp
    if 0 < top_k < x.shape[-1]:
        kth = np.sort(x, -1)[:, -top_k]
        x = np.where(x < kth[:, None], -np.inf, x)
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    order = np.argsort(-p, -1)
    ps = np.take_along_axis(p, order, -1)
    keep_sorted = (np.cumsum(ps, -1) - ps) < top_p + 1e-6  # float32 rounding in the decoder
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, -1)
    return keep & (p > 0)


@pytest.mark.parametrize("top_k,top_p", [(0, 0.9), (0, 0.5), (5, 1.0), (20, 0.8)])
def test_drawn_tokens_lie_in_the_nucleus(setup, top_k: int, top_p: float) -> None:
    voice, cond = setup
    steps = 4
    cfg = ParallelConfig(steps=steps, adaptive=False, sampling=SamplingConfig(temperature=1.0, top_k=top_k,
                                                                              top_p=top_p), final_temperature=0.4)
    adapter = TorchAdapter(voice)
    got = lite(voice, cond, cfg, adapter=adapter)
    level0 = [c for c in adapter.calls if c[1] is not None]
    assert len(level0) == steps
    for k, (_, rows, logits) in enumerate(level0, start=1):
        after = level0[k][1] if k < steps else np.zeros_like(rows)
        committed = (rows & ~after)[rows]  # among this step's rows, those committed by it
        tokens = got.codes[0][rows][committed]
        keep = _nucleus(logits[:, 0][committed], annealed_temperature(k, steps, 1.0, 0.4), top_k, top_p)
        assert keep[np.arange(len(tokens)), tokens].all(), f"step {k} drew outside the nucleus"


@pytest.mark.parametrize("steps", [2, 4, 8])
def test_masked_counts_follow_the_schedule(setup, steps: int) -> None:
    voice, cond = setup
    adapter = TorchAdapter(voice)
    got = lite(voice, cond, replace(SHIPPED, steps=steps, adaptive=False, attention_window=0), adapter=adapter)
    masked = [int(rows.sum()) for _, rows, _ in adapter.calls if rows is not None]
    assert masked == [masked_after_step(k, steps, FRAMES) for k in range(steps)]
    for (codes, rows, _), n in zip(adapter.calls, masked):  # the masked frames are exactly the rows asked for
        assert (codes[0] == voice.mask_id).sum() == n and (codes[0][rows] == voice.mask_id).all()
        assert (codes[1:] == voice.mask_id).all()
    assert got.steps == steps and not got.stopped_early
    assert got.level0_trace[-1] == float((got.confidence < SHIPPED.confident_prob).sum()) / FRAMES


@pytest.mark.parametrize("top_k,top_p", [(0, 0.9), (0, 1.0), (7, 1.0), (30, 0.7)])
def test_sample_rows_draws_from_the_filtered_distribution(top_k: int, top_p: float) -> None:
    # One peaked row (nucleus inside the 64-token cut) and one flat row (past it: the full sort).
    rng = np.random.default_rng(0)
    base = np.stack([rng.normal(size=CARD) * 4.0, rng.normal(size=CARD) * 0.3]).astype(np.float32)
    n = 20000
    tokens = sample_rows(np.repeat(base, n, axis=0), SamplingConfig(top_k=top_k, top_p=top_p), rng,
                         temperature=0.8).reshape(2, n)
    for row, drawn in zip(base, tokens):
        keep = _nucleus(row[None], 0.8, top_k, top_p)[0]
        p = np.where(keep, np.exp(row.astype(np.float64) / 0.8 - row.max() / 0.8), 0.0)
        p /= p.sum()
        freq = np.bincount(drawn, minlength=CARD) / n
        assert np.abs(freq - p).max() < 0.015
        assert keep[drawn].all()
    greedy = sample_rows(base, SamplingConfig(temperature=0.0), rng)
    np.testing.assert_array_equal(greedy, base.argmax(-1))


@pytest.mark.parametrize("cfg", [replace(SHIPPED, remask=True),
                                 replace(SHIPPED, sampling=SamplingConfig(top_p=0.9, ras_window=10))])
def test_unported_settings_raise(cfg: ParallelConfig) -> None:
    voice = tiny_voice(1.0)
    with pytest.raises(NotImplementedError, match="torch decoder"):
        lite(voice, condition(voice, 12), cfg)


def test_import_stays_torch_free() -> None:
    code = "import sys, audiopd.lite.decode; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
