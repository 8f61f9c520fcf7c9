"""The page at / in headless Chromium: type text, press Play, the <audio> gets a playable source."""

from __future__ import annotations

import shutil

import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The brief's flags for a headless Chromium with no network of its own.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--autoplay-policy=no-user-gesture-required"]


@pytest.fixture
def page():
    if not shutil.which("chromium"):
        pytest.skip("Debian chromium is not installed (make deps installs it)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            yield browser.new_page()
        finally:
            browser.close()


def test_type_press_play_and_the_audio_plays(page, server) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.url)
    page.wait_for_function("document.querySelectorAll('#voice option').length === 2")
    page.fill("#text", "Good morning. The quick brown fox jumps.")
    page.select_option("#voice", "bob")
    page.select_option("#mode", "parallel")
    page.fill("#steps", "2")
    page.fill("#speed", "1.5")
    page.click("#play")
    page.wait_for_function("document.getElementById('audio').src.startsWith('blob:')", timeout=30_000)
    # Playable: the browser decoded the WAV's header and knows its length.
    page.wait_for_function("document.getElementById('audio').readyState >= 1", timeout=30_000)
    duration = page.evaluate("document.getElementById('audio').duration")
    assert duration > 0.5
    assert page.inner_text("#verdict").startswith("unchecked")  # parallel mode is not checked by default
    assert page.inner_text("#path").startswith("parallel")
    words = page.eval_on_selector_all("#words span", "els => els.map(e => e.textContent)")
    assert words[:2] == ["good", "morning"] and len(words) == 7
    # While playing, the word under the playhead is highlighted.
    page.evaluate("document.getElementById('audio').currentTime = 0.4")
    page.wait_for_function("document.querySelectorAll('#words span.now').length === 1", timeout=10_000)
    assert page.inner_text("#status") == "" and not errors


def test_pronunciations_from_the_page(page, server) -> None:
    page.goto(server.url)
    page.fill("#text", "Doctor Nguyen is here.")
    page.select_option("#mode", "parallel")
    page.click("summary")
    page.fill("#lexicon", ";;; mine\nNGUYEN  W IH1 N\n")
    page.click("#play")
    page.wait_for_function("document.getElementById('audio').src.startsWith('blob:')", timeout=30_000)
    assert page.inner_text("#lexicon-used") == "1 word(s) of your own"
    page.fill("#lexicon", "NGUYEN  W IH N")  # a vowel without its stress: the server's 400 shows
    page.click("#play")
    page.wait_for_function("document.getElementById('status').className === 'error'", timeout=30_000)
    assert "stress digit" in page.inner_text("#status")


def test_errors_show_on_the_page(page, server) -> None:
    page.goto(server.url)
    page.fill("#text", "!!!")
    page.click("#play")
    page.wait_for_function("document.getElementById('status').className === 'error'", timeout=30_000)
    assert "speakable" in page.inner_text("#status")
