"""The error types a user of audiopd can meet.

Every error a user can cause (bad text, bad audio, missing or unknown artifacts) is an
``AudiopdError``; the CLI turns those into one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations


class AudiopdError(Exception):
    """Base class for errors caused by input or installation, not by a bug."""


class NothingToSpeakError(AudiopdError, ValueError):
    """The text holds nothing speakable (empty, only symbols, or an unsupported script)."""


class TextLimitError(AudiopdError, ValueError):
    """Text the frontend refuses because it would cost unbounded work (a word too long to be a word)."""


class AudioInputError(AudiopdError, ValueError):
    """An audio input is unreadable, empty, not audio, or has an unsupported sample rate."""


class ArtifactError(AudiopdError):
    """A shipped artifact (codec, voice) is missing, of an unknown version, or fails its checksum."""


class UsageError(AudiopdError):
    """Bad command-line usage (unknown option, missing argument, value out of range)."""
