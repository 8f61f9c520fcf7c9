"""Audio file I/O."""

from __future__ import annotations

import numpy as np

SR = 16000


def test_write_audio_gives_normal_permissions(tmp_path) -> None:
    import os

    from audiopd.audio import write_audio

    umask = os.umask(0o022)
    try:
        out = write_audio(tmp_path / "x.wav", np.zeros(160, np.float32) + 0.1, SR)
    finally:
        os.umask(umask)
    assert oct(out.stat().st_mode & 0o777) == oct(0o644)
