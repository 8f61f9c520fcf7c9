#!/usr/bin/env bash
# Rebuild the checker's phone recogniser (checkers/phones16k): clips -> CTC training -> artifact.
# Usage: recipes/checker/run.sh [DATA] [MINUTES]   (DATA defaults to ./data/checker; PYTHON overrides the
# interpreter). Needs the `teachers` extra (Piper, Kokoro), Debian flite and fortunes. Every stage resumes:
# rerun to go on; 02 trains MINUTES per call (default 45) until its schedule ends.
set -euo pipefail
DATA="${1:-data/checker}"
MINUTES="${2:-45}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
export PYTHONPATH="$HERE/../..${PYTHONPATH:+:$PYTHONPATH}"
NATURAL="$DATA/natural"
"$PY" "$HERE/../natural/01_text.py" --data "$NATURAL"
OMP_NUM_THREADS=1 "$PY" "$HERE/01_clips.py" --data "$DATA" --natural "$NATURAL" --threads 1
"$PY" "$HERE/02_train.py" --data "$DATA" --minutes "$MINUTES" --threads 2
"$PY" "$HERE/03_export.py" --data "$DATA" --out "$HERE/../../checkers/phones16k"
