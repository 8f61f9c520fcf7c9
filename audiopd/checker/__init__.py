"""audiopd.checker: does audio say its text, completely and cleanly?

``score(audio, sample_rate, text)`` combines a phone recogniser's alignment (or PocketSphinx's, at the
"thorough" level), ASR, signal and token checks into a ``Verdict``; thresholds live in ``CheckerConfig``
(see ``audiopd.checker.config`` for calibration).
"""

from audiopd.checker.config import CHECK_LEVELS, CheckerConfig, at_level
from audiopd.checker.score import Verdict, WordResult, score

__all__ = ["CHECK_LEVELS", "CheckerConfig", "at_level", "Verdict", "WordResult", "score"]
