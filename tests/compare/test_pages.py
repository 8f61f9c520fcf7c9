"""Both pages of a comparison in headless Chromium (Debian's ``chromium`` through Playwright): the players load
their clips, and the blind listening page records a choice, keeps it across a reload and exports it as JSON that
``audiopd compare --tally`` reads."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from compare_fixtures import TEXTS, FakeJudge

from audiopd.cli import main
from audiopd.compare.pages import report_id
from audiopd.compare.run import run_compare

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is in the dev extra")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).is_file():
    pytest.skip("Debian's chromium is not installed (make deps installs it)", allow_module_level=True)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


@pytest.fixture
def report(tts, small_cfg, tmp_path) -> Path:
    out = tmp_path / "rep"
    # Opus: the format of the committed report (FLAC and Vorbis are exercised by the other tests' files).
    run_compare(tts, TEXTS[:2], dataclasses.replace(small_cfg, audio_format="opus"), FakeJudge(), out)
    return out


@pytest.fixture
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _wait_loaded(page, selector: str) -> list[dict]:
    """Every matched <audio> has its metadata (readyState >= 1) and no error; returns their states."""
    page.wait_for_function(f"""() => [...document.querySelectorAll('{selector}')]
        .every(a => a.error !== null || a.readyState >= 1)""", timeout=20000)
    return page.eval_on_selector_all(selector, "els => els.map(a => ({src: a.currentSrc, ready: a.readyState, "
                                               "error: a.error && a.error.code, duration: a.duration}))")


def test_index_players_load_every_clip(report, browser) -> None:
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto((report / "index.html").as_uri())
    results = json.loads((report / "results.json").read_text())
    states = _wait_loaded(page, "table.utts audio")
    assert len(states) == len(results["utterances"])
    assert all(s["error"] is None and s["ready"] >= 1 and s["duration"] > 0 for s in states)
    imgs = page.eval_on_selector_all("img", "els => els.map(i => i.naturalWidth)")
    assert imgs and all(w > 0 for w in imgs)  # every figure decoded
    assert all(u.startswith("file://") for u in requests)  # nothing from the network


def test_listening_page_records_keeps_and_exports_a_choice(report, browser, tmp_path, capsys) -> None:
    results = json.loads((report / "results.json").read_text())
    ctx = browser.new_context(accept_downloads=True)
    page = ctx.new_page()
    page.goto((report / "listen.html").as_uri())
    total = sum(u["system"] != "serial" for u in results["utterances"])
    assert page.inner_text("#progress") == f"0 of {total} answered"
    states = _wait_loaded(page, "#trial audio")
    assert len(states) == 2 and all(s["error"] is None and s["duration"] > 0 for s in states)
    assert states[0]["src"] != states[1]["src"]
    page_text = page.content()
    assert "serial" not in page_text.lower().split("<script>")[0]  # no system named in what is shown
    left = page.get_attribute("#left", "src")
    page.click("#choose-left")
    assert page.inner_text("#progress") == f"1 of {total} answered"
    assert page.get_attribute("#left", "src") != left or total == 1
    page.click("#choose-same")
    page.reload()
    assert page.inner_text("#progress") == f"2 of {total} answered"  # kept in localStorage
    with page.expect_download() as dl:
        page.click("#export")
    exported = json.loads(Path(dl.value.path()).read_text())
    assert exported == json.loads(page.input_value("#exported"))
    assert exported["format"] == "audiopd-listen/1" and exported["report"] == report_id(results)
    answers = exported["answers"]
    assert [a["choice"] for a in answers] == ["left", "same"] and answers[0]["left"] == left
    clips = {u["audio"] for u in results["utterances"]}
    assert all(a["left"] in clips and a["right"] in clips and a["left"] != a["right"] for a in answers)
    ctx.close()

    path = tmp_path / "answers.json"
    path.write_text(json.dumps(exported))
    capsys.readouterr()
    assert main(["compare", "--tally", str(path), "-o", str(report)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 answers") and "| serial |" in out
