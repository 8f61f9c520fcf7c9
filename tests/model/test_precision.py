"""The per-call dtype of a loaded voice (audiopd.model.precision): what ``auto`` picks, what a bfloat16 copy casts
and leaves alone, and that its outputs stay float32 and close to float32's."""

from __future__ import annotations

import copy

import pytest
import torch
from model_fixtures import TINY, tiny_voice
from voice_fixtures import tiny_voice as voice_with_speakers

from audiopd.model import precision
from audiopd.model.refiner import MelRefiner, RefinerConfig


def _cond(model):
    ph = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 0]])
    dur = torch.tensor([[3, 2, 4, 1], [2, 2, 3, 0]])
    return model.condition(ph, torch.arange(2), durations=dur)


def test_resolve_precision(monkeypatch: pytest.MonkeyPatch) -> None:
    assert precision.resolve_precision("float32") == torch.float32
    assert precision.resolve_precision("bfloat16") == torch.bfloat16
    monkeypatch.setattr(precision, "native_bfloat16", lambda: False)
    assert precision.resolve_precision("auto") == torch.float32
    monkeypatch.setattr(precision, "native_bfloat16", lambda: True)
    assert precision.resolve_precision("auto") == torch.bfloat16
    with pytest.raises(ValueError, match="precision must be one of"):
        precision.resolve_precision("float16")
    assert precision.precision_name(torch.bfloat16) == "bfloat16"


@pytest.fixture
def fresh_cpu_answer():
    """native_bfloat16 caches its answer for the process: start and leave each test with none cached."""
    precision.native_bfloat16.cache_clear()
    yield
    precision.native_bfloat16.cache_clear()


def test_native_bfloat16_reads_the_cpu_flags(monkeypatch: pytest.MonkeyPatch, tmp_path, fresh_cpu_answer) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    monkeypatch.setattr(precision.sys, "platform", "linux")
    monkeypatch.setattr(precision, "Path", lambda _: cpuinfo)
    for flags, want in (("fpu avx2 avx512f avx512_bf16 avx512_vnni", True), ("fpu avx2 amx_bf16", True),
                        ("fpu avx2 avx512f avx512bw", False)):
        cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        precision.native_bfloat16.cache_clear()
        assert precision.native_bfloat16() is want
    cpuinfo.unlink()  # unreadable: the safe answer
    precision.native_bfloat16.cache_clear()
    assert precision.native_bfloat16() is False


def test_for_inference_casts_a_copy_of_the_per_call_networks_only() -> None:
    model = voice_with_speakers()
    model.attach_refiner(MelRefiner(RefinerConfig(dim=8, layers=1, kernel=3, voices=model.info.voices)))
    assert precision.for_inference(model, torch.float32) is model
    fast = precision.for_inference(model, torch.bfloat16)
    assert fast is not model
    assert {p.dtype for p in fast.masked.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in fast.refiner.parameters()} == {torch.bfloat16}
    # durations and the serial decoder's incremental steps stay float32, and the caller's model is untouched
    assert {p.dtype for p in fast.conditioner.parameters()} == {torch.float32}
    assert {p.dtype for p in fast.serial.parameters()} == {torch.float32}
    for module in (model.masked, model.refiner, model.conditioner, model.serial):
        assert {p.dtype for p in module.parameters()} == {torch.float32}


def test_a_bfloat16_masked_model_returns_float32_logits_close_to_float32s() -> None:
    model = tiny_voice()
    fast = precision.for_inference(model, torch.bfloat16)
    cond = _cond(model)
    codes = torch.randint(0, TINY.cardinality, (2, TINY.num_codebooks, cond.num_frames))
    with torch.no_grad():
        want = model.masked(codes, cond, [0, 1])
        got = fast.masked(codes, cond, [0, 1])
        frames = cond.frame_mask
        rows = fast.masked(codes, cond, [1], frames=frames)
        greedy = fast.masked.greedy(codes, cond, [1, 2, 3])
    assert got.dtype == torch.float32 and rows.dtype == torch.float32
    assert got.shape == want.shape
    # bfloat16 keeps 8 bits of mantissa: logits of a few units move by a few hundredths, not more
    assert float((got - want).abs().max()) < 0.1
    with torch.no_grad():
        level1 = fast.masked(codes, cond, [1])
    torch.testing.assert_close(rows, level1.transpose(1, 2)[frames], rtol=0, atol=0)
    with torch.no_grad():
        exact = fast.masked(codes, cond, [1, 2, 3]).argmax(-1)
    assert torch.equal(greedy, exact)


def test_a_bfloat16_refiner_keeps_its_residual_in_float32() -> None:
    torch.manual_seed(0)
    refiner = MelRefiner(RefinerConfig(dim=16, layers=2, kernel=3, voices=("a", "b"))).eval()
    with torch.no_grad():  # an untrained refiner's output layer starts at zero; give it a correction to round
        refiner.out.weight.normal_(0.0, 0.05)
    mel = torch.randn(1, 40, 80) * 3 - 6
    fast = copy.deepcopy(refiner).to(torch.bfloat16)
    with torch.no_grad():
        want = refiner(mel, torch.tensor([1]))
        got = fast(mel, torch.tensor([1]))
    assert got.dtype == torch.float32
    # the mel itself passes through unrounded: only the correction carries bfloat16's error, far below what
    # rounding the mel (values of -15..3 nats) to bfloat16 would cost
    err = float((got - want).abs().max())
    assert 0 < err < 0.05
    assert err < float((mel.bfloat16().float() - mel).abs().max())
