"""Side-by-side decode speed: interleaved rounds, rotating order, per-round ratios, the codec's choice restored."""

from __future__ import annotations

import numpy as np
import pytest

from audiopd.codec.base import Codec
from audiopd.errors import ArtifactError
from audiopd.eval.codec_speed import decode_speed, markdown_table


class _Clocked(Codec):
    """Decoders that cost a known number of fake seconds per frame, on a clock the test owns."""

    name, sample_rate, frame_rate, num_codebooks, cardinality = "clocked", 100, 10.0, 2, 4
    decoders, decoder = ("cheap", "dear"), "dear"
    cost = {"cheap": 0.01, "dear": 0.05}

    def __init__(self) -> None:
        self.now, self.calls = 0.0, []

    def clock(self) -> float:
        return self.now

    def _encode(self, audio: np.ndarray) -> np.ndarray:
        return np.zeros((audio.shape[0], 2, self.num_frames(audio.shape[1])), np.int64)

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        self.calls.append(self.decoder)
        self.now += self.cost[self.decoder] * codes.shape[-1]
        return np.zeros((codes.shape[0], codes.shape[-1] * 10), np.float32)


def test_decoders_are_timed_side_by_side_in_rotating_order() -> None:
    codec = _Clocked()
    grids = [np.zeros((2, 20), np.int64), np.zeros((2, 30), np.int64)]  # 50 frames = 5 s of audio
    result = decode_speed(codec, grids, ["cheap", "dear"], rounds=3, warmup=1, clock=codec.clock)
    assert result["audio_seconds"] == 5.0 and result["rounds"] == 3
    # 0.01 s per frame = 0.1 s per audio second; the dearer one is five times that
    assert result["decoders"]["cheap"]["rtf_median"] == pytest.approx(0.1)
    assert result["decoders"]["dear"]["rtf_max"] == pytest.approx(0.5)
    assert result["ratios"] == {"cheap": 1.0, "dear": 5.0}
    # 4 rounds x 2 decoders x 2 grids, the order rotating: cheap first, then dear first, ...
    firsts = [codec.calls[i] for i in range(0, len(codec.calls), 4)]
    assert len(codec.calls) == 16 and firsts == ["cheap", "dear", "cheap", "dear"]
    assert codec.decoder == "dear"  # the codec's own choice is back
    table = markdown_table(result, threads=2)
    assert "| dear | 0.5 |" in table and "2 thread(s)" in table


@pytest.mark.parametrize("kwargs, error, needle", [
    ({"grids": []}, ValueError, "at least one token grid"),
    ({"decoders": ["cheap", "cheap"]}, ValueError, "distinct"),
    ({"decoders": ["cheap", "nope"]}, ArtifactError, "no decoder 'nope'"),  # the codec's own check
    ({"rounds": 0}, ValueError, "rounds must be >= 1"),
])
def test_bad_requests_are_clear_errors(kwargs: dict, error: type, needle: str) -> None:
    args = {"grids": [np.zeros((2, 5), np.int64)], "decoders": ["cheap", "dear"], **kwargs}
    codec = _Clocked()
    with pytest.raises(error, match=needle):
        decode_speed(codec, args.pop("grids"), args.pop("decoders"), clock=codec.clock, **args)
    assert codec.calls == [] and codec.decoder == "dear"  # nothing decoded, the codec's choice kept
