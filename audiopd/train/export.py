"""Export a training checkpoint as a shippable voice artifact (config.yaml + model.safetensors + SHA256SUMS).

``--checker FILE`` also ships the voice's checker thresholds as ``checker.yaml`` (calibrated on the
voice's own output, see ``recipes/voice/conf/checker.yaml``); a ``checker.yaml`` already in the
output directory is kept otherwise, and re-checksummed with the new weights. Speakers named after their
teachers (the natural corpus's ``kokoro:af_heart``) ship under people's names with the teacher recorded
(``person_names``). ``--speakers joe`` ships only the named speakers (a run on a corpus whose speaker table holds
voices not rendered yet has untrained rows for them; ``keep_speakers``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch
import yaml
from safetensors.torch import load_file

from audiopd.config import from_dict
from audiopd.errors import ArtifactError, AudiopdError
from audiopd.fileio import write_text_atomic
from audiopd.model.config import ModelConfig
from audiopd.model.voice import (
    CHECKER_FILE,
    VoiceInfo,
    VoiceModel,
    parse_checker_text,
    save_voice,
)
from audiopd.train.checkpoint import (average_weights, checkpoints_up_to, latest_checkpoint, read_state,
                                      speaker_tables)


def stamp_codec(info: VoiceInfo, codec: str | Path | None = None) -> VoiceInfo:
    """``info`` with the token fingerprint of ``codec`` (default: the codec artifact the voice names).

    Export runs next to the codec whose tokens made the shards, so that codec's fingerprint is the
    voice's. Left unstamped (load then skips the check) when that codec cannot be loaded or does not
    even have the voice's shape (e.g. a test run on synthetic tokens).
    """
    from audiopd.codec import load_codec

    if info.codec_fingerprint:
        return info
    try:
        c = load_codec(codec or info.codec)
    except (AudiopdError, OSError):
        return info
    if (c.num_codebooks, c.cardinality, c.sample_rate) != (info.num_codebooks, info.cardinality, info.sample_rate):
        return info
    return dataclasses.replace(info, codec_fingerprint=c.token_fingerprint)


def person_names(voices: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Speakers named after their teachers (``kokoro:af_heart``, ``piper:joe``) -> people's names and teachers.

    The natural corpus names its speakers by teacher, but ``VOICE:SPEAKER`` on the command line cannot hold a
    colon, and users pick a voice by a name: ``heart``, ``joe`` (issue 23). The teacher is kept beside it. Names
    without a ``system:`` part are kept as they are, with no teacher recorded.
    """
    if not any(":" in v for v in voices):
        return voices, ()
    names, teachers = [], []
    for v in voices:
        system, _, who = v.rpartition(":")
        # Kokoro's packs are named accent + sex + "_" + name (af_heart: American female).
        if system == "kokoro" and len(who) > 3 and who[2] == "_":
            who = who[3:]
        names.append(who)
        teachers.append(v if system else "")
    if len(set(names)) != len(names):
        raise ArtifactError(f"speakers {', '.join(voices)} would share a name as {', '.join(names)}")
    return tuple(names), tuple(teachers)


def keep_speakers(state: dict[str, torch.Tensor], info: VoiceInfo, mcfg: ModelConfig,
                  speakers: tuple[str, ...]) -> tuple[dict[str, torch.Tensor], VoiceInfo, ModelConfig]:
    """The weights, info and config of a voice cut down to ``speakers`` (names or teacher names), in that order.

    Every speaker embedding table (a ``*speaker.weight`` with one row per speaker) keeps the rows of the named
    speakers; nothing else in the model depends on the number of speakers.
    """
    if not speakers:
        raise ArtifactError("keep_speakers: name at least one speaker")
    ids = []
    for name in speakers:
        i = info.find(name)
        if i is None:
            raise ArtifactError(f"unknown speaker {name!r} (the run's: {', '.join(info.voices)})")
        ids.append(i)
    if len(set(ids)) != len(ids):
        raise ArtifactError(f"speakers {', '.join(speakers)} name one speaker twice")
    n = mcfg.num_speakers
    tables = speaker_tables(state, n)
    if not tables:
        raise ArtifactError("keep_speakers: the weights hold no speaker table")
    index = torch.tensor(ids)
    state = {k: (v.index_select(0, index).contiguous() if k in tables else v) for k, v in state.items()}
    info = dataclasses.replace(info, voices=tuple(info.voices[i] for i in ids),
                               teachers=tuple(info.teachers[i] for i in ids) if info.teachers else (),
                               smooth_frames=tuple(info.smooth_frames[i] for i in ids) if info.smooth_frames else ())
    return state, info, dataclasses.replace(mcfg, num_speakers=len(ids))


def with_smoothing(info: VoiceInfo, smoothing: dict[str, float]) -> VoiceInfo:
    """``info`` with each voice's decode-time blur (``VoiceInfo.smooth_frames``) from ``smoothing``, keyed by
    voice or teacher name; every voice must be named once, so no speaker falls back silently."""
    frames: dict[int, float] = {}
    for name, value in smoothing.items():
        i = info.find(name)
        if i is None:
            raise ArtifactError(f"unknown voice {name!r} in smooth_frames (the voice's: {', '.join(info.voices)})")
        if i in frames:
            raise ArtifactError(f"smooth_frames names voice {info.voices[i]!r} twice")
        frames[i] = float(value)
    missing = [v for i, v in enumerate(info.voices) if i not in frames]
    if missing:
        raise ArtifactError(f"smooth_frames gives no value for {', '.join(missing)} (name every voice)")
    return dataclasses.replace(info, smooth_frames=tuple(frames[i] for i in range(len(info.voices))))


def parse_smoothing(text: str) -> dict[str, float]:
    """``heart=1.0,adam=0.7`` -> {"heart": 1.0, "adam": 0.7} (``--smooth-frames``)."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        name, eq, value = part.partition("=")
        try:
            if not eq or not name.strip():
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise ArtifactError(f"--smooth-frames: expected NAME=FRAMES,..., got {part!r}") from None
    return out


def export_voice(source: str | Path, out_dir: str | Path, *, checker: str | Path | None = None,
                 codec: str | Path | None = None, speakers: tuple[str, ...] | None = None,
                 dtype: str = "float32", smoothing: dict[str, float] | None = None,
                 parallel_steps: int | None = None, weak_forms: bool = False, average: int = 1,
                 level0_temperature: float | None = None) -> Path:
    """``source``: a run directory (its latest checkpoint) or one checkpoint directory.

    ``checker``: a YAML file of CheckerConfig fields to ship as the voice's ``checker.yaml``.
    ``codec``: the codec artifact (name or directory) whose fingerprint the voice records (``stamp_codec``).
    ``speakers``: ship only these speakers (``keep_speakers``); None ships all of the run's.
    ``dtype``: how the weights are stored (``float16`` halves the artifact; the loader widens them).
    ``smoothing``: each shipped voice's decode-time blur in frames (``with_smoothing``); None = the codec's.
    ``parallel_steps``: the voice's own level-0 step budget (``VoiceInfo.parallel_steps``, chosen on the dev split);
    None or 0 = the engine's default.
    ``level0_temperature``: the voice's own level-0 temperature (``VoiceInfo.level0_temperature``, chosen with
    ``parallel_steps``); None = the engine's.
    ``weak_forms``: the run trained on shards relabelled with weak forms (recipes/natural/05_weak_forms.py), so the
    voice must be spoken to the same way (``VoiceInfo.weak_forms``).
    ``average``: ship the mean of the run's last ``average`` checkpoints up to the chosen one
    (``checkpoint.average_weights``); 1 ships that checkpoint as it is.
    """
    source = Path(source)
    ck = source if (source / "state.json").is_file() else latest_checkpoint(source)
    if ck is None:
        raise ArtifactError(f"no checkpoint found in {source}")
    state = read_state(ck)
    mcfg = from_dict(ModelConfig, state["model"], where=f"{ck}/state.json:model")
    info = stamp_codec(from_dict(VoiceInfo, state["info"], where=f"{ck}/state.json:info"), codec)
    if not info.teachers:
        names, teachers = person_names(info.voices)
        info = dataclasses.replace(info, voices=names, teachers=teachers)
    averaged = checkpoints_up_to(ck, average) if average != 1 else []  # N < 1 or too few kept: refused there
    weights = average_weights(averaged) if averaged else load_file(str(ck / "model.safetensors"))
    if speakers is not None:
        weights, info, mcfg = keep_speakers(weights, info, mcfg, tuple(speakers))
    if smoothing is not None:
        info = with_smoothing(info, smoothing)
    if parallel_steps is not None:
        info = dataclasses.replace(info, parallel_steps=parallel_steps)
    if level0_temperature is not None:
        info = dataclasses.replace(info, level0_temperature=level0_temperature)
    if weak_forms:
        info = dataclasses.replace(info, weak_forms=True)
    model = VoiceModel(mcfg, info)
    model.load_state_dict(weights)
    out_dir = Path(out_dir)
    if checker is not None:
        checker = Path(checker)
        if not checker.is_file():
            raise ArtifactError(f"checker thresholds {checker} not found")
        text = checker.read_text(encoding="utf-8")  # read once: what is checked is what ships
        parse_checker_text(text, where=str(checker))  # the thresholds must load (strict keys, valid values)
        out_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(out_dir / CHECKER_FILE, text)
    trained = {"step": state["step"], "checkpoint": ck.name}
    if averaged:
        trained["averaged"] = [p.name for p in averaged]
    if state.get("init_from"):  # a fine-tuning run: its steps count from the weights it started with
        trained["init_from"] = state["init_from"]
    return save_voice(model, out_dir, extra=trained, dtype=dtype)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audiopd.train.export", description=__doc__)
    ap.add_argument("source", help="run directory or checkpoint directory")
    ap.add_argument("out", help="voice artifact directory to write")
    ap.add_argument("--checker", default=None, help="checker thresholds (YAML) to ship as checker.yaml")
    ap.add_argument("--codec", default=None, help="codec artifact whose token fingerprint the voice records "
                                                  "(default: the one the voice names)")
    ap.add_argument("--speakers", default=None, metavar="NAME,...",
                    help="ship only these speakers, by name or teacher (default: all of the run's)")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float16"),
                    help="weights' storage type (default float32; float16 halves the artifact)")
    ap.add_argument("--smooth-frames", default=None, metavar="NAME=FRAMES,...",
                    help="each voice's decode-time blur over time, in frames (default: the codec's setting)")
    ap.add_argument("--parallel-steps", type=int, default=None, metavar="K",
                    help="the voice's own level-0 step budget of parallel decoding, chosen on the dev split "
                         "(default: the engine's)")
    ap.add_argument("--level0-temperature", type=float, default=None, metavar="T",
                    help="the voice's own level-0 temperature of parallel decoding (0 = greedy), chosen with "
                         "--parallel-steps on the dev split (default: the engine's)")
    ap.add_argument("--weak-forms", action="store_true",
                    help="the run trained on weak-form labels (recipes/natural/05_weak_forms.py): the voice's "
                         "frontend uses them too")
    ap.add_argument("--average", type=int, default=1, metavar="N",
                    help="ship the mean of the last N checkpoints up to the chosen one (default 1: that one)")
    args = ap.parse_args(argv)
    speakers = None if args.speakers is None else tuple(s.strip() for s in args.speakers.split(",") if s.strip())
    try:
        smoothing = None if args.smooth_frames is None else parse_smoothing(args.smooth_frames)
        path = export_voice(args.source, args.out, checker=args.checker, codec=args.codec, speakers=speakers,
                            dtype=args.dtype, smoothing=smoothing, parallel_steps=args.parallel_steps,
                            weak_forms=args.weak_forms, average=args.average,
                            level0_temperature=args.level0_temperature)
    except AudiopdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not yaml.safe_load((path / "config.yaml").read_text()).get("codec_fingerprint"):
        print("note: no codec fingerprint recorded (codec not found or of another shape): loads skip that check",
              file=sys.stderr)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
