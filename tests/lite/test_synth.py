"""The torch-free synthesizer (audiopd.lite.synth) on the shipped default voice: it speaks without importing torch,
matches the torch facade's greedy output, and hands what it cannot do to torch (runtime "auto") or refuses it
(runtime "numpy") with the reason."""

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

import audiopd
from audiopd.lite import LiteUnsupported
from audiopd.synthesis.config import SynthesisOptionError, voice_config

TEXT = "Hello there, how are you?"


@pytest.fixture(scope="module")
def lite():
    return audiopd.load(runtime="numpy")


def _torch_free(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON line; torch must never have been imported."""
    probe = code + "\nimport sys; assert 'torch' not in sys.modules, 'torch was imported'"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_speaks_and_checks_without_torch():
    got = _torch_free(f"""
import json, audiopd
tts = audiopd.load(runtime="numpy")
r = tts.synthesize({TEXT!r}, mode="auto", seed=3)
print(json.dumps({{"runtime": r.report["runtime"], "passed": r.report["check"]["passed"], "n": int(r.audio.size),
                  "rate": r.sample_rate, "peak": float(abs(r.audio).max()), "words": len(r.words),
                  "steps": r.report["steps"], "mode": r.report["mode"]}}))
""")
    assert got["runtime"] == "numpy" and got["mode"] == "parallel" and got["passed"] is True
    assert got["rate"] == 22050 and 0.5 < got["n"] / got["rate"] < 3.0
    assert 0.05 < got["peak"] <= 0.95 + 1e-6  # PEAK_LIMIT, in float32
    assert got["words"] == 5 and 1 <= got["steps"] <= 2  # the voice's own K (voices/natural: 2)


def test_cli_say_without_torch(tmp_path):
    out = tmp_path / "hi.wav"
    got = _torch_free(f"""
import json, soundfile
from audiopd.cli import main
rc = main(["say", {TEXT!r}, "-o", {str(out)!r}, "--runtime", "numpy", "--seed", "2"])
info = soundfile.info({str(out)!r})
print(json.dumps({{"rc": rc, "frames": info.frames, "rate": info.samplerate}}))
""")
    assert got["rc"] == 0 and got["rate"] == 22050 and got["frames"] > 0.5 * 22050


def test_seeded_and_reproducible(lite):
    # The shipped voice draws level 0 greedily (its level0_temperature): every seed gives the same audio.
    g7, g8 = (lite.synthesize(TEXT, mode="parallel", seed=s) for s in (7, 8))
    np.testing.assert_array_equal(g7.audio, g8.audio)
    assert g7.report["seed"] == 7 and g7.report["check"] is None
    # With the engine's draw (temperature 1.0), a seed fixes the tokens and another seed draws others.
    cfg = voice_config(lite.model)
    drawn = dataclasses.replace(cfg.parallel.sampling, temperature=1.0)
    sampled = audiopd.load(runtime="numpy", config=dataclasses.replace(
        cfg, parallel=dataclasses.replace(cfg.parallel, sampling=drawn)))
    a = sampled.synthesize(TEXT, mode="parallel", seed=7)
    b = sampled.synthesize(TEXT, mode="parallel", seed=7)
    c = sampled.synthesize(TEXT, mode="parallel", seed=8)
    np.testing.assert_array_equal(a.audio, b.audio)
    assert a.audio.size == c.audio.size  # the same durations: only the sampled tokens differ
    assert not np.array_equal(a.audio, c.audio)


def test_greedy_decoding_matches_torch():
    """With level 0 greedy (no sampling, no choice noise) both runtimes pick the same tokens, so the audio differs
    only by the float rounding that the fast decoder's Griffin-Lim amplifies (tests/lite/test_vocoder.py)."""
    import torch  # the reference: imported here, after the runtime under test was loaded

    base = audiopd.load(runtime="numpy")
    par = base.config.parallel
    greedy = dataclasses.replace(par, choice_noise=0.0, sampling=dataclasses.replace(par.sampling, temperature=0.0))
    config = dataclasses.replace(base.config, parallel=greedy)
    torch.set_num_threads(1)
    ours = audiopd.load(runtime="numpy", config=config).synthesize(TEXT, mode="parallel", seed=0)
    ref = audiopd.load(runtime="torch", config=config, precision="float32").synthesize(TEXT, mode="parallel", seed=0)
    assert ours.audio.size == ref.audio.size
    assert ours.report["steps"] == ref.report["steps"]
    assert ours.report["forward_passes"] == ref.report["forward_passes"]
    err = ours.audio - ref.audio
    snr = 10 * np.log10(np.sum(ref.audio.astype(np.float64) ** 2) / max(np.sum(err.astype(np.float64) ** 2), 1e-20))
    assert snr > 30, f"NumPy and torch greedy audio differ: SNR {snr:.1f} dB"


def test_numpy_runtime_refuses_what_needs_torch(lite):
    with pytest.raises(LiteUnsupported, match="serial decoding"):
        lite.synthesize(TEXT, mode="serial", seed=0)
    with pytest.raises(LiteUnsupported, match="thorough"):
        lite.synthesize(TEXT, mode="auto", check_level="thorough", seed=0)
    with pytest.raises(LiteUnsupported, match="needs torch"):
        audiopd.load(runtime="numpy", decoder="hq")
    with pytest.raises(SynthesisOptionError, match="runtime must be one of"):
        audiopd.load(runtime="gpu")
    with pytest.raises(SynthesisOptionError, match="mode"):  # the facade's own option checks come first
        lite.synthesize(TEXT, mode="fastest")


def test_auto_runtime_hands_serial_to_torch():
    tts = audiopd.load(runtime="auto")
    r = tts.synthesize(TEXT, mode="serial", seed=0)
    assert r.report["runtime"] == "torch" and "serial" in r.report["runtime_reason"]
    assert r.report["mode"] == "serial" and r.audio.size > 0


def test_failed_check_escalates_on_torch(monkeypatch):
    """A first attempt that fails its check goes to the torch ladder (repair, more steps, serial), which reports."""
    from audiopd.lite import synth

    def failing(_config, lexicon=None):
        def run(audio, sample_rate, text, **_kw):
            return {"passed": False, "score": 0.1, "reasons": ["injected failure"], "bad_spans": [[0.1, 0.3]]}
        return run

    monkeypatch.setattr(synth, "default_checker", failing)
    monkeypatch.setattr(synth, "check_audio", lambda checker, audio, item, *a, **k: checker(audio, 0, item.text))
    tts = audiopd.load(runtime="auto")
    r = tts.synthesize(TEXT, mode="auto", seed=0)
    assert r.report["runtime"] == "torch"
    assert "failed its check (injected failure)" in r.report["runtime_reason"]
    # The ladder went on from NumPy's attempt: it repaired the failed span of those tokens (torch's own checker,
    # not the injected one, judged the repair) instead of decoding the first attempt again.
    first, second = r.report["attempts"][:2]
    assert (first["mode"], first["kind"], first["passed"]) == ("parallel", "full", False)
    assert second["kind"] == "repair" and second["repaired_spans"] == [[0.1, 0.3]]
    assert r.report["forward_passes"] == sum(a["forward_passes"] for a in r.report["attempts"])
    alone = audiopd.load(runtime="numpy").synthesize(TEXT, mode="parallel", seed=0)
    assert r.audio.size == alone.audio.size  # NumPy's durations kept
    with pytest.raises(LiteUnsupported, match="injected failure"):
        audiopd.load(runtime="numpy").synthesize(TEXT, mode="auto", seed=0)


def test_voice_settings_are_the_facades(lite):
    assert lite.config == voice_config(lite.model)
    assert lite.voices == ("adam", "heart", "joe") and lite.voice_name == "natural"
    r = lite.synthesize(TEXT, voice="heart", mode="parallel", seed=0, speed=1.5)
    slow = lite.synthesize(TEXT, voice="heart", mode="parallel", seed=0, speed=0.75)
    assert r.report["voice"] == "heart" and slow.audio.size > 1.6 * r.audio.size


def test_cli_check_without_torch(tmp_path):
    """``audiopd check --voice`` reads the voice's thresholds and listens with the NumPy recogniser."""
    wav = tmp_path / "hi.wav"
    audiopd.load(runtime="numpy").synthesize(TEXT, mode="parallel", seed=2).write(wav)
    got = _torch_free(f"""
import json
from audiopd.cli import main
rc = main(["check", {str(wav)!r}, "--text", {TEXT!r}, "--voice", "natural"])
print(json.dumps({{"rc": rc}}))
""")
    assert got["rc"] == 0


def test_batch_draws_one_seed_per_call(lite):
    """As the torch facade: with no seed, one is drawn for the whole call and every report says which."""
    rs = lite.synthesize_batch(["One.", "Two words."], mode="parallel")
    assert rs[0].report["seed"] == rs[1].report["seed"]
    with pytest.raises(TypeError, match="sequence of texts"):
        lite.synthesize_batch("One.")
