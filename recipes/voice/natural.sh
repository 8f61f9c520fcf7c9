#!/usr/bin/env bash
# Train and ship the natural voice voices/joe (issue 23's first natural voice): Piper joe's 2.5 h of the natural
# corpus (recipes/natural/), quantised by codecs/mel22k, then the model of conf/natural_gpu.yaml (the shipped
# weights: 3,250 steps, 5.5 min on one H200). Without a GPU the same config trains on the CPU (19 s a step at
# batch 19,200 on the 2-core machine, ~17 h; MAX_MINUTES bounds a call and a rerun resumes); CONF=recipes/voice/conf/natural.yaml is the 70-minute
# CPU schedule (held-out figures of both: recipes/voice/README.md).
# Usage: recipes/voice/natural.sh [NDATA] [RUN_DIR]      (defaults: ./data/natural, ./runs/natural)
#        env: CONF (training config), DEVICE (cpu, cuda; default cuda where torch sees one), MAX_MINUTES
# Needs the `teachers` extra and fortunes (recipes/natural/README.md). Every stage resumes where it stopped:
# stop it any time and rerun (MAX_MINUTES bounds one training call).
set -euo pipefail
DATA="${1:-data/natural}"
RUN="${2:-runs/natural}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$HERE/../.."
NAT="$REPO/recipes/natural"
PY="${PYTHON:-python3}"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"

echo "== 1 corpus: joe's 2.5 h of train sentences, every dev and test sentence, aligned and tokenised"
"$PY" "$NAT/01_text.py" --data "$DATA"
"$PY" "$NAT/02_render.py" --data "$DATA" --voices piper:joe --threads 2
# --force: stage 02 is marked done for joe by now; rendered utterances are skipped, so a rerun costs seconds.
"$PY" "$NAT/02_render.py" --data "$DATA" --voices piper:joe --threads 2 --splits test,dev --hours-per-voice 0 --force
"$PY" "$NAT/03_align.py" --data "$DATA" --voices piper:joe
"$PY" "$NAT/04_tokens.py" --data "$DATA"

echo "== 2 train ($RUN)"
RESUME=()
[ -d "$RUN/checkpoints" ] && RESUME=(--resume)
CONF="${CONF:-$HERE/conf/natural_gpu.yaml}"
DEVICE="${DEVICE:-$("$PY" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')}"
"$PY" -m audiopd.train --config "$CONF" --device "$DEVICE" --shards "$DATA"/tokens/mel22k/train-*.safetensors \
  --val-shards "$DATA"/tokens/mel22k/dev-*.safetensors --out "$RUN" "${RESUME[@]}" \
  ${MAX_MINUTES:+--max-minutes "$MAX_MINUTES"}

echo "== 3 export -> voices/joe (joe alone: the corpus's speaker table also names the Kokoro voices)"
"$PY" -m audiopd.train.export "$RUN" "$REPO/voices/joe" --speakers joe --codec "$REPO/codecs/mel22k" \
  --checker "$HERE/conf/checker_joe.yaml"

echo "== 4 held-out evaluation (all 226 test sentences; Whisper tiny.en and DistillMOS, the teacher beside)"
"$PY" -m audiopd.eval.tts_eval --data "$DATA" --voice "$REPO/voices/joe" --n 226 --modes parallel,serial,auto \
  --threads 2 --no-dnsmos --out "$RUN/eval.json"
