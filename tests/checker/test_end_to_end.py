"""End to end: the checker bench on a few real teacher clips (slow: about a minute of CPU)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("flite") is None or not Path("/usr/share/games/fortunes").is_dir(),
                       reason="needs Debian flite and fortunes"),
]


def test_bench_detects_faults_without_false_alarms() -> None:
    from audiopd.eval.checker_bench import run_bench

    report = run_bench(6, split="bench", progress=False)
    assert report["n_clips"] == 6
    assert len(report["voices"]) == 4
    assert report["false_alarm_rate"] <= 1 / 6
    rates = report["detection_rate"]
    assert set(rates) == {"skip", "repeat", "silence", "noise", "truncate", "pause", "swap"}
    # 6 clips per fault: allow one miss per fault type, and at most two misses overall.
    assert min(rates.values()) >= 5 / 6
    assert sum(rates.values()) >= len(rates) - 2 / 6
    assert "| clean |" in report["table_md"]
    assert 0 < report["rtf"] < 2.0


def test_bench_cli_writes_report(tmp_path: Path) -> None:
    import json

    from audiopd.eval.checker_bench import main

    out = tmp_path / "r.json"
    assert main(["--n", "2", "--checker-asr", "never", "--quiet", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["n_clips"] == 2 and data["asr"] == "never"
    assert set(data["detection_rate"]) >= {"skip", "swap"}
