"""The two static pages of a comparison: ``index.html`` (the report) and ``listen.html`` (blind A/B listening).

Both are self-contained: inline CSS and script, clips and figures by relative path, nothing fetched from the
network. The listening page shows each (system, serial) pair of one voice, text and seed in a random order with a
random side, names neither system (clip file names are opaque hashes), keeps the answers in the browser's
localStorage, and exports them as JSON for ``audiopd compare --tally``.
"""

from __future__ import annotations

import hashlib
import json
import random
from html import escape
from pathlib import Path
from typing import Any

from audiopd.compare.stats import ANSWERS_FORMAT

SERIAL = "serial"
_CSS = """body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1400px;color:#222}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px;
vertical-align:top}th{background:#f3f3f3}td.n{text-align:right}.good{color:#196619}.bad{color:#a11}
audio{width:210px;height:32px}.small{font-size:11px;color:#555}img{max-width:100%}"""


def report_id(results: dict[str, Any]) -> str:
    """Names the report's set of clips, so answers are never tallied against another report's clips."""
    keys = [(u["audio"], u["text"]) for u in results["utterances"]]
    return hashlib.sha256(json.dumps(keys).encode()).hexdigest()[:12]


def _f(v: Any, fmt: str = "{:.3f}", scale: float = 1.0) -> str:
    return "-" if v is None else fmt.format(scale * v)


def _interval(d: dict | None, scale: float = 1.0, fmt: str = "{:+.3f}") -> str:
    if not d:
        return "-"
    return f"{fmt.format(scale * d['diff'])} ({fmt.format(scale * d['low'])}..{fmt.format(scale * d['high'])})"


def summary_table(summary: dict[str, Any]) -> str:
    head = ["system", "clips", "DistillMOS", "DNSMOS", "WER %", "checker passed %", "forward passes", "wall s",
            "RTF", "DistillMOS - serial (95%)", "DNSMOS - serial (95%)", "WER - serial, points (95%)",
            "matches serial", "speed-up"]
    rows = ["<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    vs = summary["vs_serial"]
    for s, v in summary["systems"].items():
        c = vs.get(s, {})
        match = "" if s == SERIAL else ('<span class="good">yes</span>' if c.get("matches") else
                                        '<span class="bad">no</span>')
        cells = [escape(s), str(v["n"]), _f(v["distillmos"]), _f(v["dnsmos"]), _f(v["wer"], "{:.2f}", 100),
                 _f(v["passed"], "{:.1f}", 100), _f(v["forward_passes"], "{:.1f}"), _f(v["wall_s"]),
                 _f(v["rtf"], "{:.4f}"), _interval(c.get("distillmos")), _interval(c.get("dnsmos")),
                 _interval(c.get("wer"), 100, "{:+.2f}"), match, _f(c.get("speedup"), "{:.2f}x")]
        rows.append("<tr>" + "".join(f'<td class="n">{x}</td>' if i else f"<td>{x}</td>"
                                     for i, x in enumerate(cells)) + "</tr>")
    return "<table>" + "\n".join(rows) + "</table>"


def markdown_summary(summary: dict[str, Any]) -> str:
    """The headline as a Markdown table (DIR/summary.md): per system its means and the paired differences."""
    lines = ["| system | clips | DistillMOS | DistillMOS - serial (95%) | DNSMOS - serial (95%) | WER % | "
             "WER - serial, points (95%) | checker passed % | passes | RTF | matches serial |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s, v in summary["systems"].items():
        c = summary["vs_serial"].get(s, {})
        lines.append(f"| {s} | {v['n']} | {_f(v['distillmos'])} | {_interval(c.get('distillmos'))} | "
                     f"{_interval(c.get('dnsmos'))} | {_f(v['wer'], '{:.2f}', 100)} | "
                     f"{_interval(c.get('wer'), 100, '{:+.2f}')} | {_f(v['passed'], '{:.1f}', 100)} | "
                     f"{_f(v['forward_passes'], '{:.1f}')} | {_f(v['rtf'], '{:.4f}')} | "
                     f"{'' if s == SERIAL else 'yes' if c.get('matches') else 'no'} |")
    k = summary.get("smallest_matching_k")
    lines.append("")
    lines.append(f"Smallest K at which parallel matches serial: {k if k is not None else 'none of those run'} "
                 f"({summary.get('matching_rule', '')}).")
    return "\n".join(lines) + "\n"


def workload_table(wl: dict[str, Any] | None) -> str:
    if not wl or not wl.get("cells"):
        return "<p>No workload map in this report (run without --no-bench).</p>"
    head = ["K", "target s", "audio s", "batch", "parallel s", "serial s", "passes par / ser", "serial / parallel",
            "faster"]
    rows = ["<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for c in wl["cells"]:
        who = '<span class="bad">serial</span>' if c["serial_wins"] else '<span class="good">parallel</span>'
        rows.append("<tr>" + "".join(f'<td class="n">{x}</td>' for x in (
            c["k"], f"{c['target_s']:g}", f"{c['audio_s']:.2f}", c["batch"], f"{c['parallel_s']:.3f}",
            f"{c['serial_s']:.3f}", f"{c['parallel_passes']:g} / {c['serial_passes']:g}",
            _f(c["serial_over_parallel"], "{:.2f}"), who)) + "</tr>")
    return (f"<p>Speaker {escape(str(wl['speaker']))}, {wl['torch_threads']} torch thread(s), one repeat per "
            "cell (the full map: <code>audiopd bench</code>).</p><table>" + "\n".join(rows) + "</table>")


def _clip(u: dict, d: dict | None, label: str = "") -> str:
    note = (f"MOS {u['distillmos']:.2f} / DNS {u['dnsmos']:.2f}, WER {100 * u['wer']:.0f}%, "
            f"{'pass' if u['passed'] else '<span class=bad>FAIL</span>'}, {u['forward_passes']} passes, "
            f"{u['wall_s']:.2f} s")
    heard = f"<br><i>heard: {escape(d['hypothesis'])}</i>" if d and u["wer"] > 0 else ""
    return (f'{label}<audio controls preload="metadata" src="{escape(u["audio"])}"></audio>'
            f'<div class="small">{note}{heard}</div>')


def utterance_table(utts: list[dict], details: list[dict], systems: list[str]) -> str:
    groups: dict[tuple, dict[str, int]] = {}
    for i, u in enumerate(utts):
        groups.setdefault((u["voice"], u["text"], u["seed"]), {})[u["system"]] = i
    head = "<tr><th>voice</th><th>seed</th><th>text</th>" + "".join(f"<th>{escape(s)}</th>" for s in systems)
    rows = [head + "</tr>"]
    for (voice, text, seed), by in groups.items():
        cells = "".join(f"<td>{_clip(utts[by[s]], details[by[s]] if details else None)}</td>" if s in by else
                        "<td>-</td>" for s in systems)
        rows.append(f"<tr><td>{escape(voice)}</td><td>{seed}</td><td>{escape(text)}</td>{cells}</tr>")
    return '<table class="utts">' + "\n".join(rows) + "</table>"


def write_index(results: dict[str, Any], details: list[dict], figures: dict[str, Any], build: Path) -> Path:
    summary, utts = results["summary"], results["utterances"]
    cfg = summary.get("config", {})
    systems = list(summary["systems"])
    k = summary.get("smallest_matching_k")
    head = (f"Smallest K at which parallel matches serial: <b>{k}</b>" if k is not None else
            "<b>No K</b> in this report matches serial")
    figs = "".join(f'<p><img src="{escape(p)}" alt="{escape(n)}"></p>' for n, p in figures["figures"].items())
    worst = []
    for w in figures["worst"]:
        a, b = utts[w["clip"]], utts[w["serial"]]
        worst.append(f'<h3>{escape(a["system"])} vs serial: "{escape(a["text"])}"</h3>'
                     f'<p>{_clip(a, details[w["clip"]] if details else None, "this system ")} '
                     f'{_clip(b, details[w["serial"]] if details else None, "serial ")}</p>'
                     f'<img src="{escape(w["png"])}" alt="spectrograms">')
    cost = summary.get("judge_cost")
    cost_line = json.dumps(cost) if cost else "not reported"
    body = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>audiopd compare</title>
<style>{_CSS}</style></head><body>
<h1>Parallel against serial decoding</h1>
<p>Voice {escape(str(cfg.get('voice', '')))}, codec {escape(str(cfg.get('codec', '')))} (decoder {escape(str(cfg.get('decoder', '')))}), speakers
{escape(', '.join(sorted({u['voice'] for u in utts})))}, {cfg.get('texts', '?')} texts x seeds
{escape(', '.join(map(str, cfg.get('seeds', ()))))}; judges {escape(str(cfg.get('judge', '')))}. Every clip was synthesised alone
(batch 1) through the facade; wall seconds are that call's; intervals are paired bootstraps over (speaker, text),
seeds averaged. <a href="listen.html">Blind listening test</a> &middot; <a href="results.json">results.json</a></p>
<h2>Summary</h2><p>{head} ({escape(summary.get('matching_rule', ''))}).</p>
{summary_table(summary)}
<h2>Figures</h2>{figs}
<h2>Workload map: where serial wins on this machine</h2>{workload_table(summary.get('workload'))}
<h2>Worst cases</h2>{''.join(worst) or '<p>None drawn.</p>'}
<h2>Every clip</h2>{utterance_table(utts, details, systems)}
<p class="small">Judge cost: {escape(cost_line)}</p>
</body></html>
"""
    path = build / "index.html"
    path.write_text(body, encoding="utf-8")
    (build / "summary.md").write_text(markdown_summary(summary), encoding="utf-8")
    return path


def listen_pairs(results: dict[str, Any], seed: int = 0) -> list[dict[str, str]]:
    """Every (system, serial) pair of one voice, text and seed; sides shuffled here too, so the page source
    does not list the serial clip second."""
    utts = results["utterances"]
    serial = {(u["voice"], u["text"], u["seed"]): u for u in utts if u["system"] == SERIAL}
    rng = random.Random(seed)
    pairs = []
    for u in utts:
        base = serial.get((u["voice"], u["text"], u["seed"]))
        if u["system"] == SERIAL or base is None:
            continue
        a, b = (u["audio"], base["audio"]) if rng.random() < 0.5 else (base["audio"], u["audio"])
        pairs.append({"text": u["text"], "a": a, "b": b})
    rng.shuffle(pairs)
    for n, p in enumerate(pairs):
        p["id"] = f"p{n:04d}"
    return pairs


_LISTEN_JS = r"""
const KEY = "audiopd-listen:" + DATA.report;
let st = JSON.parse(localStorage.getItem(KEY) || "null");
if (!st) {  // a fresh random order and random sides for this browser
  const order = DATA.pairs.map(p => p.id);
  for (let i = order.length - 1; i > 0; i--) { const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]]; }
  const swap = {}; DATA.pairs.forEach(p => { swap[p.id] = Math.random() < 0.5; });
  st = {order: order, swap: swap, answers: {}};
}
const byId = {}; DATA.pairs.forEach(p => { byId[p.id] = p; });
function save() { localStorage.setItem(KEY, JSON.stringify(st)); }
function sides(id) { const p = byId[id]; return st.swap[id] ? [p.b, p.a] : [p.a, p.b]; }
function current() { return st.order.find(id => !(id in st.answers)); }
function show() {
  const id = current(), done = Object.keys(st.answers).length;
  document.getElementById("progress").textContent = done + " of " + st.order.length + " answered";
  document.getElementById("trial").style.display = id ? "" : "none";
  document.getElementById("finished").style.display = id ? "none" : "";
  if (!id) return;
  const [l, r] = sides(id);
  document.getElementById("text").textContent = byId[id].text;
  document.getElementById("left").src = l; document.getElementById("right").src = r;
}
function choose(choice) {
  const id = current(); if (!id) return;
  const [l, r] = sides(id);
  st.answers[id] = {pair: id, left: l, right: r, choice: choice, at: new Date().toISOString()};
  save(); show();
}
function exportAnswers() {
  const out = {format: DATA.format, report: DATA.report, answers: st.order.filter(id => id in st.answers)
               .map(id => st.answers[id])};
  const text = JSON.stringify(out, null, 1);
  document.getElementById("exported").value = text;
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], {type: "application/json"}));
  a.download = "answers-" + DATA.report + ".json"; document.body.appendChild(a); a.click(); a.remove();
}
function resetAll() { if (confirm("Forget every answer in this browser?")) { localStorage.removeItem(KEY);
  location.reload(); } }
save(); show();
"""


def write_listen(results: dict[str, Any], build: Path) -> Path:
    data = {"format": ANSWERS_FORMAT, "report": report_id(results), "pairs": listen_pairs(results)}
    blob = json.dumps(data).replace("</", "<\\/")  # no "</script>" inside the script element
    body = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>audiopd blind listening</title>
<style>{_CSS} audio{{width:320px}} button{{font-size:15px;margin:4px;padding:6px 12px}}</style></head><body>
<h1>Which one sounds more natural?</h1>
<p>Each trial plays the same sentence twice, decoded two ways; which is which is hidden and the sides are random.
Listen to both, then choose. Answers stay in this browser until you export them
(<code>audiopd compare --tally ANSWERS.json -o THIS_FOLDER</code> summarises them).</p>
<p id="progress"></p>
<div id="trial"><p>Sentence: <b id="text"></b></p>
<p>A <audio id="left" controls preload="auto"></audio> &nbsp; B <audio id="right" controls preload="auto"></audio></p>
<p><button id="choose-left" onclick="choose('left')">A is more natural</button>
<button id="choose-same" onclick="choose('same')">No difference</button>
<button id="choose-right" onclick="choose('right')">B is more natural</button></p></div>
<div id="finished" style="display:none"><p><b>All pairs answered. Thank you.</b></p></div>
<p><button id="export" onclick="exportAnswers()">Export answers (JSON)</button>
<button id="reset" onclick="resetAll()">Start over</button></p>
<textarea id="exported" rows="6" cols="90" readonly></textarea>
<script>const DATA = {blob};
{_LISTEN_JS}</script></body></html>
"""
    path = build / "listen.html"
    path.write_text(body, encoding="utf-8")
    return path
