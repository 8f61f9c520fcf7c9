"""The one facade the CLI, the server and batch rendering call: ``load`` -> ``Synthesizer`` -> ``Result``.

    tts = audiopd.load()                      # the shipped default voice (joe) and the codec it names
    result = tts.synthesize("Hello there.", seed=1)
    result.audio, result.sample_rate, result.report, result.words

Text is cut into chunks at sentence boundaries (audiopd.text.chunk_text), each chunk is phonemised,
conditioned (durations predicted once, shared by both decoders) and decoded; chunks are joined with
short faded pauses (audiopd.synthesis.join). Chunks of one request, or of a whole ``synthesize_batch``
call, are decoded together in padded model batches grouped by length. ``mode="auto"`` checks every
chunk and escalates only the failing ones (audiopd.synthesis.auto); the report lists every attempt.
audiopd.synthesis.result turns each text's chunks into its ``Result`` (joined audio, word times, report).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from audiopd import check  # noqa: F401  (the facade's check; torch-free, lives in audiopd/__init__)
from audiopd import timing
from audiopd.artifacts import DEFAULT_VOICE
from audiopd.codec.base import Codec
from audiopd.errors import ArtifactError
from audiopd.model.precision import for_inference, precision_name, resolve_precision
from audiopd.synthesis.auto import Checker, Item, Renderer
from audiopd.synthesis.config import (  # noqa: F401  (the facade's settings, torch-free, re-exported from here)
    ATTENTION_WINDOW,
    FINE_PASSES,
    SPEED_RANGE,
    SynthesisConfig,
    SynthesisOptionError,
    VoiceFacade,
    check_compatible,
    default_checker,
    speaker_blurs,
    validate_options,
    voice_config,
)
from audiopd.synthesis.cost import CostModel, calibrate
from audiopd.synthesis.items import GroupOutcome, check_durations
from audiopd.synthesis.report import report_json  # noqa: F401  (re-exported for callers of the facade)
from audiopd.synthesis.result import Result, assemble_result
from audiopd.text import g2p
from audiopd.text.lexicon import Lexicon, LexiconLike, load_lexicon

if TYPE_CHECKING:
    from audiopd.checker.config import CheckerConfig

class Synthesizer(VoiceFacade):
    """A loaded voice + codec, ready to speak. Build with ``audiopd.load``; without a ``config`` it decodes with
    the voice's own defaults (``voice_config``)."""

    runtime = "torch"  # the torch-free path is audiopd.lite.synth.LiteSynthesizer (runtime "numpy")

    def __init__(self, model, codec: Codec, *, config: SynthesisConfig | None = None,
                 cost: CostModel | None = None, checker: Checker | None = None, precision: str = "auto") -> None:
        # The per-call networks' dtype (audiopd.model.precision): bfloat16 where the CPU computes it natively.
        dtype = resolve_precision(precision)
        self.precision = precision_name(dtype)
        self.model = for_inference(model, dtype).eval()
        self.codec = codec
        self.config = config or voice_config(model)
        self.config.validate()
        self.cost = cost or CostModel()
        self.cost.validate()
        # None = audiopd.checker.score, imported when first needed (tests may inject their own).
        self.checker = checker
        # Thresholds of that default checker: the voice artifact's checker.yaml, else CheckerConfig().
        self.checker_config: CheckerConfig | None = getattr(model, "checker_config", None)
        check_compatible(model, codec)
        # Each speaker's codec view (the voice's mel refiner, its own blur: VoiceInfo.smooth_frames), built now so
        # that a codec that cannot apply them fails at load time, not at the first sentence.
        self._speaker_codecs = _speaker_codecs(self.model, codec)

    def codec_for(self, speaker: int) -> Codec:
        """The codec that decodes speaker ``speaker``'s tokens: ``codec`` through the voice's mel refiner and blur."""
        return self._speaker_codecs.get(speaker, self.codec)

    def calibrate(self, **kwargs: Any) -> CostModel:
        """Measure this voice's decoding costs here and use them to pick first paths from now on."""
        kwargs.setdefault("window", self.config.parallel.attention_window)
        self.cost = calibrate(self.model, **kwargs)
        return self.cost

    def synthesize(self, text: str, *, voice: str | None = None, mode: str = "auto", steps: int | None = None,
                   seed: int | None = None, speed: float = 1.0, check: bool | None = None,
                   time_budget_s: float | None = None, check_level: str = "fast",
                   escalate_until: Callable[[], float | None] | None = None, lexicon: LexiconLike = None) -> Result:
        """Speak ``text``. ``check`` defaults to on for ``mode="auto"`` and off otherwise; ``check_level`` is
        "fast" (the voice's checker: a small phone recogniser) or "thorough" (PocketSphinx on every clip).
        ``lexicon``: this call's pronunciations (a dict of words to phones, a file: ``audiopd.text.lexicon``) over
        ``self.lexicon``'s.
        ``escalate_until``: auto mode reads it before each escalation stage, the ``time.perf_counter()`` time that
        stage must end by (None: no limit); a server passes what keeps the requests queued behind on time."""
        return self.synthesize_batch([text], voice=voice, mode=mode, steps=steps, seed=seed, speed=speed,
                                     check=check, time_budget_s=time_budget_s, check_level=check_level,
                                     escalate_until=escalate_until, lexicon=lexicon)[0]

    def synthesize_batch(self, texts: Sequence[str], *, voice: str | None = None, mode: str = "auto",
                         steps: int | None = None, seed: int | None = None, speed: float = 1.0,
                         check: bool | None = None, time_budget_s: float | None = None,
                         check_level: str = "fast",
                         escalate_until: Callable[[], float | None] | None = None,
                         lexicon: LexiconLike = None) -> list[Result]:
        """Speak several texts, decoding their chunks together in padded batches; one Result each.

        In each report ``forward_passes`` counts the passes of every batch the text took part in and
        ``wall_seconds`` is the whole call's wall time.
        """
        t_start = time.perf_counter()
        if isinstance(texts, str):
            raise TypeError("synthesize_batch expects a sequence of texts, not one str")
        validate_options(mode, steps, seed, speed, time_budget_s, check_level)
        seed = secrets.randbelow(2**31) if seed is None else int(seed)
        speaker = self._speaker(voice)
        words = self._lexicon_for(lexicon)
        checker, checking, warnings, checker_kind = self._resolve_checker(mode, check, check_level, words)
        with timing.span(timing.FRONTEND):
            per_text = [self._items(t, speaker, words) for t in texts]
        items = [it for chunk_items in per_text for it in chunk_items]
        with timing.span(timing.DURATIONS):
            predicted = self._predict_durations(items, speed)
        renderer = Renderer(self.model, self.codec, parallel=self.config.parallel, serial=self.config.serial,
                            auto=self.config.auto, cost=self.cost, checker=checker, codec_for=self.codec_for)
        deadline = None if time_budget_s is None else t_start + time_budget_s
        outcomes = {}
        total_frames = max(1, sum(it.frames for it in items))
        for g, group in enumerate(self._groups(items, None if mode == "serial" else self.config.max_padding)):
            members = [items[i] for i in group]
            with timing.span(timing.CONDITION):
                # A lone chunk's condition is the one its durations came from: no second encoder pass.
                cond = predicted[id(members[0])] if len(members) == 1 else self._condition(members)
            out = renderer.render_group(members, cond, mode=mode, steps=steps, seed=seed, group=g,
                                        checking=checking, deadline=deadline,
                                        floor_share=sum(it.frames for it in members) / total_frames,
                                        escalate_until=escalate_until)
            outcomes.update({id(items[i]): out for i in group})
        wall = time.perf_counter() - t_start
        meta = {"voice": self._speaker_name(speaker), "seed": seed, "requested_mode": mode, "speed": speed,
                "time_budget_s": time_budget_s, "cost_model": self.cost.source, "warnings": warnings,
                "checker": checker_kind, "check_level": check_level if checking else None, "codec": self.codec.name,
                "decoder": self.codec.decoder, "runtime": "torch", "precision": self.precision,
                "lexicon": words.report() if words else None}
        return [assemble_result(chunk_items, outcomes, meta, wall, sample_rate=self.sample_rate,
                                frame_rate=self.frame_rate, join=self.config.join) for chunk_items in per_text]

    def resume_auto(self, items: Sequence[Item], *, seed: int, steps: int | None = None,
                    check_level: str = "fast", first_run: int = 0,
                    lexicon: Lexicon | None = None) -> dict[int, GroupOutcome]:
        """Auto mode's ladder after a first attempt made elsewhere: ``items[g]`` holds its checked parallel attempt
        (the NumPy runtime's, ``audiopd.lite``, decoded as group ``g`` with run ids below ``first_run``); each
        item that failed goes on alone as group ``g`` (repair of those tokens, more steps, serial) with its own
        durations. ``lexicon``: the one the items were phonemized with (None: ``self.lexicon``), which the checker
        expects. Returns ``{id(item): outcome}`` for the items that went on; the rest need nothing more."""
        words = self.lexicon if lexicon is None else lexicon
        checker, checking, _, _ = self._resolve_checker("auto", True, check_level, words)
        renderer = Renderer(self.model, self.codec, parallel=self.config.parallel, serial=self.config.serial,
                            auto=self.config.auto, cost=self.cost, checker=checker, codec_for=self.codec_for,
                            first_run=first_run)
        outcomes = {}
        for g, it in enumerate(items):
            if it.best().passed is not False:
                continue
            with timing.span(timing.CONDITION):
                cond = self._condition([it])
            outcomes[id(it)] = renderer.render_group([it], cond, mode="auto", steps=steps, seed=seed, group=g,
                                                     checking=checking, deadline=None, resume=True)
        return outcomes

    # ------------------------------------------------------------------------------------ helpers
    def _resolve_checker(self, mode: str, check: bool | None, level: str = "fast",
                         lexicon: Lexicon | None = None) -> tuple[Checker | None, bool, list[str], str | None]:
        """(checker, checking, warnings, which thresholds: "voice", "default", "custom" or None = unchecked)."""
        want = (mode == "auto") if check is None else bool(check)
        if not want:
            return None, False, [], None
        if self.checker is not None:
            return self.checker, True, [], "custom"
        try:
            # Built per call (a cheap closure), so a changed checker_config takes effect at once.
            from audiopd.checker.config import CheckerConfig, at_level

            # the recogniser in torch, loaded here anyway: 2x NumPy's speed at 20 s (audiopd.checker.score)
            run = default_checker(at_level(self.checker_config or CheckerConfig(), level), runtime="torch",
                                  lexicon=lexicon)
        except ImportError as exc:
            if check:  # explicitly asked for: an installation problem the user must hear about
                raise ArtifactError(f"the checker is unavailable: {exc}") from None
            return None, False, [f"checker unavailable ({exc}); output not checked"], None
        return run, True, [], "default" if self.checker_config is None else "voice"

    def _predict_durations(self, items: list[Item], speed: float) -> dict[int, Any]:
        """Each item's durations, predicted and checked; -> ``{id(item): its FrameCondition}``, which a batch of
        that item alone decodes with (the same tensors ``_condition`` would build again: 1.5 / 2.5 / 9.2 ms of a
        1 / 5 / 20 s synthesis, ``audiopd bench --stages``)."""
        conds = {}
        for it in items:
            cond = self.model.condition(torch.tensor([it.ids]), torch.tensor([it.speaker]), speed=speed)
            it.durations = cond.durations[0].numpy().astype(np.int64)
            check_durations(it, speed=speed, max_token_s=self.config.max_token_s, frame_rate=self.frame_rate)
            conds[id(it)] = cond
        return conds

    def _groups(self, items: list[Item], max_padding: float | None = None) -> list[list[int]]:
        """Length-sorted batches under max_batch items and max_batch_frames padded frames; with ``max_padding``,
        an item joins a batch only if it is at least (1 - max_padding) as long as the batch's longest."""
        order = sorted(range(len(items)), key=lambda i: (-items[i].frames, i))
        cap = self.config.max_batch_frames
        groups: list[list[int]] = []
        for i in order:
            g = groups[-1] if groups else None
            # Sorted longest first, so g[0] sets the padded length of the group.
            fits = g and len(g) < self.config.max_batch and items[g[0]].frames * (len(g) + 1) <= cap
            if fits and max_padding is not None:
                fits = items[i].frames >= (1.0 - max_padding) * items[g[0]].frames
            if fits:
                g.append(i)
            else:
                groups.append([i])
        return groups

    def _condition(self, items: list[Item]):
        lmax = max(len(it.ids) for it in items)
        ph = torch.zeros(len(items), lmax, dtype=torch.long)
        dur = torch.zeros(len(items), lmax, dtype=torch.long)
        for i, it in enumerate(items):
            ph[i, : len(it.ids)] = torch.tensor(it.ids)
            dur[i, : len(it.ids)] = torch.from_numpy(it.durations)
        spk = torch.tensor([it.speaker for it in items])
        return self.model.condition(ph, spk, durations=dur)


def _speaker_codecs(model, codec: Codec) -> dict[int, Codec]:
    """Speaker -> its codec view: the voice's mel refiner for that speaker, then its blur (``speaker_blurs``)."""
    refiner = getattr(model, "refiner", None)
    return {i: (codec.refined(refiner.for_speaker(i)) if refiner is not None else codec).smoothed(f)
            for i, f in speaker_blurs(model).items()}


def load(voice: str | Path | Any | None = None, *, codec: str | Path | Codec | None = None,
         decoder: str | None = None, config: SynthesisConfig | None = None, precision: str = "auto",
         lexicon: LexiconLike = None) -> Synthesizer:
    """Load a voice (a shipped name, a directory path such as ./myvoice, or a VoiceModel) and the codec it names;
    ``decoder`` picks the codec's decoder (e.g. "hq" or "fast"; None = the codec's default, "default" too);
    ``precision`` the per-call networks' dtype (``audiopd.model.precision``: "auto", "float32" or "bfloat16");
    ``lexicon`` the user's pronunciations (a file, a mapping of words to phones: ``audiopd.text.lexicon``)."""
    from audiopd.codec import load_codec
    from audiopd.model.voice import VoiceModel, load_voice

    words = load_lexicon(lexicon)  # a bad lexicon fails before the voice loads

    model = voice if isinstance(voice, VoiceModel) else load_voice(voice or DEFAULT_VOICE)
    decoder = None if decoder == "default" else decoder
    if codec is None:
        if not model.info.codec:
            raise ArtifactError("the voice names no codec; pass codec=... explicitly")
        codec = load_codec(model.info.codec, decoder=decoder)
    elif not isinstance(codec, Codec):
        codec = load_codec(codec, decoder=decoder)
    else:
        codec.select_decoder(decoder)
    # A process that loads torch serves many texts (server, render, bench, compare): it parses the pronouncing
    # dictionary now (~0.33 s) instead of scanning it word by word (~1-2 ms a word), which suits a one-off `say`.
    g2p.load_dictionary()
    tts = Synthesizer(model, codec, config=config, precision=precision)
    tts.lexicon = words
    return tts
