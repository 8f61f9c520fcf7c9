#!/usr/bin/env bash
# Build the natural multi-speaker corpus: sentences -> Kokoro/Piper renders -> aligned token durations
# -> mel-codec token shards for audiopd.train.
# Usage: recipes/natural/run.sh [DATA]   (DATA defaults to ./data/natural; PYTHON overrides the interpreter)
# Needs the `teachers` extra and recipes/teachers/install.sh. Every stage resumes where it stopped; stage 02 takes
# many CPU hours (README.md): run it in the background with `nohup nice -n 19` and rerun this script to go on.
set -euo pipefail
DATA="${1:-data/natural}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
export PYTHONPATH="$HERE/../..${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
for stage in 01_text 02_render 03_align 04_tokens; do
  echo "== $stage"
  "$PY" "$HERE/$stage.py" --data "$DATA"
done
