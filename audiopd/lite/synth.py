"""The torch-free synthesizer: the facade's ``synthesize`` for what a one-off ``audiopd say`` asks, in NumPy.

It decodes each chunk with the voice's parallel settings (``audiopd.synthesis.config.voice_config``), decodes the
tokens with the codec's fast decoder through the voice's mel refiner, checks the audio with the phone recogniser and
assembles the same ``Result`` as ``audiopd.pipeline.Synthesizer``. Everything beyond a checked first attempt stays
with torch, loaded only when needed: span repair, more steps and the serial fallback (auto mode's ladder, when the
first attempt fails its check), serial mode, the thorough checker and time budgets. ``load(runtime="auto")`` hands
such requests to the torch facade; ``runtime="numpy"`` refuses them with the reason.

Its sampler draws from NumPy's generator, not torch's, so one seed gives different (equally likely) tokens on the two
runtimes; tests/lite compares the networks' outputs and the greedy decode exactly.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from audiopd import timing
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.errors import ArtifactError
from audiopd.lite import RUNTIMES, LiteUnsupported
from audiopd.synthesis.config import (
    SynthesisConfig,
    SynthesisOptionError,
    VoiceFacade,
    check_compatible,
    default_checker,
    speaker_blurs,
    validate_options,
    voice_config,
)
from audiopd.synthesis.items import (
    FULL,
    PARALLEL,
    Attempt,
    GroupOutcome,
    Item,
    Stage,
    check_audio,
    check_durations,
    fit_audio,
    seed_for,
)
from audiopd.synthesis.result import Result, assemble_result
from audiopd.text.lexicon import Lexicon, LexiconLike, load_lexicon


class LiteSynthesizer(VoiceFacade):
    """A voice loaded for the NumPy runtime. ``fallback`` builds the torch facade for requests beyond a checked
    first attempt (None: such requests raise ``LiteUnsupported``)."""

    runtime = "numpy"

    def __init__(self, voice, decoder, *, config: SynthesisConfig | None = None,
                 fallback: Callable[[], Any] | None = None) -> None:
        self.model = voice
        self.codec = decoder
        self.config = config or voice_config(voice)
        self.config.validate()
        check_compatible(voice, decoder)
        self.checker_config = getattr(voice, "checker_config", None)
        self._fallback = fallback
        self._torch = None
        refiner = voice.refiner
        # Speaker -> (mel refiner, blur), as the torch facade builds its codec views; others take the codec's blur.
        self._views = {i: (refiner.for_speaker(i) if refiner is not None else None, float(f))
                       for i, f in speaker_blurs(voice).items()}

    def torch_synthesizer(self):
        """The torch facade for the same voice, codec and settings (imports torch on first use)."""
        if self._torch is None:
            if self._fallback is None:
                raise LiteUnsupported("this synthesizer was loaded with runtime='numpy', which has no torch fallback")
            self._torch = self._fallback()
        self._torch.lexicon = self.lexicon  # one lexicon for both runtimes, as set now
        return self._torch

    def unsupported(self, mode: str, check_level: str, time_budget_s: float | None,
                    escalate_until: Callable[[], float | None] | None = None) -> str | None:
        """Why the NumPy path cannot serve a request, or None when it can."""
        par = self.config.parallel
        if mode == "serial":
            return "serial decoding runs on torch"
        if check_level != "fast":
            return f"the {check_level} checker runs on torch"
        if time_budget_s is not None or escalate_until is not None:
            return "time budgets need the torch ladder's cost model"
        if par.remask or par.sampling.ras_window > 0 or par.fine_sampling.ras_window > 0:
            return "re-masking and repetition-aware sampling run on torch"
        return None

    def synthesize(self, text: str, *, voice: str | None = None, mode: str = "auto", steps: int | None = None,
                   seed: int | None = None, speed: float = 1.0, check: bool | None = None,
                   time_budget_s: float | None = None, check_level: str = "fast",
                   escalate_until: Callable[[], float | None] | None = None, lexicon: LexiconLike = None) -> Result:
        """``audiopd.pipeline.Synthesizer.synthesize``'s contract; the report's ``runtime`` says which ran."""
        t_start = time.perf_counter()
        validate_options(mode, steps, seed, speed, time_budget_s, check_level)
        extra = load_lexicon(lexicon)  # checked before anything runs, on either runtime; torch takes it as loaded
        kwargs = dict(voice=voice, mode=mode, steps=steps, speed=speed, check=check, time_budget_s=time_budget_s,
                      check_level=check_level, escalate_until=escalate_until, lexicon=extra)
        why = self.unsupported(mode, check_level, time_budget_s, escalate_until)
        if why is not None:
            if self._fallback is None:
                raise LiteUnsupported(f"the NumPy runtime cannot serve this request: {why}")
            return _on_torch(self.torch_synthesizer().synthesize(text, seed=seed, **kwargs), why)
        seed = secrets.randbelow(2**31) if seed is None else int(seed)
        speaker = self._speaker(voice)
        words = self._lexicon_for(extra)  # the call's words over the voice's (a loaded lexicon is taken as it is)
        checking = (mode == "auto") if check is None else bool(check)
        checker = self._checker(check_level, words) if checking else None
        with timing.span(timing.FRONTEND):
            items = self._items(text, speaker, words)
        k = steps or (self.config.auto.first_steps if mode == "auto" else self.config.parallel.steps)
        par = dataclasses.replace(self.config.parallel, steps=k)
        outcomes = {}
        for g, it in enumerate(items):
            outcomes[id(it)] = self._render(it, g, par, seed=seed, speed=speed, checker=checker)
        runtime, why = self.runtime, None
        if mode == "auto" and checking and any(it.attempts[-1].passed is False for it in items):
            failed = "; ".join(r for it in items for r in (it.attempts[-1].verdict or {}).get("reasons", []))
            why = (f"the NumPy first attempt failed its check ({failed or 'no reason given'}); the torch ladder "
                   "went on from its tokens")
            if self._fallback is None:
                raise LiteUnsupported(why)
            # The ladder repairs what NumPy decoded (same durations, same seed streams) instead of starting over.
            went_on = self.torch_synthesizer().resume_auto(items, seed=seed, steps=steps, check_level=check_level,
                                                           first_run=len(items), lexicon=words)
            for key, out in went_on.items():
                out.runs = {**outcomes[key].runs, **out.runs}  # the NumPy pass counts too
                outcomes[key] = out
            runtime = "torch"
        meta = {"voice": self._speaker_name(speaker), "seed": seed, "requested_mode": mode, "speed": speed,
                "time_budget_s": time_budget_s, "cost_model": "none (NumPy runtime: parallel first)", "warnings": [],
                "checker": None if not checking else ("voice" if self.checker_config is not None else "default"),
                "check_level": check_level if checking else None, "codec": self.codec.name, "decoder": "fast",
                "runtime": runtime, "lexicon": words.report() if words else None}
        if why is not None:
            meta["runtime_reason"] = why
        return assemble_result(items, outcomes, meta, time.perf_counter() - t_start, sample_rate=self.sample_rate,
                               frame_rate=self.frame_rate, join=self.config.join)

    def synthesize_batch(self, texts: Sequence[str], **kwargs: Any) -> list[Result]:
        """``synthesize`` of each text in turn (one item at a time: batching pays nothing on a CPU at these sizes,
        ``SynthesisConfig.max_padding`` says why); the same keyword arguments and seed for every text."""
        if isinstance(texts, str):
            raise TypeError("synthesize_batch expects a sequence of texts, not one str")
        if kwargs.get("seed") is None:  # one seed for the call, as the torch facade draws (its report's ``seed``)
            kwargs["seed"] = secrets.randbelow(2**31)
        return [self.synthesize(t, **kwargs) for t in texts]

    # ------------------------------------------------------------------------------------ helpers
    def _render(self, item: Item, group: int, par, *, seed: int, speed: float, checker) -> GroupOutcome:
        from audiopd.lite.decode import decode_parallel

        with timing.span(timing.DURATIONS):
            frames, durations = self.model.condition(np.asarray(item.ids, dtype=np.int64), item.speaker, speed=speed)
            item.durations = np.asarray(durations, dtype=np.int64)
            check_durations(item, speed=speed, max_token_s=self.config.max_token_s, frame_rate=self.frame_rate)
        t0 = time.perf_counter()
        rng = np.random.default_rng(seed_for(seed, group, 0))
        res = decode_parallel(self.model, frames, par, rng)
        n = item.frames
        refine, blur = self._views.get(item.speaker, (None, self.codec.smooth_frames))
        with timing.span(timing.CODEC):
            audio = fit_audio(self.codec.decode(res.codes[:, :n], refine=refine, smooth_frames=blur), n,
                              self.sample_rate, self.frame_rate)
        verdict = None
        if checker is not None:
            with timing.span(timing.CHECKER):
                verdict = check_audio(checker, audio, item, res.codes[:, :n], res.confidence[:n],
                                      sample_rate=self.sample_rate, frame_rate=self.frame_rate)
        item.attempts.append(Attempt(mode=PARALLEL, kind=FULL, max_steps=par.steps, steps=res.steps,
                                     forward_passes=res.forward_passes, seconds=time.perf_counter() - t0, run=group,
                                     codes=res.codes[:, :n], confidence=res.confidence[:n], audio=audio,
                                     verdict=verdict))
        return GroupOutcome(first_path=PARALLEL, stages=[Stage(PARALLEL, FULL, par.steps)], budget_exhausted=False,
                            runs={group: res.forward_passes})

    def _checker(self, level: str, lexicon: Lexicon | None):
        from audiopd.checker.config import CheckerConfig, at_level

        return default_checker(at_level(self.checker_config or CheckerConfig(), level), lexicon=lexicon)


def _on_torch(result: Result, why: str) -> Result:
    result.report["runtime"] = "torch"
    result.report["runtime_reason"] = why
    return result


def load(voice: str | Path | None = None, *, runtime: str = "auto", codec: str | Path | None = None,
         decoder: str | None = None, config: SynthesisConfig | None = None, precision: str = "auto",
         lexicon: LexiconLike = None):
    """``audiopd.load`` for ``runtime`` "numpy" (a ``LiteSynthesizer``, refusing what it cannot serve) or "auto"
    (a ``LiteSynthesizer`` that hands what it cannot serve to torch, or the torch facade itself when the voice or
    codec needs torch: another decoder than ``fast``, a codec other than a mel codec). NumPy computes in float32;
    ``precision`` is torch's (``audiopd.model.precision``), for whatever torch serves; ``lexicon`` the user's
    pronunciations (``audiopd.text.lexicon``), both runtimes'."""
    if runtime not in RUNTIMES:
        raise SynthesisOptionError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
    words = load_lexicon(lexicon)

    def on_torch():
        from audiopd.pipeline import load as torch_load

        return torch_load(voice, codec=codec, decoder=decoder, config=config, precision=precision, lexicon=words)

    if runtime == "torch" or not isinstance(voice, (str, Path, type(None))):
        if runtime == "numpy":
            raise LiteUnsupported("the NumPy runtime loads voice artifacts (a name or a directory), not a model object")
        return on_torch()
    from audiopd.lite.vocoder import LiteMelDecoder
    from audiopd.lite.voice import LiteVoice

    model = LiteVoice.load(voice or DEFAULT_VOICE)
    name = codec or model.info.codec
    if not name:
        raise ArtifactError("the voice names no codec; pass codec=... explicitly")
    try:
        dec = LiteMelDecoder.load(name, decoder=decoder)
    except LiteUnsupported:
        if runtime == "numpy":
            raise
        return on_torch()
    tts = LiteSynthesizer(model, dec, config=config, fallback=on_torch if runtime == "auto" else None)
    tts.lexicon = words
    return tts


__all__: Sequence[str] = ("RUNTIMES", "LiteSynthesizer", "LiteUnsupported", "load")
