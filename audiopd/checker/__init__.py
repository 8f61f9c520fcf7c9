"""audiopd.checker: does audio say its text, completely and cleanly?

``score(audio, sample_rate, text)`` combines forced alignment, ASR, signal and token checks into a
``Verdict``; thresholds live in ``CheckerConfig`` (see ``audiopd.checker.config`` for calibration).
"""

from audiopd.checker.config import CheckerConfig
from audiopd.checker.score import Verdict, WordResult, score

__all__ = ["CheckerConfig", "Verdict", "WordResult", "score"]
