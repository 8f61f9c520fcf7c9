"""Stage 07 (choice): the fast decoder's postfilter exponent, and whether the judges like it for its own sake
-> DATA/eval/postfilter-*.md and .json.

For ``--per-voice`` utterances of every voice in ``--set`` (``fit``: the fitting set, where the shipped exponent was
chosen; ``heldout``: the held-out set, for the control), at Q ``--levels`` through the artifact's fast weights, each
postfilter setting of ``--exponents`` (``off``, a flat exponent ``3``, or ``2.5:4:4000``: 2.5 at 0 Hz rising to 4 at
4 kHz, ``audiopd/codec/postfilter.py``) gives DistillMOS (and DNSMOS with ``--dnsmos``), its paired change from the
first setting, the decoded log-mel's L1 distance from the original's, and the harmonic contrast (stage 05's measure)
at the original's F0. ``--controls`` also puts the originals and the ``hq`` round trip through each setting (their
own STFT phase kept): a postfilter that the judges liked for its own sake would lift those too.
``--no-judges`` gives the judge-free columns only. ``codecs/mel22k/README.md`` keeps the figures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import codec_common as cc  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BANDS = ((1, 3), (4, 7), (8, 15))


def parse_setting(text: str) -> tuple[float, float, float] | None:
    """``off`` -> None; ``3`` -> (3, 0, 4000); ``2.5:4:4000`` -> (2.5, 4, 4000): the postfilter's
    ``(sharpen, sharpen_high, sharpen_high_hz)``."""
    if text == "off":
        return None
    parts = [float(x) for x in text.split(":")]
    if len(parts) == 1:
        return parts[0], 0.0, 4000.0
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    raise SystemExit(f"--exponents: {text!r} is none of off, G, or LOW:HIGH:HZ")


def sharpener(cfg, setting):
    """The postfilter for one ``parse_setting`` result (None: off), built as the decoder builds its own."""
    from dataclasses import replace

    from audiopd.codec.mel_vocoders import postfilter

    if setting is None:
        return None
    low, high, hz = setting
    return postfilter(replace(cfg, fast=replace(cfg.fast, sharpen=low, sharpen_high=high, sharpen_high_hz=hz)))


def renders(codec, fast, audio: np.ndarray, mel: np.ndarray, settings: dict, levels: int,
            controls: bool) -> dict[str, np.ndarray]:
    """name -> audio: the fast decoder at every setting; with ``controls`` the original and the ``hq`` round trip,
    each as it is and through every postfilter (its own phase kept). ``mel``: the original's log-mel."""
    import torch

    from audiopd.codec.phase import istft, scale, stft, unit

    cfg = codec.cfg
    window = torch.hann_window(cfg.n_fft)
    mel = codec.decode_mel(codec.encode_mel(mel)[:levels])
    x = torch.from_numpy(np.ascontiguousarray(mel, dtype=np.float32)).T[None]
    out = {}
    with torch.inference_mode():
        for name, post in settings.items():
            fast.sharpen = post  # the decoder's own decode path, with this setting's postfilter
            out[f"fast, {name}"] = fast(x)[0].numpy()
        if controls:
            hq = codec.vocode(mel[None], "hq")[0]
            for source, y in (("original", audio), ("hq", hq)):
                spec = stft(torch.from_numpy(np.ascontiguousarray(y, dtype=np.float32)), cfg.n_fft, cfg.hop, window)
                for name, post in settings.items():
                    m = spec.abs() if post is None else post(spec.abs()[None])[0]
                    out[f"{source}, {name}"] = istft(scale(unit(spec), m), cfg.n_fft, cfg.hop, window,
                                                     len(y)).numpy()
    return {k: np.clip(v, -1.0, 1.0).astype(np.float32) for k, v in out.items()}


def measures(codec, audio: np.ndarray, mel: np.ndarray, rendered: dict[str, np.ndarray]) -> dict[str, dict]:
    """Judge-free columns: log-mel L1 from the original's ``mel`` (speech frames) and the harmonic contrast."""
    import torch

    from audiopd.codec.harmonic import f0_track, harmonic_contrast
    from audiopd.codec.phase import stft

    cfg = codec.cfg
    speech = mel.max(axis=1) > np.log(1e-3)
    track = f0_track(audio, sample_rate=cfg.sample_rate, hop=cfg.hop, frames=len(mel), n_fft=cfg.n_fft)
    out = {}
    for name, y in rendered.items():
        got = codec.analyzer(y)[: len(mel)]
        mag = stft(torch.from_numpy(y), cfg.n_fft, cfg.hop, torch.hann_window(cfg.n_fft))[..., : len(mel)].abs()
        out[name] = {"logmel_l1": float(np.abs(got[speech] - mel[speech]).mean()),
                     **harmonic_contrast(mag.numpy(), track, n_fft=cfg.n_fft, sample_rate=cfg.sample_rate,
                                         bands=BANDS)}
    return out


def table(rows: dict[str, dict[str, list]], reference: str) -> list[str]:
    """Markdown rows: means, and the paired change (with its standard error) from ``reference``'s group."""
    keys = ("distillmos", "dnsmos_ovrl", "dnsmos_p808")
    lines = ["| audio | DistillMOS | change [s.e.] | DNSMOS OVRL | DNSMOS P.808 | log-mel L1 | contrast "
             + " / ".join(f"k{a}-{b}" for a, b in BANDS) + " |", "|---" * 7 + "|"]
    for name, cols in rows.items():
        base = rows.get(name.split(",")[0] + ", " + reference)
        cells = []
        for k in keys:
            v = [x for x in cols.get(k, []) if x is not None]
            cells.append(f"{np.mean(v):.3f}" if v else "-")
        change = "-"
        if base and cols.get("distillmos") and base.get("distillmos") and base is not cols:
            d = np.array(cols["distillmos"]) - np.array(base["distillmos"])
            change = f"{d.mean():+.3f} [{d.std(ddof=1) / np.sqrt(len(d)):.3f}]" if len(d) > 1 else f"{d.mean():+.3f}"
        contrast = " / ".join(f"{np.nanmean([c if c is not None else np.nan for c in cols[f'k{a}-{b}']]):.2f}"
                              for a, b in BANDS)
        lines.append(f"| {name} | {cells[0]} | {change} | {cells[1]} | {cells[2]} | "
                     f"{np.mean(cols['logmel_l1']):.3f} | {contrast} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--codec", default=str(REPO / "codecs" / "mel22k"), help="the mel codec artifact")
        p.add_argument("--set", choices=("fit", "heldout"), default="fit",
                       help="whose utterances (fit: choose there; heldout: the control)")
        p.add_argument("--per-voice", type=int, default=3, help="utterances per voice (fit: its last ones)")
        p.add_argument("--levels", type=int, default=16, help="decode from the first N RVQ levels")
        p.add_argument("--exponents", default="off;3;2.5:4:4000",
                       help="';'-separated postfilter settings: off, G, or LOW:HIGH:HZ (the first is the reference)")
        p.add_argument("--controls", action="store_true", help="originals and hq through every setting too")
        p.add_argument("--dnsmos", action="store_true", help="DNSMOS too (slower)")
        p.add_argument("--no-judges", action="store_true", help="log-mel L1 and contrast only")
        p.add_argument("--threads", type=int, default=2)

    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    import torch

    from audiopd.codec import load_codec
    from audiopd.codec.mel_vocoders import load_fast

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    codec = load_codec(Path(args.codec), decoder="fast")
    fast = load_fast(codec.cfg, codec.directory).module
    names = args.exponents.split(";")
    settings = {name: sharpener(codec.cfg, parse_setting(name)) for name in names}
    judges = None
    if not args.no_judges:
        from audiopd.eval.judges import Judges

        judges = Judges(threads=args.threads)
    by_voice: dict[str, list[dict]] = {}
    for row in cc.read_manifest(data, args.set):
        by_voice.setdefault(row["voice"], []).append(row)
    pick = (lambda rs: rs[-args.per_voice:]) if args.set == "fit" else (lambda rs: rs[: args.per_voice])
    items = [r for v in sorted(by_voice) for r in pick(by_voice[v])]
    rows: dict[str, dict[str, list]] = {}
    for i, row in enumerate(items):
        audio = cc.load_audio(data, row)
        mel = codec.analyzer(audio)
        rendered = renders(codec, fast, audio, mel, settings, args.levels, args.controls)
        for name, cols in measures(codec, audio, mel, rendered).items():
            for k, v in cols.items():
                rows.setdefault(name, {}).setdefault(k, []).append(v)
        for name, y in rendered.items() if judges else ():
            scores = judges.naturalness(y, codec.sample_rate, dnsmos=args.dnsmos)
            for k in ("distillmos", "dnsmos_ovrl", "dnsmos_p808"):
                rows[name].setdefault(k, []).append(scores[k])
        print(f"{i + 1}/{len(items)} {row['voice']}", flush=True)
    tag = cc.candidate_tag(codec, Path(args.codec), "fast")
    head = [f"# The fast decoder's postfilter ({tag}): {len(items)} {args.set} utterances, Q {args.levels}", ""]
    lines = head + table(rows, names[0])
    out = data / "eval" / f"postfilter-{args.set}-n{len(items)}"
    out.parent.mkdir(parents=True, exist_ok=True)
    cc.atomic_write_text(out.with_suffix(".md"), "\n".join(lines) + "\n")
    cc.atomic_write_text(out.with_suffix(".json"), json.dumps({"items": [r["id"] for r in items], "rows": rows},
                                                              indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
