// The page's only script: fill the voices, POST /synthesize (format json), play, highlight words by time.
"use strict";
const $ = (id) => document.getElementById(id);
let words = [];
let spans = [];
let objectUrl = null;

async function loadVoices() {
  try {
    const reply = await fetch("/v1/voices");
    const data = await reply.json();
    for (const v of data.voices) {
      const opt = document.createElement("option");
      opt.value = v.id;
      opt.textContent = v.id;
      opt.selected = v.id === data.default;
      $("voice").appendChild(opt);
    }
  } catch (err) {
    setStatus("cannot list voices: " + err, true);
  }
}

function setStatus(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

function showWords(list) {
  words = list;
  const box = $("words");
  box.textContent = "";
  spans = list.map((w) => {
    const span = document.createElement("span");
    span.textContent = w.word;
    box.appendChild(span);
    box.appendChild(document.createTextNode(" "));
    return span;
  });
}

function highlight() {
  const t = $("audio").currentTime;
  words.forEach((w, i) => spans[i].classList.toggle("now", w.start_s <= t && t < w.end_s));
  if (!$("audio").paused) requestAnimationFrame(highlight);
}

// "WORD  PH ON ES" lines -> {word: "PH ON ES"}; the server checks every entry (audiopd.text.lexicon).
function lexiconOf(text) {
  const out = {};
  for (const line of text.split("\n")) {
    const body = line.trim();
    if (!body || body.startsWith(";;;")) continue;
    const [word, ...phones] = body.split(/\s+/);
    out[word] = phones.join(" ");
  }
  return out;
}

async function play() {
  const body = { text: $("text").value, voice: $("voice").value || null, mode: $("mode").value, format: "json" };
  const lexicon = lexiconOf($("lexicon").value);
  if (Object.keys(lexicon).length) body.lexicon = lexicon;
  if ($("steps").value) body.steps = Number($("steps").value);
  if ($("speed").value) body.speed = Number($("speed").value);
  $("play").disabled = true;
  setStatus("speaking...", false);
  const t0 = performance.now();
  try {
    const reply = await fetch("/synthesize", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    const data = await reply.json();
    if (!reply.ok) throw new Error(data.error || reply.statusText);
    const bytes = Uint8Array.from(atob(data.audio_wav_base64), (c) => c.charCodeAt(0));
    if (objectUrl) URL.revokeObjectURL(objectUrl);
    objectUrl = URL.createObjectURL(new Blob([bytes], { type: "audio/wav" }));
    const verdict = reply.headers.get("X-Audiopd-Verdict") || "unchecked";
    $("verdict").textContent = verdict + (data.report.check ? " (score " + data.report.check.score.toFixed(2) + ")" : "");
    $("verdict").className = verdict;
    $("path").textContent = reply.headers.get("X-Audiopd-Path") + " (first tried: " +
      reply.headers.get("X-Audiopd-First-Path") + ", K " + data.report.steps + ")";
    $("timing").textContent = data.report.audio_seconds.toFixed(2) + " s of audio in " +
      ((performance.now() - t0) / 1000).toFixed(2) + " s";
    const used = data.report.lexicon;
    $("lexicon-used").textContent = used ? used.words + " word(s) of your own" : "-";
    showWords(data.words);
    const audio = $("audio");
    audio.src = objectUrl;
    setStatus("", false);
    try { await audio.play(); } catch (err) { setStatus("press play on the player (" + err.name + ")", false); }
  } catch (err) {
    setStatus(String(err.message || err), true);
  } finally {
    $("play").disabled = false;
  }
}

$("play").addEventListener("click", play);
$("audio").addEventListener("play", () => requestAnimationFrame(highlight));
$("audio").addEventListener("seeked", highlight);
$("audio").addEventListener("ended", highlight);
loadVoices();
