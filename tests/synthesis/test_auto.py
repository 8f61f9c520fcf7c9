"""The auto ladder: stage plans (pure), span masks, verdict handling, and escalation on a tiny model.

The checker here is a scripted stub, used only to force failures: it lets the tests assert the exact
escalation sequence, that span repair keeps every token outside the flagged spans, and that the best
attempt is delivered.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from audiopd.codec.fixture import make_fixture_codec
from audiopd.decoding.parallel import ParallelConfig
from audiopd.decoding.serial import SerialConfig
from audiopd.model.config import ModelConfig
from audiopd.model.voice import VoiceModel
from audiopd.synthesis.auto import (
    FULL,
    REPAIR,
    AutoConfig,
    Item,
    Renderer,
    Stage,
    plan_stages,
    select,
    span_frames,
)
from audiopd.synthesis.cost import PARALLEL, SERIAL, CostModel
from audiopd.synthesis.report import verdict_to_dict

P, S = PARALLEL, SERIAL
# No escalation budget: these tests script the whole ladder on a model whose passes take microseconds.
AUTO = AutoConfig(first_steps=4, escalate_steps=12, escalation_budget=None)


@pytest.mark.parametrize(
    "mode, first, steps, auto, checking, expected",
    [
        ("parallel", P, None, AUTO, False, [Stage(P, FULL, 16)]),
        ("parallel", S, 5, AUTO, True, [Stage(P, FULL, 5)]),  # explicit modes never escalate
        ("serial", P, None, AUTO, True, [Stage(S, FULL, None)]),
        ("auto", P, None, AUTO, True,
         [Stage(P, FULL, 4), Stage(P, REPAIR, 4), Stage(P, FULL, 12), Stage(S, FULL, None)]),
        ("auto", P, 20, AUTO, True,  # a user K above escalate_steps: escalation never lowers K
         [Stage(P, FULL, 20), Stage(P, REPAIR, 20), Stage(P, FULL, 20), Stage(S, FULL, None)]),
        ("auto", S, None, AUTO, True, [Stage(S, FULL, None), Stage(P, REPAIR, 4), Stage(P, FULL, 12)]),
        ("auto", P, None, AutoConfig(first_steps=4, repair=False, serial_fallback=False), True,
         [Stage(P, FULL, 4), Stage(P, FULL, 16)]),
        ("auto", P, None, AUTO, False, [Stage(P, FULL, 4)]),  # nothing to escalate on without a checker
    ],
)
def test_plan_stages(mode, first, steps, auto, checking, expected) -> None:
    assert plan_stages(mode, first, steps=steps, auto=auto, parallel_steps=16, checking=checking) == expected


def test_plan_rejects_unknown_mode() -> None:
    with pytest.raises(ValueError):
        plan_stages("fast", P, steps=None, auto=AUTO, parallel_steps=16, checking=True)


def test_span_frames_widens_and_clips() -> None:
    m = span_frames([(0.10, 0.20), (0.95, 2.0)], 100.0, 100, margin_s=0.02)
    assert np.flatnonzero(m).tolist() == list(range(8, 22)) + list(range(93, 100))
    assert not span_frames([], 100.0, 10, 0.1).any()


def test_verdict_to_dict_accepts_objects_and_mappings() -> None:
    @dataclass(frozen=True)
    class V:
        passed: bool
        score: float
        reasons: list = field(default_factory=list)
        bad_spans: list = field(default_factory=list)

    d = verdict_to_dict(V(False, np.float32(0.25), ["gap"], [(np.float64(0.1), 0.2)]))
    assert d == {"passed": False, "score": 0.25, "reasons": ["gap"], "bad_spans": [(0.1, 0.2)]}
    assert verdict_to_dict({"passed": 1, "score": 1})["bad_spans"] == []
    with pytest.raises(TypeError):
        verdict_to_dict("ok")


# ----------------------------------------------------------------------------------- tiny engine
NSYM, Q, CARD = 12, 4, 64  # fixture codec: 4 levels of 64 codes at 100 frames/s


@pytest.fixture(scope="module")
def model() -> VoiceModel:
    torch.manual_seed(0)
    cfg = ModelConfig(num_symbols=NSYM, num_codebooks=Q, cardinality=CARD, num_speakers=1, d_model=32, n_heads=2,
                      ff_mult=2, dropout=0.0, encoder_layers=1, duration_channels=16, masked_layers=2,
                      serial_layers=2, max_frames=256)
    return VoiceModel(cfg).eval()


class ScriptedChecker:
    """Stub: returns the scripted (passed, score, bad_spans) per call, and records what it saw."""

    def __init__(self, script: list[tuple[bool, float, list[tuple[float, float]]]]) -> None:
        self.script, self.calls = list(script), []

    def __call__(self, audio, sample_rate, text, *, durations_s, tokens, confidence, token_rate):
        self.calls.append({"samples": audio.size, "text": text, "frames": tokens.shape[1],
                           "expected_s": float(np.sum(durations_s)), "rate": token_rate,
                           "confident": bool(np.all((confidence > 0) & (confidence <= 1)))})
        passed, score, spans = self.script[min(len(self.calls), len(self.script)) - 1]
        return {"passed": passed, "score": score, "reasons": [] if passed else [f"stub failure {len(self.calls)}"],
                "bad_spans": spans}


def _setup(model, lengths, checker, cost=None, auto=AUTO):
    r = Renderer(model, make_fixture_codec(), parallel=ParallelConfig(), serial=SerialConfig(), auto=auto,
                 cost=cost or CostModel(), checker=checker)
    items, ph, dur = [], torch.zeros(len(lengths), 8, dtype=torch.long), torch.zeros(len(lengths), 8, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids = tuple(range(1, 9))
        items.append(Item(text=f"item {i}", ids=ids, speaker=0))
        ph[i] = torch.tensor(ids)
        dur[i] = n // 8
        dur[i, -1] += n - 8 * (n // 8)
    cond = model.condition(ph, torch.zeros(len(lengths), dtype=torch.long), durations=dur)
    return r, items, cond


def _modes(item: Item) -> list[tuple[str, str]]:
    return [(a.mode, a.kind) for a in item.attempts]


def test_always_failing_item_walks_the_whole_ladder_and_gets_its_best_attempt(model) -> None:
    checker = ScriptedChecker([(False, 0.2, [(0.1, 0.2)]), (False, 0.6, [(0.3, 0.35)]), (False, 0.3, []),
                               (False, 0.4, [])])
    r, items, cond = _setup(model, [60], checker)
    out = r.render_group(items, cond, mode="auto", steps=None, seed=3, group=0, checking=True, deadline=None)
    it = items[0]
    assert out.first_path == P and not out.budget_exhausted
    assert _modes(it) == [(P, FULL), (P, REPAIR), (P, FULL), (S, FULL)]
    assert [a.max_steps for a in it.attempts] == [4, 4, 12, None]
    assert it.best() is it.attempts[1]  # highest score, though it never passed
    assert it.best().passed is False
    # The checker saw the whole item each time: 60 frames = 0.6 s = 9600 samples, and its own text.
    assert all(c == {"samples": 9600, "text": "item 0", "frames": 60, "expected_s": pytest.approx(0.6),
                     "rate": 100.0, "confident": True} for c in checker.calls)
    # Span repair re-predicted only the flagged span (0.1-0.2 s widened by 0.08 s = frames 2..28).
    first, repair = it.attempts[0], it.attempts[1]
    outside = ~torch.from_numpy(span_frames([(0.1, 0.2)], 100.0, 60, AUTO.repair_margin_s))
    assert torch.equal(first.codes[:, outside], repair.codes[:, outside])
    assert not torch.equal(first.codes, repair.codes)
    assert repair.repaired_spans == [(0.1, 0.2)]
    assert it.attempts[3].steps == 60  # serial: one level-0 step per frame


def test_resume_goes_on_from_a_first_attempt_made_elsewhere(model) -> None:
    """``resume``: the items hold a checked first attempt (the NumPy runtime's): no stage-0 decode, the repair
    keeps that attempt's tokens outside the flagged span, and run ids start after ``first_run``."""
    checker = ScriptedChecker([(False, 0.2, [(0.1, 0.2)]), (True, 0.9, [])])
    r, items, cond = _setup(model, [60], checker)
    r.render_group(items, cond, mode="auto", steps=None, seed=3, group=0, checking=True, deadline=None)
    first = items[0].attempts[0]
    elsewhere = Item(text="item 0", ids=items[0].ids, speaker=0)
    elsewhere.attempts.append(dataclasses.replace(first, codes=first.codes.numpy(), run=0,
                                                  confidence=first.confidence.numpy()))
    checker.calls.clear()
    resumed = Renderer(model, make_fixture_codec(), parallel=ParallelConfig(), serial=SerialConfig(), auto=AUTO,
                       cost=CostModel(), checker=ScriptedChecker([(True, 0.9, [])]), first_run=1)
    out = resumed.render_group([elsewhere], cond, mode="auto", steps=None, seed=3, group=0, checking=True,
                               deadline=None, resume=True)
    assert _modes(elsewhere) == [(P, FULL), (P, REPAIR)] and elsewhere.best().passed
    assert list(out.runs) == [1] and out.first_path == P
    outside = ~torch.from_numpy(span_frames([(0.1, 0.2)], 100.0, 60, AUTO.repair_margin_s))
    assert torch.equal(first.codes[:, outside], elsewhere.attempts[1].codes[:, outside])
    # The same seed streams as a ladder run whole: the repair equals the one made from torch's own first attempt.
    assert torch.equal(items[0].attempts[1].codes, elsewhere.attempts[1].codes)
    with pytest.raises(ValueError, match="resume needs"):
        resumed.render_group([Item(text="x", ids=items[0].ids, speaker=0)], cond, mode="auto", steps=None, seed=0,
                             group=0, checking=True, deadline=None, resume=True)


def test_escalation_stops_at_the_first_pass_and_skips_repair_without_spans(model) -> None:
    checker = ScriptedChecker([(False, 0.3, []), (True, 0.9, [])])
    r, items, cond = _setup(model, [40], checker)
    r.render_group(items, cond, mode="auto", steps=None, seed=0, group=0, checking=True, deadline=None)
    # No bad spans to repair: straight to more steps, which passes, so no serial fallback.
    assert _modes(items[0]) == [(P, FULL), (P, FULL)]
    assert items[0].best() is items[0].attempts[1] and items[0].best().passed


def test_only_failing_items_are_escalated_in_a_batch(model) -> None:
    calls: list[str] = []

    def checker(audio, sr, text, **kw):
        calls.append(text)
        ok = text != "item 1" or calls.count(text) >= 2
        return {"passed": ok, "score": 0.9 if ok else 0.1, "reasons": [], "bad_spans": [(0.0, 0.1)]}

    r, items, cond = _setup(model, [50, 30, 40], checker)
    out = r.render_group(items, cond, mode="auto", steps=None, seed=1, group=0, checking=True, deadline=None)
    assert [len(it.attempts) for it in items] == [1, 2, 1]
    assert calls == ["item 0", "item 1", "item 2", "item 1"]
    assert items[1].attempts[1].kind == REPAIR and items[1].attempts[1].codes.shape == (Q, 30)
    assert len(out.runs) == 2


def test_serial_first_when_the_cost_model_says_so(model) -> None:
    checker = ScriptedChecker([(False, 0.1, [(0.0, 0.05)]), (False, 0.2, []), (True, 0.8, [])])
    slow_passes = CostModel(pass_ms_per_frame=100.0)
    r, items, cond = _setup(model, [20, 20], checker, cost=slow_passes)
    out = r.render_group(items, cond, mode="auto", steps=None, seed=0, group=0, checking=True, deadline=None)
    assert out.first_path == S
    assert _modes(items[0])[0] == (S, FULL)


def test_deadline_stops_escalation(model) -> None:
    checker = ScriptedChecker([(False, 0.1, [(0.0, 0.1)])])
    r, items, cond = _setup(model, [40], checker)
    out = r.render_group(items, cond, mode="auto", steps=None, seed=0, group=0, checking=True,
                         deadline=time.perf_counter())
    assert out.budget_exhausted and len(items[0].attempts) == 1


def slow_failing(audio, sr, text, **kw):
    """A checker that always fails and costs 200 ms a call (far more than the tiny model's decoding)."""
    time.sleep(0.2)
    return {"passed": False, "score": 0.1, "reasons": ["x"], "bad_spans": [(0.0, 0.1)]}


def test_escalation_budget_prices_the_ladder_by_the_first_attempt(model) -> None:
    # The first attempt takes ~0.2 s, so an escalation budget of 1.5x leaves room for one or two more checked
    # attempts, never the whole four-stage ladder.
    tight = AutoConfig(first_steps=4, escalate_steps=12, escalation_budget=1.5, escalation_floor_s=0.0)
    r, items, cond = _setup(model, [40], slow_failing, auto=tight)
    out = r.render_group(items, cond, mode="auto", steps=None, seed=0, group=0, checking=True, deadline=None)
    assert out.budget_exhausted and 1 < len(items[0].attempts) < 4
    r, items, cond = _setup(model, [40], slow_failing)  # no budget: the whole ladder
    out = r.render_group(items, cond, mode="auto", steps=None, seed=0, group=0, checking=True, deadline=None)
    assert not out.budget_exhausted and len(items[0].attempts) == 4


def test_a_requests_batches_share_one_escalation_floor(model) -> None:
    # No budget beyond the floor: a group holding all of the request's audio gets the whole 1.5 s floor (room for
    # more checked attempts at 0.2 s each); a group holding 2% of it gets 0.03 s, less than one attempt.
    floor_only = AutoConfig(first_steps=4, escalate_steps=12, escalation_budget=0.0, escalation_floor_s=1.5)
    r, items, cond = _setup(model, [40], slow_failing, auto=floor_only)
    r.render_group(items, cond, mode="auto", steps=None, seed=0, group=0, checking=True, deadline=None)
    assert len(items[0].attempts) > 1
    r, items, cond = _setup(model, [40], slow_failing, auto=floor_only)
    out = r.render_group(items, cond, mode="auto", steps=None, seed=0, group=0, checking=True, deadline=None,
                         floor_share=0.02)
    assert out.budget_exhausted and len(items[0].attempts) == 1


def test_escalation_yields_to_the_callers_moving_limit(model) -> None:
    # escalate_until is read before each escalation stage: room for the first (repair), none for the second.
    reads: list[float] = []

    def until() -> float:
        reads.append(time.perf_counter())
        return reads[-1] + (30.0 if len(reads) == 1 else 0.0)

    r, items, cond = _setup(model, [40], slow_failing)
    out = r.render_group(items, cond, mode="auto", steps=None, seed=0, group=0, checking=True, deadline=None,
                         escalate_until=until)
    assert out.yielded and out.budget_exhausted and len(items[0].attempts) == 2 and len(reads) == 2
    r, items, cond = _setup(model, [40], slow_failing)  # None: nothing queued behind, the whole ladder
    out = r.render_group(items, cond, mode="auto", steps=None, seed=0, group=0, checking=True, deadline=None,
                         escalate_until=lambda: None)
    assert not out.yielded and not out.budget_exhausted and len(items[0].attempts) == 4


def test_escalation_budget_is_validated() -> None:
    with pytest.raises(ValueError, match="escalation_budget"):
        AutoConfig(escalation_budget=-1.0).validate()
    with pytest.raises(ValueError, match="escalation_floor_s"):
        AutoConfig(escalation_floor_s=-1.0).validate()
    AutoConfig(escalation_budget=None).validate()


def test_select_trims_to_the_longest_selected_item(model) -> None:
    _, _, cond = _setup(model, [50, 30, 40], None)
    sub = select(cond, [1, 2])
    assert sub.num_frames == 40 and sub.lengths.tolist() == [30, 40]
    assert torch.equal(sub.frames[0, :30], cond.frames[1, :30])


def test_audio_has_exactly_the_frames_worth_of_samples(model) -> None:
    r, _, _ = _setup(model, [10], None)
    codes = torch.randint(0, CARD, (Q, 37))
    audio = r.to_audio(codes)
    assert audio.dtype == np.float32 and audio.shape == (37 * 160,) and math.isfinite(float(np.abs(audio).max()))


def test_deadline_estimate_counts_the_measured_checker_cost(model) -> None:
    def slow_checker(audio, sr, text, **kw):
        time.sleep(0.05)
        return {"passed": False, "score": 0.1, "reasons": ["x"], "bad_spans": []}

    r, items, cond = _setup(model, [50], slow_checker)
    stage = Stage(P, FULL, 4)
    before = r.estimate_s(stage, 50, 1, audio_s=0.5)
    r.render_group(items, cond, mode="parallel", steps=4, seed=0, group=0, checking=True, deadline=None)
    # >= 0.05 s of checking per 0.5 s of audio now adds >= 0.05 s to a stage over 0.5 s of audio
    # (the upper bound only allows for a loaded machine oversleeping).
    assert 0.045 <= r.estimate_s(stage, 50, 1, audio_s=0.5) - before < 0.5


def test_a_checker_error_is_a_failed_attempt_not_a_crash(model) -> None:
    from audiopd.errors import AudioInputError

    def broken(audio, sr, text, **kw):
        raise AudioInputError("audio is silent")

    r, items, cond = _setup(model, [30], broken)
    r.render_group(items, cond, mode="auto", steps=None, seed=0, group=0, checking=True, deadline=None)
    assert _modes(items[0]) == [(P, FULL), (P, FULL), (S, FULL)]  # no spans to repair
    assert all(a.passed is False and "audio is silent" in a.verdict["reasons"][0] for a in items[0].attempts)


def test_decoded_audio_is_peak_limited_not_clipped() -> None:
    """A vocoder overshooting full scale is scaled down to PEAK_LIMIT, keeping the waveform's shape."""
    import numpy as np
    import torch

    from audiopd.decoding.parallel import ParallelConfig
    from audiopd.decoding.serial import SerialConfig
    from audiopd.synthesis.auto import PEAK_LIMIT, AutoConfig, Renderer
    from audiopd.synthesis.cost import CostModel

    class LoudCodec:
        sample_rate, frame_rate = 16000, 100.0

        def decode(self, codes):
            t = np.arange(codes.shape[-1] * 160) / 16000
            return (2.5 * np.sin(2 * np.pi * 200 * t))[None].astype(np.float32)

    r = Renderer(None, LoudCodec(), parallel=ParallelConfig(), serial=SerialConfig(), auto=AutoConfig(),
                 cost=CostModel(), checker=None)
    audio = r.to_audio(torch.zeros(4, 10, dtype=torch.long))
    assert audio.shape == (1600,)
    assert abs(float(np.abs(audio).max()) - PEAK_LIMIT) < 1e-4
    t = np.arange(1600) / 16000
    assert np.allclose(audio, PEAK_LIMIT * np.sin(2 * np.pi * 200 * t) / np.abs(np.sin(2 * np.pi * 200 * t)).max(),
                       atol=1e-4)


class _MeetingCodec:
    """Wraps the fixture codec; its first two decodes wait (up to 10 s) until both are running at once."""

    def __init__(self, concurrent: bool) -> None:
        import threading

        self.inner = make_fixture_codec()
        self.sample_rate, self.frame_rate = self.inner.sample_rate, self.inner.frame_rate
        self.concurrent_decode = concurrent
        self.barrier = threading.Barrier(2, timeout=10)
        self.met = False
        self.calls = 0

    def decode(self, codes):
        import threading

        self.calls += 1
        if self.calls <= 2:
            try:
                self.barrier.wait()
                self.met = True
            except threading.BrokenBarrierError:
                pass
        return self.inner.decode(codes)


def _render_on_threads(r: Renderer, items, cond, threads: int) -> None:
    """One parallel render of ``items`` with torch set to ``threads`` threads (restored afterwards)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        r.render_group(items, cond, mode="parallel", steps=4, seed=0, group=0, checking=False, deadline=None)
    finally:
        torch.set_num_threads(before)


class _SplitSpy:
    """The fixture codec, recording how many pieces each decode asked for (1 = plain ``decode``)."""

    def __init__(self, concurrent: bool) -> None:
        self.inner = make_fixture_codec()
        self.sample_rate, self.frame_rate = self.inner.sample_rate, self.inner.frame_rate
        self.concurrent_decode = concurrent
        self.parts: list[int] = []

    def decode(self, codes):
        self.parts.append(1)
        return self.inner.decode(codes)

    def decode_split(self, codes, parts):
        self.parts.append(parts)
        return self.inner.decode_split(codes, parts)


@pytest.mark.parametrize("concurrent, threads, lengths, parts", [
    (True, 2, [40], [2]),  # one item, two threads: the codec may split it
    (True, 1, [40], [1]),
    (False, 2, [40], [1]),  # a codec that cannot run on threads is never split
    (True, 2, [40, 30], [1, 1]),  # several items already fill the threads
])
def test_a_lone_item_is_decoded_over_the_threads(model, concurrent, threads, lengths, parts) -> None:
    r, items, cond = _setup(model, lengths, None)
    r.codec = codec = _SplitSpy(concurrent)
    _render_on_threads(r, items, cond, threads)
    assert codec.parts == parts
    for it in items:
        assert it.attempts[0].audio.shape == (it.frames * 160,)


@pytest.mark.parametrize("concurrent, threads, meet", [(True, 2, True), (False, 2, False), (True, 1, False)])
def test_items_of_a_batch_decode_side_by_side_only_when_codec_and_threads_allow(model, concurrent, threads,
                                                                                meet) -> None:
    """Two chunks' codec decodes overlap in time iff the codec allows it and torch has > 1 thread."""
    r, items, cond = _setup(model, [40, 30, 20], None)
    codec = _MeetingCodec(concurrent)
    if not meet:
        codec.barrier = type(codec.barrier)(2, timeout=0.2)  # sequential decodes would wait the full timeout
    r.codec = codec
    _render_on_threads(r, items, cond, threads)
    assert codec.met is meet and codec.calls == 3
    # Side by side or not, every item gets exactly its own audio (order kept).
    ref = make_fixture_codec()
    for it in items:
        a = it.attempts[0]
        assert a.audio.shape == (it.frames * 160,)
        np.testing.assert_array_equal(a.audio, r.to_audio(a.codes))
        assert np.array_equal(a.audio, np.asarray(ref.decode(a.codes[None].numpy()), np.float32)[0][: a.audio.size])
