#!/usr/bin/env bash
# Build the offline multi-voice corpus and the default codec: sentences -> flite renders -> token durations
# -> WORLD features -> codec fit (codecs/world16k) -> token shards (DATA/tokens/world16k).
# Usage: recipes/corpus/run.sh [DATA]   (DATA defaults to ./data; PYTHON overrides the interpreter)
# Every stage is resumable and skips itself when DATA/corpus/.done-NN exists (pass --force to a
# stage script directly to redo it).
set -euo pipefail
DATA="${1:-data}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
# Stage 03 imports audiopd; make the checkout importable even before `pip install -e .`.
export PYTHONPATH="$HERE/../..${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
for stage in 01_sentences 02_render 03_durations 04_features 05_fit_codec 06_encode; do
  echo "== $stage"
  "$PY" "$HERE/$stage.py" --data "$DATA"
done
