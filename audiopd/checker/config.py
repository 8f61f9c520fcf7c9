"""Checker thresholds, each documented with what it measures and how it was calibrated.

Two listeners align the intended phones with the audio (``recognizer``):

* ``"ctc"`` (the default, the "fast" check level): the small CTC phone recogniser ``checkers/phones16k``
  (``audiopd.checker.phones``; findings in ``audiopd.checker.ctc``). Its thresholds (``max_ctc_gap``,
  ``max_phone_deletions``, ``max_phone_insertions``, ``max_per``) were set on the calibration split, sentences the
  recogniser never heard (recipes/checker):

      python -m audiopd.eval.checker_bench --split calib --n 80 --checker-asr never

  80 flite clips (slt, rms, awb, kal16 in turn), clean and with every fault of ``audiopd.eval.faults``. Clean
  worst -> default: gap 1.30 -> 2.5, unheard phones in 12 edits 3 -> 5, extra phones 2 -> 3, phone error rate
  0.15 -> 0.4; on that set 0/80 false alarms, 78/80 repeats and 80/80 of every other fault. The same values hold
  for the shipped voice's own output (its checker.yaml says how it was checked). The measured figures on unseen
  sentences: samples/report.md, "The fast checker".
* ``"sphinx"`` (the "thorough" level, ``at_level(config, "thorough")``): PocketSphinx forced alignment, and
  recognition on every clip. About 50x the cost of the phone recogniser; its thresholds below
  (``min_window_score`` ... ``max_wer``) were calibrated as follows.

PocketSphinx calibration set (``python -m audiopd.eval.checker_bench --split calib --recognizer sphinx``): flite
renderings (voices slt, rms, awb, kal16 in turn) of fortune-file sentences of 7-22 words in the
*calibration* split (a content hash sends one sentence in four there): 40 clips, each clean and
with every fault of ``audiopd.eval.faults`` (320 clips), plus 120 more clean clips (offset 60) for
the false-alarm tail. Each threshold sits beyond the worst clean value seen, with a margin;
figures below are "clean worst -> faulty typical" on that set. With these defaults the
calibration set gives 0/160 false alarms and 100% detection of every fault type; the benchmark
(default split, sentences never used here) measures what holds on unseen text:

    python -m audiopd.eval.checker_bench --n 40 --recognizer sphinx  (320 clips, 4 voices, 1,301 s of audio)
    asr="borderline" (default): false alarms 1/40 (2.5%), detection 100% for each of the 7 faults,
                                checker RTF 0.045 (recognition ran on 4 of 40 clean clips)
    asr="always":               false alarms 2/40 (5.0%), detection 100%, RTF 0.46

Re-run after the recogniser/aligner became order-independent (6df9ec3, 2026-11-30; same command, a second
job on the other core): false alarms 1/40, detection 100% for each fault, checker RTF 0.136.

A voice's own output may need other thresholds: a voice artifact can ship ``checker.yaml`` (see
``audiopd.model.voice``): the flite voice's, calibrated on its output, is
``recipes/voice/conf/checker.yaml`` (``python -m audiopd.eval.checker_bench --voice flite``), joe's (the default
voice) ``recipes/voice/conf/checker_joe.yaml``.

The one benchmark false alarm is a kal16 clip whose last word scores -81 in a 0.3 s window
(calibration worst -51); WORLD resynthesis of 24 clean calibration clips (harvest F0,
continuous and with quantised F0/envelope) gave 0/24 false alarms.

Every check yields ``badness = value / threshold``; a check fails at badness >= 1 and the verdict
score is ``1 / (1 + max_badness**2)``, so ``passed`` is exactly ``score > 0.5``.

The acoustic-score thresholds are in PocketSphinx's log units for flite-like audio; output of a
lower-quality vocoder scores lower everywhere, so re-run the benchmark on that audio before
trusting them there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

ASR_MODES = ("always", "borderline", "never")
# "ctc": the small phone recogniser of audiopd.checker.phones (fast, the default); "sphinx": PocketSphinx forced
# alignment, the thorough option (about 50x the cost; the checks and figures above were set with it).
RECOGNIZERS = ("ctc", "sphinx")
# The checker's two levels: "fast" runs a config as given (the shipped voice's: the CTC recogniser, PocketSphinx
# recognition only on borderline clips); "thorough" aligns with PocketSphinx and recognises every clip, with the
# same config's sphinx thresholds (calibrated separately, on the same clips).
CHECK_LEVELS = ("fast", "thorough")


@dataclass(frozen=True)
class CheckerConfig:
    """Thresholds of ``audiopd.checker.score``. Units: seconds, dB, PocketSphinx log-score per 10 ms frame."""

    # --- the listener: which recogniser aligns the intended phones ---
    recognizer: str = "ctc"
    recognizer_artifact: str = "phones16k"  # checkers/<name>, rebuilt by recipes/checker
    # CTC phone recogniser checks (audiopd.checker.ctc): the worst 0.3 s mean gap between the best and the
    # aligned phone's log-posterior; unheard / extra phones of greedy decoding among any ``phone_edit_window``
    # consecutive edit operations against the intended phones; the phone error rate.
    # Defaults calibrated on teacher audio (flite, see the module doc); a voice's checker.yaml sets its own.
    ctc_window_s: float = 0.30
    max_ctc_gap: float = 2.5  # clean worst 1.30; skips, swaps, truncations and silences typically 3-9
    max_phone_deletions: int = 5  # clean worst 3; skips and silences typically 6-10
    max_phone_insertions: int = 3  # clean worst 2; repeats typically 5-9
    phone_edit_window: int = 12  # about a second of speech at 12-15 phones per second
    max_per: float = 0.4  # clean worst 0.15; another sentence's audio 0.8-1.0
    # On clips of fewer than ``per_full_phones`` phones (a 1-2 s sentence) the PER limit grows with the rate's
    # sampling noise, by ``short_per_slack * (sqrt(per_full_phones / n) - 1)``; 0 keeps one limit for every clip.
    # Off by default (flite calibration used 7-22 word sentences only); voices/natural's checker.yaml sets it.
    per_full_phones: int = 30
    short_per_slack: float = 0.0

    # --- forced alignment (PocketSphinx, phone level; recognizer="sphinx") ---
    # Worst mean per-frame acoustic score over any 0.3 s window of the aligned phones. A skipped,
    # repeated or garbled stretch forces phones onto the wrong audio. Clean worst -57; skip/silence
    # typical -100..-130, repeat -55..-145 (160 clean clips: worst -51). Window: one short word.
    align_window_s: float = 0.30
    min_window_score: float = -62.0
    # Mean per-frame score over the whole utterance: wrong sentence (swap) <= -45, clean >= -17.5.
    min_mean_score: float = -30.0
    # Loud audio (within 25 dB of the speech level) that the aligner had to label silence: speech
    # the text does not account for (repeats, stray words). Clean: 0 in 38 of 40 clips, 0.06 s and
    # 0.5 s in the others; repeats typically 0.4-1.1 s.
    max_unexplained_speech_s: float = 0.30
    unexplained_level_db: float = 25.0
    # A word is "squeezed" when every phone sits at the aligner's 30 ms minimum: the audio has no
    # room for it. Reported per word; the run length of squeezed words is a metric only.
    squeeze_phone_s: float = 0.031

    # --- ASR (free recognition against the normalised text) ---
    # "borderline" (default): run it only when another check's badness is in [asr_borderline, 1),
    # i.e. when the clip is suspicious but not already failed; "always"; "never". On the
    # calibration set (160 clean, 280 faulty clips) ASR was never the only check to catch a fault,
    # but run on every clip it caused every false alarm (6 of 160: PocketSphinx splits words such
    # as "misfortunes" -> "miss fortune" and hallucinates short words); "borderline" also cuts the
    # checker's cost about 4x, as recognition is ~80% of it.
    asr: str = "borderline"
    asr_borderline: float = 0.6
    # Consecutive reference words the recogniser did not hear at all: clean worst 2 (160 clips),
    # skips 2-4, truncation 3-9. Substitutions are common on clean flite audio and are not counted.
    max_deletion_run: int = 3
    # Consecutive extra words heard: clean worst 3 (1 clip of 160; 4 once on the benchmark set),
    # repeats 1-4. Only meaningful together with the alignment checks, hence "borderline".
    max_insertion_run: int = 3
    # Whole-utterance WER (errors / reference words): clean worst 0.88 (a split compound word in a
    # 7-word sentence), wrong sentence >= 0.85. 1.0 = more errors than words.
    max_wer: float = 1.0

    # --- signal ---
    # Frames within ``active_db`` of the speech level (95th percentile frame energy) are speech.
    active_db: float = 35.0
    # Longest silence inside the speech region: clean worst 0.27 s (comma pauses), silenced spans
    # >= 0.49 s, inserted pauses 2.5 s. With ``durations`` the limit grows to the longest expected
    # unit plus ``silence_slack_s`` (a predicted pause is not a fault).
    max_internal_silence_s: float = 0.40
    silence_slack_s: float = 0.25
    # Truncation: the last ``end_margin_s`` still within ``end_level_db`` of the speech level.
    # Clean flite endings decay more than 40 dB below it.
    end_margin_s: float = 0.03
    end_level_db: float = 20.0
    # Clipping: fraction of samples in flat-topped runs at full scale.
    max_clipped_fraction: float = 0.001
    # Drop-outs: digital silence of 20-300 ms inside speech with speech within ``dropout_edge_db``
    # of the speech level on both sides. Clean: none.
    dropout_min_s: float = 0.02
    dropout_max_s: float = 0.30
    dropout_edge_db: float = 30.0
    # Noise bursts: runs of frames within ``noise_level_db`` of the speech level whose spectral
    # flatness is >= ``noise_flatness`` (white noise ~0.5; clean speech frames worst 0.22, kal16).
    # On 100 clean calibration clips no frame qualified at all; on 200 noise faults (0-6 dB above
    # the speech level, added over speech, which lowers the flatness) the shortest run was 60 ms.
    noise_flatness: float = 0.30
    noise_level_db: float = 12.0
    min_noise_s: float = 0.04

    # --- tokens (codes [Q, T]); provisional, set on synthetic sequences until a codec ships ---
    # VALL-E 2 style repetition: share of non-constant level-0 trigrams seen in the last second.
    repetition_n: int = 3
    repetition_window_s: float = 1.0
    max_repetition_ratio: float = 0.30
    # Confidence (probability of the chosen level-0 token): share of frames below the floor.
    confidence_floor: float = 0.10
    max_low_confidence: float = 0.30
    # Length vs the expected duration (sum of ``durations``), either way: x1.5 longer or shorter.
    max_length_ratio: float = 1.5

    def __post_init__(self) -> None:
        if self.recognizer not in RECOGNIZERS:
            raise ValueError(f"CheckerConfig.recognizer must be one of {', '.join(RECOGNIZERS)}, not {self.recognizer!r}")
        if self.asr not in ASR_MODES:
            raise ValueError(f"CheckerConfig.asr must be one of {', '.join(ASR_MODES)}, not {self.asr!r}")
        positive = ("align_window_s", "max_unexplained_speech_s", "max_internal_silence_s", "end_margin_s",
                    "max_clipped_fraction", "dropout_min_s", "min_noise_s", "repetition_window_s",
                    "max_length_ratio", "max_wer", "ctc_window_s", "max_ctc_gap", "max_per")
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f"CheckerConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if self.short_per_slack < 0 or self.per_full_phones < 1:
            raise ValueError("CheckerConfig.short_per_slack must be >= 0 and per_full_phones >= 1")
        if min(self.max_deletion_run, self.max_insertion_run, self.max_phone_deletions,
               self.max_phone_insertions, self.phone_edit_window) < 1 or self.repetition_n < 2:
            raise ValueError("CheckerConfig: run lengths must be >= 1 and repetition_n >= 2")
        if self.dropout_max_s < self.dropout_min_s:
            raise ValueError("CheckerConfig.dropout_max_s must be >= dropout_min_s")


def at_level(config: CheckerConfig, level: str) -> CheckerConfig:
    """``config`` for a check level (``CHECK_LEVELS``); raises ValueError for an unknown level."""
    if level not in CHECK_LEVELS:
        raise ValueError(f"check level must be one of {', '.join(CHECK_LEVELS)}, not {level!r}")
    if level == "thorough":
        return dataclasses.replace(config, recognizer="sphinx", asr="always")
    return config
