"""``audiopd codec roundtrip``: encode audio files and decode them again, all outputs or none."""

from __future__ import annotations

from pathlib import Path

from audiopd.errors import AudiopdError, UsageError
from audiopd.fileio import check_writable_dir


def run_roundtrip(inputs: list[str], outdir: str, codec_name: str, levels: int | None = None,
                  decoder: str | None = None) -> int:
    """Encode each input, decode it from the first ``levels`` levels, write OUTDIR/<name>.wav; print the paths."""
    from audiopd.audio import read_audio, write_audio
    from audiopd.codec import load_codec

    codec = load_codec(codec_name, decoder=decoder)
    q = codec.num_codebooks
    levels = q if levels is None else levels
    if not 1 <= levels <= q:
        raise UsageError(f"--levels {levels} is out of range: codec {codec.name!r} has levels 1..{q}")

    # Validate everything (cheapest first) before writing anything.
    outdir = Path(outdir)
    targets = [outdir / _output_name(Path(p)) for p in inputs]
    _check_targets([Path(p) for p in inputs], targets)
    check_writable_dir(outdir)
    signals = [read_audio(p, expect_rate=codec.sample_rate)[0] for p in inputs]

    decoded = []
    for audio in signals:
        codes = codec.encode(audio)
        # The codec pads to whole frames; trim back so output and input last equally long.
        decoded.append(codec.decode(codes[:, :levels])[0, : audio.size])

    written: list[Path] = []
    target = outdir
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        for target, audio in zip(targets, decoded):
            written.append(write_audio(target, audio, codec.sample_rate))
    except OSError as exc:
        for path in written:  # all or nothing
            path.unlink(missing_ok=True)
        raise AudiopdError(f"cannot write {target}: {exc.strerror or exc}") from None
    for target in written:
        print(target)
    return 0


def _output_name(path: Path) -> str:
    # write_audio always writes WAV, so a .flac/.ogg input gets a .wav name rather than a lying suffix.
    return path.name if path.suffix.lower() == ".wav" else path.stem + ".wav"


def _check_targets(inputs: list[Path], targets: list[Path]) -> None:
    seen: dict[Path, Path] = {}
    for src, dst in zip(inputs, targets):
        key = dst.resolve()
        if key in seen:
            raise UsageError(f"{src} and {seen[key]} would both be written to {dst}")
        seen[key] = src
    resolved_inputs = {p.resolve() for p in inputs}
    for dst in targets:
        if dst.resolve() in resolved_inputs:
            raise UsageError(f"refusing to overwrite the input {dst}: choose another -o OUTDIR")
