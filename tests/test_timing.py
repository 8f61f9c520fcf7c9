"""audiopd.timing: self-time accounting of nested spans, nothing recorded when off, and the facade's stage marks.

The unit tests run on a fake clock, so their figures are exact. The facade tests slow one stage down on purpose
(a checker and a codec that sleep) and check that the time lands in that stage's row and nowhere else.
"""

from __future__ import annotations

import contextvars
import threading
import time

import numpy as np
import pytest
from voice_fixtures import tiny_voice

from audiopd import timing
from audiopd.codec.fixture import FixtureCodec
from audiopd.pipeline import SynthesisConfig, Synthesizer

TEXT = "The old bridge over the river was painted green. She keeps a small notebook in her coat pocket."


@pytest.fixture
def clock(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(timing.time, "perf_counter", lambda: now[0])
    return now


def test_nested_spans_count_self_time_and_add_up_to_the_block(clock) -> None:
    with timing.collect() as times:
        clock[0] += 1.0  # outside any span: "other"
        with timing.span("outer"):
            clock[0] += 2.0
            with timing.span("inner"):
                clock[0] += 4.0
            with timing.span("inner"):  # the same name twice adds up
                clock[0] += 1.0
            clock[0] += 0.5
        with timing.span("outer"):
            clock[0] += 3.0
    assert times.seconds == {"outer": 5.5, "inner": 5.0, timing.OTHER: 1.0}
    assert times.total == 11.5


def test_a_span_that_raises_is_still_charged_and_unwinds(clock) -> None:
    with timing.collect() as times:
        with pytest.raises(RuntimeError), timing.span("a"):
            clock[0] += 2.0
            raise RuntimeError("boom")
        with timing.span("b"):
            clock[0] += 1.0
    assert times.seconds == {"a": 2.0, "b": 1.0, timing.OTHER: 0.0} and times.total == 3.0


def test_off_by_default_one_shared_no_op_and_nothing_recorded(clock) -> None:
    assert timing.span("x") is timing.span("y")  # no allocation per mark while nobody collects
    with timing.span("x"):
        clock[0] += 5.0
    with timing.collect() as times:
        clock[0] += 1.0
    assert times.seconds == {timing.OTHER: 1.0}
    assert timing.span("x") is timing.span("y")  # off again after the block


def test_only_the_collecting_thread_records(clock) -> None:
    def work() -> None:
        with timing.span("elsewhere"):
            pass

    with timing.collect() as times:
        ctx = contextvars.copy_context()  # as asyncio.to_thread would hand it over
        t = threading.Thread(target=ctx.run, args=(work,))
        t.start()
        t.join()
    assert "elsewhere" not in times.seconds


# ----------------------------------------------------------------------------------------- the facade
class SlowCodec(FixtureCodec):
    """The fixture codec, 30 ms slower per decode call; decoded one chunk at a time (with ``concurrent_decode``
    and more than one torch thread, set by an earlier test, two chunks' sleeps would overlap on the wall clock)."""

    concurrent_decode = False

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        time.sleep(0.03)
        return super()._decode(codes)


def slow_checker(audio, sample_rate, text, **kw):
    time.sleep(0.02)
    return {"passed": True, "score": 1.0, "reasons": [], "bad_spans": []}


def test_the_facade_charges_each_stage_to_its_own_row() -> None:
    # Small chunks: two groups of one chunk each (different lengths), so two decode calls and one join.
    tts = Synthesizer(tiny_voice(), SlowCodec(), config=SynthesisConfig(max_chunk_chars=60), checker=slow_checker)
    tts.synthesize(TEXT, mode="auto", seed=0)  # warm-up: a process's first torch calls pay one-off setup
    with timing.collect() as times:
        res = tts.synthesize(TEXT, mode="auto", seed=0)
    assert res.report["chunks"] == 2 and len(res.report["attempts"]) == 2  # both chunks passed at once
    s = times.seconds
    for name in (timing.FRONTEND, timing.DURATIONS, timing.CONDITION, timing.LEVEL0, timing.FINE, timing.CODEC,
                 timing.CHECKER, timing.JOINS, timing.OTHER):
        assert s.get(name, -1.0) >= 0.0, name
    assert timing.SERIAL_LEVEL0 not in s and timing.WRITE not in s
    assert s[timing.CHECKER] >= 2 * 0.02 and s[timing.CODEC] >= 2 * 0.03
    # The sleeps are charged to their own rows only: the decoder and the rest stay well under them.
    assert s[timing.LEVEL0] + s[timing.FINE] + s[timing.OTHER] < s[timing.CODEC] + s[timing.CHECKER]
    assert sum(s.values()) == pytest.approx(times.total)


def test_serial_mode_marks_its_level_0_and_parallel_does_not_check() -> None:
    tts = Synthesizer(tiny_voice(), FixtureCodec(), checker=slow_checker)
    with timing.collect() as serial:
        tts.synthesize("Hello there.", mode="serial", seed=0)
    with timing.collect() as parallel:
        tts.synthesize("Hello there.", mode="parallel", seed=0)
    assert serial.seconds[timing.SERIAL_LEVEL0] > 0 and timing.LEVEL0 not in serial.seconds
    assert parallel.seconds[timing.LEVEL0] > 0 and timing.SERIAL_LEVEL0 not in parallel.seconds
    assert timing.CHECKER not in serial.seconds and timing.CHECKER not in parallel.seconds


def test_the_mel_codecs_fast_decoder_names_its_parts(tmp_path) -> None:
    from mel_fixtures import mel_voice, write_mel_artifact

    from audiopd.codec import load_codec
    from audiopd.pipeline import load

    codec = load_codec(write_mel_artifact(tmp_path / "mel-fx", default="fast", head="harmonic",
                                          fast_changes={"phase_iters": 2, "sharpen": 2.0}))
    tts = load(mel_voice(codec), codec=codec)
    with timing.collect() as times:
        tts.synthesize("Hello there.", mode="parallel", seed=0)
    parts = (timing.CODEC_LOOKUP, timing.CODEC_NET, timing.CODEC_HARMONIC, timing.CODEC_POSTFILTER,
             timing.CODEC_PHASE, timing.CODEC_ISTFT, timing.CODEC_VOCODER, timing.CODEC)
    assert all(times.seconds.get(p, 0.0) > 0.0 for p in parts), times.seconds
