"""Stage 05 (diagnosis): where the fast decoder loses naturalness, its magnitude or its phase -> DATA/eval/phase-*.md.

On ``--per-voice`` held-out utterances of each voice (unquantised log-mel, so the quantiser is out of it),
DistillMOS of STFTs built from the ``hq`` teacher's rendering of the mel and from the ``fast`` decoder's spectrum
(its head's magnitude and phase, before any fast Griffin-Lim), mixed: each one's magnitude with the other's phase,
each magnitude with ``--iters`` fast Griffin-Lim iterations (``audiopd.codec.phase``) from a random phase and from
the fast head's phase, and the fast decoder as the artifact configures it. The teacher's own magnitude bounds what a
better magnitude can win; its phase bounds what a better phase can win. A second table gives the harmonic contrast
(``harmonic.harmonic_contrast``) of the teacher's audio and of the fast decoder's, band by band of harmonics:
whether the decoder keeps the harmonics; ``--contrast-only`` makes just that table, without the judges.
``codecs/mel22k/README.md`` keeps the figures that chose the fast decoder's design.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import codec_common as cc  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def probe_items(data: Path, per_voice: int) -> list[dict]:
    """The first ``per_voice`` held-out rows of every voice, voices in sorted order."""
    by_voice: dict[str, list[dict]] = {}
    for row in cc.read_manifest(data, "heldout"):
        by_voice.setdefault(row["voice"], []).append(row)
    return [r for v in sorted(by_voice) for r in by_voice[v][:per_voice]]


def variants(codec, fast, mel: np.ndarray, iters: list[int], seed: int) -> dict[str, np.ndarray]:
    """Every mix of magnitude and phase for one log-mel ``[T, n_mels]``: name -> audio. ``fast``: the codec's
    ``FastVocoder`` (``mel_vocoders.load_fast(...).module``), loaded once for all utterances."""
    import torch

    from audiopd.codec.mel_vocoders import with_closing_frame
    from audiopd.codec.phase import fast_griffin_lim, istft, stft, unit

    cfg = codec.cfg
    n, hop, window = cfg.n_fft, cfg.hop, torch.hann_window(cfg.n_fft)
    teacher = torch.from_numpy(codec.vocode(mel[None], "hq")[0])
    with torch.inference_mode():
        spec = fast.spectrum(torch.from_numpy(mel).T[None])[0]
        as_configured = fast(torch.from_numpy(mel).T[None])[0]
    length = mel.shape[0] * hop
    spec = with_closing_frame(spec)  # T + 1 frames for T * hop samples, as the decoder does
    ref = stft(teacher, n, hop, window)[..., : spec.shape[-1]]
    g = torch.Generator().manual_seed(seed)
    rnd = torch.polar(torch.ones(spec.shape), 2 * torch.pi * torch.rand(spec.shape, generator=g))
    out = {"teacher (hq)": teacher, f"fast as configured ({cfg.fast.phase_iters} iterations)": as_configured,
           "fast magnitude, fast phase": istft(spec, n, hop, window, length),
           "fast magnitude, teacher phase": istft(spec.abs() * unit(ref), n, hop, window, length),
           "teacher magnitude, fast phase": istft(ref.abs() * unit(spec), n, hop, window, length)}
    for k in iters:
        for mag_name, mag in (("teacher", ref.abs()), ("fast", spec.abs())):
            for start_name, start in (("random", rnd), ("fast", unit(spec))):
                out[f"{mag_name} magnitude, {k} FGLA from {start_name} phase"] = fast_griffin_lim(
                    mag, start, n_fft=n, hop=hop, length=length, iters=k, window=window)
    return {k: np.clip(v.numpy(), -1.0, 1.0).astype(np.float32) for k, v in out.items()}


def harmonic_contrasts(codec, audios: dict[str, np.ndarray]) -> dict[str, dict]:
    """``harmonic.harmonic_contrast`` of the teacher's audio and of the fast decoder as configured, at the F0
    tracked on the teacher's audio: whether the decoder keeps the harmonics the teacher draws."""
    import torch

    from audiopd.codec.harmonic import f0_track, harmonic_contrast
    from audiopd.codec.phase import stft

    cfg = codec.cfg
    teacher = audios["teacher (hq)"]
    frames = len(teacher) // cfg.hop
    f0 = f0_track(teacher, sample_rate=cfg.sample_rate, hop=cfg.hop, frames=frames, n_fft=cfg.n_fft)
    out = {}
    for name in ("teacher (hq)", next(k for k in audios if k.startswith("fast as configured"))):
        mag = stft(torch.from_numpy(audios[name]), cfg.n_fft, cfg.hop, torch.hann_window(cfg.n_fft))[..., :frames]
        out[name] = harmonic_contrast(mag.abs().numpy(), f0, n_fft=cfg.n_fft, sample_rate=cfg.sample_rate)
    return out


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--codec", default=str(REPO / "codecs" / "mel22k"), help="the mel codec artifact")
        p.add_argument("--per-voice", type=int, default=4, help="held-out utterances per voice")
        p.add_argument("--iters", default="8,16", help="fast Griffin-Lim iteration counts to try")
        p.add_argument("--threads", type=int, default=2)
        p.add_argument("--contrast-only", action="store_true",
                       help="only the harmonic contrast table (no judges)")

    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    import torch

    from audiopd.artifacts import sha256_file
    from audiopd.codec import load_codec
    from audiopd.codec.mel_vocoders import load_fast
    from audiopd.eval.judges import Judges

    torch.set_num_threads(args.threads)
    data, artifact = Path(args.data), Path(args.codec)
    codec = load_codec(artifact, decoder="fast")
    fast = load_fast(codec.cfg, codec.directory).module
    iters = [int(k) for k in args.iters.split(",") if k]
    judges = None if args.contrast_only else Judges(threads=args.threads)
    scores: dict[str, list[float]] = {}
    contrast: dict[str, list[dict]] = {}
    items = probe_items(data, args.per_voice)
    for i, row in enumerate(items):
        mel = codec.analyzer(cc.load_audio(data, row))
        audios = variants(codec, fast, mel, iters, seed=i)
        for name, c in harmonic_contrasts(codec, audios).items():
            contrast.setdefault(name, []).append(c)
        for name, audio in audios.items() if judges else ():
            scores.setdefault(name, []).append(judges.naturalness(audio, codec.sample_rate, dnsmos=False)["distillmos"])
        print(f"{i + 1}/{len(items)} {row['voice']}", flush=True)
    tag = sha256_file(artifact / codec.cfg.fast.weights_file)[:8]
    lines = [f"# Where the fast decoder ({tag}) loses: {len(items)} held-out utterances, unquantised log-mel", ""]
    if scores:
        lines += ["| magnitude and phase | DistillMOS |", "|---|---|"]
        lines += [f"| {name} | {np.mean(v):.3f} |" for name, v in scores.items()] + [""]
    bands = list(next(iter(contrast.values()))[0])
    lines += ["Harmonic contrast (`harmonic.harmonic_contrast`: log magnitude at k F0 minus at (k + 1/2) F0, voiced "
              "frames, F0 tracked on the teacher's audio), mean over utterances:", "",
              "| audio | " + " | ".join(bands) + " |", "|---" * (len(bands) + 1) + "|"]
    for name, cs in contrast.items():
        cells = [np.mean([c[b] for c in cs if c[b] is not None] or [np.nan]) for b in bands]
        lines.append(f"| {name} | " + " | ".join(f"{x:.2f}" for x in cells) + " |")
    out = data / "eval" / f"phase-{tag}-n{len(items)}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps({"items": len(items), "scores": scores, "contrast": contrast},
                                                   indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
