"""The report's figures (matplotlib, Agg backend, PNG files in DIR): quality against K, quality per millisecond,
the workload map, and spectrograms of the worst parallel clips beside serial's clip of the same text and seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

SERIAL = "serial"


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no network
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    _plt().close(fig)


def quality_vs_k(summary: dict[str, Any], path: Path) -> bool:
    """DistillMOS, DNSMOS and WER of parallel decoding at each K: serial + the paired difference (95%)."""
    per, vs = summary["systems"], summary["vs_serial"]
    ks = sorted((v["k"], s) for s, v in per.items() if v.get("k") is not None)
    if not ks or SERIAL not in per:
        return False
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, key, label, scale in ((axes[0], "distillmos", "DistillMOS (1-5)", 1.0),
                                  (axes[1], "dnsmos", "DNSMOS P.835 OVRL (1-5)", 1.0),
                                  (axes[2], "wer", "WER (%)", 100.0)):
        base = per[SERIAL][key]
        xs, ys, lo, hi = [], [], [], []
        for k, s in ks:
            d = vs.get(s, {}).get(key)
            if d is None or base is None:
                continue
            xs.append(k)
            ys.append(scale * (base + d["diff"]))
            lo.append(scale * (d["diff"] - d["low"]))
            hi.append(scale * (d["high"] - d["diff"]))
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label="parallel at K")
        if base is not None:
            ax.axhline(scale * base, color="k", linestyle="--", linewidth=1, label="serial")
        if "auto" in per and per["auto"].get(key) is not None:
            ax.axhline(scale * per["auto"][key], color="tab:green", linestyle=":", linewidth=1, label="auto")
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlabel("K (level-0 refinement steps)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Parallel decoding at K against serial (bars: 95% paired bootstrap interval of the difference)",
                 fontsize=10)
    _save(fig, path)
    return True


def quality_per_ms(summary: dict[str, Any], path: Path) -> bool:
    """Each system's DistillMOS and WER against the milliseconds of compute per second of speech (1000 x RTF)."""
    per = summary["systems"]
    pts = [(s, v) for s, v in per.items() if v.get("rtf") is not None]
    if not pts:
        return False
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, key, label, scale in ((axes[0], "distillmos", "DistillMOS", 1.0), (axes[1], "wer", "WER (%)", 100.0)):
        for s, v in pts:
            if v.get(key) is None:
                continue
            x, y = 1000.0 * v["rtf"], scale * v[key]
            ax.scatter([x], [y], color="k" if s == SERIAL else "tab:green" if s == "auto" else "tab:blue")
            ax.annotate(s.replace("parallel-", ""), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=8)
        ax.set_xscale("log")
        from matplotlib.ticker import NullFormatter, ScalarFormatter

        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())  # log minor labels overlap on a short range
        ax.set_xlabel("compute ms per second of speech (batch 1)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    fig.suptitle("Quality per millisecond: up and left is better (MOS), down and left is better (WER)", fontsize=10)
    _save(fig, path)
    return True


def workload(summary: dict[str, Any], path: Path) -> bool:
    """serial seconds / parallel seconds per (length, batch) x K; below 1 (red) serial wins on this machine."""
    wl = summary.get("workload")
    if not wl or not wl.get("cells"):
        return False
    cells = wl["cells"]
    rows = sorted({(c["target_s"], c["batch"]) for c in cells})
    ks = sorted({c["k"] for c in cells})
    grid = np.full((len(rows), len(ks)), np.nan)
    for c in cells:
        if c["serial_over_parallel"] is not None:
            grid[rows.index((c["target_s"], c["batch"])), ks.index(c["k"])] = c["serial_over_parallel"]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(ks), 1.2 + 0.5 * len(rows)))
    vmax = max(2.0, float(np.nanmax(grid)) if np.isfinite(grid).any() else 2.0)
    from matplotlib.colors import TwoSlopeNorm

    im = ax.imshow(grid, cmap="RdYlGn", norm=TwoSlopeNorm(vmin=0.0, vcenter=1.0, vmax=vmax), aspect="auto")
    for i in range(len(rows)):
        for j in range(len(ks)):
            if np.isfinite(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(ks)), [f"K={k}" for k in ks])
    ax.set_yticks(range(len(rows)), [f"{t:g} s x {b}" for t, b in rows])
    ax.set_ylabel("target length x batch")
    fig.colorbar(im, ax=ax, label="serial s / parallel s")
    ax.set_title("Workload map (< 1: serial faster)", fontsize=10)
    _save(fig, path)
    return True


def worst_cases(utts: list[dict], n: int) -> list[tuple[int, int]]:
    """(clip, serial clip of the same voice, text and seed) for the ``n`` worst non-serial clips: highest WER,
    then lowest DistillMOS."""
    serial = {(u["voice"], u["text"], u["seed"]): i for i, u in enumerate(utts) if u["system"] == SERIAL}
    cand = [(i, serial[(u["voice"], u["text"], u["seed"])]) for i, u in enumerate(utts)
            if u["system"] != SERIAL and (u["voice"], u["text"], u["seed"]) in serial]
    cand.sort(key=lambda p: (-utts[p[0]]["wer"], utts[p[0]]["distillmos"], p[0]))
    return cand[:n]


def spectrogram_pair(build: Path, a: dict, b: dict, path: Path) -> None:
    import soundfile as sf

    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=(9, 4.4), sharex=True)
    for ax, u in zip(axes, (a, b)):
        audio, rate = sf.read(str(build / u["audio"]), dtype="float32")
        if audio.size >= 512:
            ax.specgram(audio, NFFT=512, Fs=rate, noverlap=384, cmap="magma")
        ax.set_ylabel("Hz")
        ax.set_title(f"{u['system']} ({u['voice']}, seed {u['seed']}): WER {100 * u['wer']:.0f}%, "
                     f"DistillMOS {u['distillmos']:.2f}", fontsize=9)
    axes[-1].set_xlabel("seconds")
    _save(fig, path)


def draw_all(results: dict[str, Any], details: list[dict], build: Path, *, spectrograms: int = 4) -> dict[str, Any]:
    """Draw every figure into ``build``; returns their paths relative to it and the worst cases drawn."""
    summary, utts = results["summary"], results["utterances"]
    out: dict[str, Any] = {"figures": {}, "worst": []}
    for name, fn in (("quality_vs_k", quality_vs_k), ("quality_per_ms", quality_per_ms), ("workload", workload)):
        rel = f"plots/{name}.png"
        if fn(summary, build / rel):
            out["figures"][name] = rel
    for n, (i, j) in enumerate(worst_cases(utts, spectrograms)):
        rel = f"plots/worst_{n + 1}.png"
        spectrogram_pair(build, utts[i], utts[j], build / rel)
        out["worst"].append({"png": rel, "clip": i, "serial": j})
    return out
