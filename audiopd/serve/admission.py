"""Admission control for the one synthesis worker: what a request is expected to cost, and whether it fits.

A request is admitted only if the worker time queued ahead of it plus its own expected time fits its time
budget (counted from its arrival; ``EngineConfig.budget_base_s`` + ``budget_per_char_s`` x characters).
Otherwise it is refused at once, 429 with ``Retry-After``: the seconds until the queue ahead would have
drained enough, rounded up, at least 1. Waiting in an unbounded queue helps nobody: in the load test of
2026-12-05 (8 clients, auto mode) accepted requests waited p50 92 s, p95 207 s; a client told "busy, retry
in 3 s" at once can retry, go elsewhere, or tell its user. One exception: with nothing ahead a request is
always admitted, whatever its estimate (its budget still bounds it: 503, or a stream cut after the
sentences sent), so an idle server never refuses for want of an estimate.

Cost: RTF x audio seconds, the audio seconds predicted from the length of the text's spoken form
(characters x the voice's seconds of audio per character / speed; "7" * 200 says 1,199 characters),
plus a fixed cost per piece. Both the RTF (per mode) and the
seconds per character are measured on the server's own pieces as they finish, starting from conservative
priors: a table measured elsewhere would not know what else this machine is doing (the CostModel of
``audiopd.synthesis.cost`` predicts decoding alone, without the codec, the checker or a busy CPU). The RTF
estimate is mean + 2 x mean deviation, as TCP's retransmission timer (RFC 6298) estimates a round trip,
because auto mode's escalation makes some pieces cost several times the mean and an underestimate
admits a request that then runs out of time.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class CostConfig:
    # Worker seconds per second of audio before a mode has been measured. The shipped voice (joe) measured 0.04-0.07
    # in parallel and auto mode and 0.18 in serial mode on this 2-core machine with a training job on the other core
    # (one thread, 2026-12-06); 0.5 keeps the first seconds after a start cautious (refusing a little too much,
    # never admitting a request that then runs out of time), and a mode's second piece replaces it (its first pays
    # for loading, see ``observe``).
    prior_rtf: float = 0.5
    # Seconds of audio per character of the text's spoken form at speed 1 before any is measured (joe: 0.048-0.083,
    # short texts the most, as their pauses weigh more).
    prior_audio_s_per_char: float = 0.08
    # Worker seconds a piece costs whatever its length (text analysis, the codec's and checker's set-up; joe: ~0.03).
    piece_overhead_s: float = 0.05
    # Gain of the running means (RFC 6298's alpha; its beta, 1/4, for the deviation): a piece moves an estimate
    # by 1/8 of its surprise, so one outlier does not swing admission, eight consistent pieces do.
    gain: float = 0.125
    deviations: float = 2.0  # the estimate used is mean + this many mean deviations

    def validate(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"CostConfig.{f.name} must be a finite number, got {value!r}")
        if not (self.prior_rtf > 0 and self.prior_audio_s_per_char > 0 and self.piece_overhead_s >= 0
                and 0 < self.gain <= 1 and self.deviations >= 0):
            raise ValueError("CostConfig: priors must be > 0, piece_overhead_s and deviations >= 0, gain in (0, 1]")


def cost_key(mode: str, check_level: str) -> str:
    """What the RTF is measured per: the mode, and in auto mode the checker's level (thorough costs ~50x)."""
    return f"auto/{check_level}" if mode == "auto" else mode


class CostEstimator:
    """Running estimates of a piece's worker seconds (thread-safe: observed by the worker, read by admission)."""

    def __init__(self, config: CostConfig | None = None) -> None:
        self.config = config or CostConfig()
        self.config.validate()
        self._lock = threading.Lock()
        self._audio_per_char = self.config.prior_audio_s_per_char
        self._rtf: dict[str, tuple[float, float]] = {}  # key -> (mean, mean deviation)
        self._cold: set[str] = set()  # keys whose first piece has been seen (and not measured)

    def rtf(self, key: str) -> float:
        """The RTF admission uses for ``key``: mean + deviations x mean deviation, or the prior if unmeasured."""
        with self._lock:
            mean, dev = self._rtf.get(key, (self.config.prior_rtf, 0.0))
        return mean + self.config.deviations * dev

    def audio_s(self, chars: int, speed: float) -> float:
        """Predicted seconds of audio for ``chars`` characters of text at ``speed``."""
        with self._lock:
            per_char = self._audio_per_char
        return chars * per_char / speed

    def piece_s(self, key: str, chars: int, speed: float) -> float:
        """Expected worker seconds of one piece of ``chars`` characters."""
        return self.config.piece_overhead_s + self.rtf(key) * self.audio_s(chars, speed)

    def observe(self, key: str, chars: int, speed: float, audio_s: float, worker_s: float) -> None:
        """A finished piece: ``worker_s`` seconds of the worker for ``audio_s`` seconds of audio."""
        if chars <= 0 or audio_s <= 0 or not math.isfinite(worker_s):
            return
        g = self.config.gain
        rtf = max(worker_s - self.config.piece_overhead_s, 0.0) / audio_s
        with self._lock:
            self._audio_per_char += g * (audio_s * speed / chars - self._audio_per_char)
            if key not in self._cold:
                # A mode's first piece pays for lazy loading (auto: the checker's recogniser; torch's first calls):
                # joe's first "Hi there." took 1.3 s in auto mode, the next 0.06 s. Measured, it would stand for
                # the mode until 1/8-steps wore it down, refusing most requests meanwhile.
                self._cold.add(key)
                return
            if key not in self._rtf:  # RFC 6298 on the first measurement: mean R, deviation R/2
                self._rtf[key] = (rtf, rtf / 2)
            else:
                mean, dev = self._rtf[key]
                beta = min(2 * g, 1.0)
                self._rtf[key] = (mean + g * (rtf - mean), dev + beta * (abs(rtf - mean) - dev))

    def snapshot(self) -> dict[str, float]:
        """The current estimates, for /health: the audio seconds per character and each measured key's RTF."""
        with self._lock:
            keys = sorted(self._rtf)
            per_char = self._audio_per_char
        return {"audio_s_per_char": round(per_char, 4), **{f"rtf_{k}": round(self.rtf(k), 4) for k in keys}}


class Busy(Exception):
    """A request refused at admission (answer 429 with ``Retry-After: retry_after_s``); ``reason`` labels metrics."""

    def __init__(self, message: str, retry_after_s: int, reason: str) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.reason = reason


def retry_after(seconds: float) -> int:
    """Whole seconds for a Retry-After header: rounded up, at least 1 (0 would invite an immediate retry storm)."""
    return max(1, math.ceil(seconds - 1e-9)) if math.isfinite(seconds) else 1


def check_fits(*, ahead_s: float, own_s: float, budget_s: float, idle: bool) -> float | None:
    """None if a request fits (see the module doc), else the seconds until it would: the queue drains at one
    second of work per second, so after ``ahead + own - budget`` seconds it fits, and after ``ahead`` the
    worker is idle and admits anything. ``idle``: no admitted request has a piece left to speak (``ahead``
    alone cannot say so: a piece that overruns its estimate counts nothing left)."""
    if idle or ahead_s + own_s <= budget_s:
        return None
    return max(min(ahead_s + own_s - budget_s, ahead_s), 0.0)
