"""The shared sampler: greedy, top-k, top-p, determinism, repetition-aware fallback."""

from __future__ import annotations

import pytest
import torch

from audiopd.decoding.sampling import SamplingConfig, filter_logits, logsumexp, sample, token_probs


def test_greedy_is_argmax() -> None:
    logits = torch.randn(5, 7, 50)
    assert torch.equal(sample(logits, SamplingConfig(temperature=0.0)), logits.argmax(-1))


@pytest.mark.parametrize("k", [1, 3, 10])
def test_top_k_keeps_exactly_k(k: int) -> None:
    logits = torch.randn(8, 40)
    out = filter_logits(logits, top_k=k)
    assert ((out > float("-inf")).sum(-1) == k).all()
    kept = out.argsort(-1, descending=True)[:, :k].sort(-1).values
    assert torch.equal(kept, logits.topk(k, -1).indices.sort(-1).values)


def test_top_p_is_smallest_nucleus() -> None:
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.05, 0.15, 0.3, 0.5]])
    out = filter_logits(probs.log(), top_p=0.8)
    assert torch.equal(out > float("-inf"), torch.tensor([[True, True, False, False], [False, False, True, True]]))
    out = filter_logits(probs.log(), top_p=0.81)
    assert (out > float("-inf")).sum(-1).tolist() == [3, 3]
    # The top token always survives, even with a tiny p.
    assert (filter_logits(probs.log(), top_p=1e-6) > float("-inf")).sum(-1).tolist() == [1, 1]


@pytest.mark.parametrize("scale", [0.1, 1.0, 8.0])  # flat rows need the full-sort path, peaked ones don't
def test_top_p_matches_reference_full_sort(scale: float) -> None:
    logits = torch.randn(50, 300) * scale
    ref_p, order = logits.softmax(-1).sort(-1, descending=True)
    keep_sorted = (ref_p.cumsum(-1) - ref_p) < 0.9
    ref = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    assert torch.equal(filter_logits(logits, top_p=0.9) > float("-inf"), ref)


def test_samples_stay_inside_filter() -> None:
    logits = torch.randn(200, 30)
    gen = torch.Generator().manual_seed(0)
    tok = sample(logits, SamplingConfig(temperature=1.0, top_k=3), gen)
    top3 = logits.topk(3, -1).indices
    assert (top3 == tok[:, None]).any(-1).all()


def test_deterministic_for_seed() -> None:
    logits = torch.randn(64, 100)
    cfg = SamplingConfig(temperature=1.0, top_p=0.9)
    a = sample(logits, cfg, torch.Generator().manual_seed(3))
    b = sample(logits, cfg, torch.Generator().manual_seed(3))
    c = sample(logits, cfg, torch.Generator().manual_seed(4))
    assert torch.equal(a, b) and not torch.equal(a, c)


@pytest.mark.parametrize("top_k", [0, 5, 40])
@pytest.mark.parametrize("scale", [0.3, 6.0])  # flat rows fall back to the full filter, peaked ones stay in the cut
def test_nucleus_draws_match_the_filtered_distribution(scale: float, top_k: int) -> None:
    # Many rows (the cut path), each a copy of one row, so the draws estimate the filtered distribution.
    row = torch.randn(1, 80, generator=torch.Generator().manual_seed(1)) * scale
    logits = row.expand(30000, 80)
    tok = sample(logits, SamplingConfig(temperature=1.0, top_k=top_k, top_p=0.8), torch.Generator().manual_seed(0))
    want = filter_logits(row, top_k=top_k, top_p=0.8).softmax(-1)[0]
    freq = torch.bincount(tok, minlength=80).float() / len(tok)
    assert (freq[want == 0] == 0).all()  # nothing outside the filter
    assert torch.allclose(freq, want, atol=0.01)


def test_cut_and_full_paths_mix_rows() -> None:
    # One peaked row (nucleus inside the cut) and one flat row (nucleus wider than 64) in the same call.
    peaked = torch.full((200,), -20.0)
    peaked[7] = 0.0
    flat = torch.zeros(200)
    logits = torch.stack([peaked, flat]).repeat(20, 1)
    tok = sample(logits, SamplingConfig(temperature=1.0, top_p=0.9), torch.Generator().manual_seed(0))
    assert (tok[0::2] == 7).all()
    assert len(torch.unique(tok[1::2])) > 10


def test_matches_distribution() -> None:
    probs = torch.tensor([0.6, 0.3, 0.1])
    logits = probs.log().expand(20000, 3)
    tok = sample(logits, SamplingConfig(temperature=1.0), torch.Generator().manual_seed(0))
    freq = torch.bincount(tok, minlength=3).float() / 20000
    assert torch.allclose(freq, probs, atol=0.02)


def test_temperature_sharpens() -> None:
    logits = torch.tensor([1.0, 0.0]).expand(20000, 2)
    gen = torch.Generator().manual_seed(0)
    hot = (sample(logits, SamplingConfig(temperature=2.0), gen) == 0).float().mean()
    cold = (sample(logits, SamplingConfig(temperature=0.3), gen) == 0).float().mean()
    assert cold > 0.9 > hot


def test_repetition_aware_fallback() -> None:
    # Token 5 has half the mass; top_k=1 would always pick it.
    probs = torch.full((4000, 10), 0.5 / 9)
    probs[:, 5] = 0.5
    logits = probs.log()
    cfg_plain = SamplingConfig(temperature=1.0, top_k=1)
    cfg_ras = SamplingConfig(temperature=1.0, top_k=1, ras_window=10, ras_threshold=0.1)
    stuck = torch.full((4000, 10), 5)
    fresh = torch.arange(10).expand(4000, 10).remainder(5)  # 0..4: never 5
    gen = torch.Generator().manual_seed(0)
    assert (sample(logits, cfg_plain, gen, history=stuck) == 5).all()
    assert (sample(logits, cfg_ras, gen, history=fresh) == 5).all()
    fell_back = sample(logits, cfg_ras, gen, history=stuck)
    # Fallback samples the full distribution: about half the draws are still 5, the rest spread out.
    share = (fell_back == 5).float().mean()
    assert 0.45 < share < 0.55
    assert len(torch.unique(fell_back)) == 10


def test_ras_threshold_counts_the_window() -> None:
    logits = torch.zeros(1, 4)
    logits[0, 2] = 50.0  # almost surely 2 even in the fallback
    cfg = SamplingConfig(temperature=0.0, ras_window=4, ras_threshold=0.5)
    hist = torch.tensor([[-1, 2, 2, 0]])  # ratio 0.5, not above the threshold
    assert sample(logits, cfg, torch.Generator().manual_seed(0), history=hist).item() == 2


@pytest.mark.parametrize("scale", [1.0, 25.0, 400.0])
def test_logsumexp_equals_torch_where_terms_underflow(scale: float) -> None:
    # Spread rows (a low temperature) put most shifted values below exp's floor; the floor must not move the sum.
    g = torch.Generator().manual_seed(3)
    x = torch.randn(64, 1024, generator=g) * scale
    x[0] = -1e4  # a constant row far below 0
    x[1, 7] = 3e4  # one value far above the rest
    assert torch.equal(logsumexp(x), x.logsumexp(-1))
    assert torch.allclose(logsumexp(x[:, :16]), x[:, :16].logsumexp(-1), rtol=0, atol=1e-5)


def test_token_probs() -> None:
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0]])
    assert token_probs(logits, torch.tensor([1])).item() == pytest.approx(0.25)


@pytest.mark.parametrize("bad", [dict(temperature=-1.0), dict(top_k=-2), dict(top_p=0.0), dict(top_p=1.5),
                                 dict(ras_window=-1)])
def test_config_validation(bad: dict) -> None:
    with pytest.raises(ValueError):
        SamplingConfig(**bad).validate()
