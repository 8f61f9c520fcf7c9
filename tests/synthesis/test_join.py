"""Chunk joining: no clicks at the joins, exact offsets, pauses and crossfades."""

from __future__ import annotations

import numpy as np
import pytest

from audiopd.synthesis.join import JoinConfig, fade_edges, join_chunks, max_jump

SR = 16000


def _sine(seconds: float, freq: float, phase: float, amp: float = 0.9) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (amp * np.sin(2 * np.pi * freq * t + phase)).astype(np.float32)


def _worst_cases() -> list[np.ndarray]:
    # Each chunk ends near +0.9 and the next starts near -0.9 (or at a DC offset): butting them
    # together gives a step of ~1.8, a loud click.
    return [_sine(0.3, 200, np.pi / 2), _sine(0.25, 200, -np.pi / 2), np.full(3000, 0.7, np.float32),
            _sine(0.2, 330, 1.0)]


@pytest.mark.parametrize("config", [JoinConfig(), JoinConfig(pause_s=0.0), JoinConfig(pause_s=0.05, fade_s=0.02)])
def test_no_click_at_joins(config: JoinConfig) -> None:
    chunks = _worst_cases()
    naive = np.concatenate(chunks)
    naive_joins = np.cumsum([c.size for c in chunks])[:-1]
    # Without fading the joins jump by far more than the signals' own largest step (~0.07 for 200 Hz).
    own = max(float(np.max(np.abs(np.diff(c)))) for c in chunks)
    assert max_jump(naive, naive_joins, 2) > 1.0 > 5 * own

    out, starts = join_chunks(chunks, SR, config)
    fade = int(config.fade_s * SR)
    joins = [s for s in starts[1:]] + [s + c.size for s, c in zip(starts[:-1], chunks[:-1])]
    # Hann ramps add at most peak * pi / (2 * fade) per sample to the signals' own steps.
    bound = own + 0.9 * np.pi / (2 * fade) + 1e-3
    assert max_jump(out, joins, fade + 2) <= bound


def test_offsets_and_length_with_pause() -> None:
    chunks = [np.ones(1000, np.float32), np.ones(500, np.float32), np.ones(200, np.float32)]
    out, starts = join_chunks(chunks, SR, JoinConfig(pause_s=0.01, fade_s=0.001))
    pause = 160
    assert starts == [0, 1000 + pause, 1000 + pause + 500 + pause]
    assert out.size == 1700 + 2 * pause
    assert np.all(out[1000 : 1000 + pause] == 0.0)  # the pause is silent
    # Only the ramps are touched: the middle of every chunk is unchanged, the outer edges too.
    assert out[0] == 1.0 and out[-1] == 1.0 and out[starts[1] + 250] == 1.0
    assert out[999] < 0.05 and out[starts[1]] < 0.05


def test_crossfade_overlaps_the_ramps() -> None:
    chunks = [np.ones(1000, np.float32), np.ones(1000, np.float32)]
    out, starts = join_chunks(chunks, SR, JoinConfig(pause_s=0.0, fade_s=0.005))
    n = 80
    assert starts == [0, 1000 - n] and out.size == 2000 - n
    # Complementary Hann ramps over a constant sum to about one: no dip, no bump.
    assert np.allclose(out, 1.0, atol=0.05)


def test_pieces_faded_one_by_one_and_paused_equal_the_joined_signal() -> None:
    # The server streams sentence by sentence with fade_edges and a leading pause: it must be join_chunks' audio.
    cfg = JoinConfig()
    chunks = _worst_cases()
    joined, _ = join_chunks(chunks, SR, cfg)
    pieces = []
    for i, chunk in enumerate(chunks):
        part = chunk.copy()
        fade_edges(part, round(cfg.fade_s * SR), fade_in=i > 0, fade_out=i < len(chunks) - 1)
        pieces.append(part if i == 0 else np.concatenate([np.zeros(round(cfg.pause_s * SR), np.float32), part]))
    assert np.array_equal(np.concatenate(pieces), joined)


def test_fade_edges_leaves_a_short_part_half_ramped_and_says_how_long() -> None:
    part = np.ones(10, np.float32)
    assert fade_edges(part, 160, fade_in=True, fade_out=False) == 5
    assert np.all(np.diff(part[:5]) > 0) and part[4] < 1.0 and np.all(part[5:] == 1.0)


def test_single_chunk_is_unchanged_and_empty_list_is_empty() -> None:
    x = np.linspace(-1, 1, 777).astype(np.float32)
    out, starts = join_chunks([x], SR)
    assert starts == [0] and np.array_equal(out, x)
    out, starts = join_chunks([], SR)
    assert out.size == 0 and starts == []


def test_short_and_empty_chunks_do_not_crash() -> None:
    out, starts = join_chunks([np.ones(3, np.float32), np.zeros(0, np.float32), np.ones(5, np.float32)], SR,
                              JoinConfig(pause_s=0.0, fade_s=0.01))
    assert out.dtype == np.float32 and out.size == 8 and starts == [0, 3, 3]


@pytest.mark.parametrize("config", [JoinConfig(pause_s=-0.1), JoinConfig(fade_s=float("nan"))])
def test_bad_config_is_rejected(config: JoinConfig) -> None:
    with pytest.raises(ValueError):
        join_chunks([np.ones(10)], SR, config)
