#!/usr/bin/env bash
# Train and ship the default voice from the corpus's token shards (recipes/corpus/run.sh makes them).
# Usage: recipes/voice/run.sh [DATA] [RUN_DIR]      (defaults: ./data, ./runs/default)
# Stage 1 resumes from the newest checkpoint in RUN_DIR; stop it any time (Ctrl-C, --max-minutes) and rerun.
# Several GPUs/processes: TRAIN="torchrun --nproc_per_node=N -m audiopd.train" recipes/voice/run.sh
set -euo pipefail
DATA="${1:-data}"
RUN="${2:-runs/default}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$HERE/../.."
PY="${PYTHON:-python3}"
TRAIN="${TRAIN:-$PY -m audiopd.train}"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
SHARDS=("$DATA"/tokens/world16k/train-*.safetensors)
HELD_OUT=("$DATA"/tokens/world16k/test-*.safetensors)

echo "== 1 train ($RUN)"
RESUME=()
[ -d "$RUN/checkpoints" ] && RESUME=(--resume)
$TRAIN --config "$HERE/conf/default.yaml" --shards "${SHARDS[@]}" --val-shards "${HELD_OUT[@]}" --out "$RUN" \
  "${RESUME[@]}" ${MAX_MINUTES:+--max-minutes "$MAX_MINUTES"}

echo "== 2 export -> voices/flite"
"$PY" -m audiopd.train.export "$RUN" "$REPO/voices/flite" --checker "$HERE/conf/checker.yaml"

echo "== 3 held-out evaluation"
"$PY" -m audiopd.eval.tts_eval --data "$DATA" --voice "$REPO/voices/flite" --n 25 --out "$RUN/eval.json"
