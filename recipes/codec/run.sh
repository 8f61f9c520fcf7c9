#!/usr/bin/env bash
# Rebuild the mel codec (codecs/mel22k): natural sentences -> renders -> RVQ -> fast vocoder -> evaluation.
# Usage: recipes/codec/run.sh [DATA]   (DATA defaults to ./data/codec; PYTHON overrides the interpreter)
# Needs the teachers, eval and hq extras and recipes/teachers/install.sh. Every stage resumes where it stopped.
# Stage 03 trains for --hours per call (default here 1); rerun this script to train on, or run 03 alone in the
# background (README.md). Stage 04 judges what exists (hq, and fast once exported with 03 --export).
set -euo pipefail
DATA="${1:-data/codec}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
export PYTHONPATH="$HERE/../..${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
"$PY" "$HERE/../natural/01_text.py" --data "$DATA"
"$PY" "$HERE/01_render.py" --data "$DATA"
"$PY" "$HERE/02_fit_rvq.py" --data "$DATA"
# The shipped fast decoder: a harmonic head, its magnitude trained directly on clean mels to step 169,168, then on
# clean and quantised mels with the waveform losses on FGLA's output too (shipped at step 188,719); at decode, the
# postfilter (exponent 2.5 rising to 4 at 4 kHz) and 12 fast Griffin-Lim iterations (momentum 1.1); the default.
# --smooth-frames 0.7: the decode-time blur over time that stage 08 chose on voices/natural's output.
"$PY" "$HERE/03_train_vocoder.py" --data "$DATA" --head harmonic --quantized-p 0 --max-utterances 480 --batch 16 \
    --spec-weight 1 --wave-weight 0 --complex-weight 0 --steps 169168 --hours "${TRAIN_HOURS:-1}"
"$PY" "$HERE/03_train_vocoder.py" --data "$DATA" --head harmonic --quantized-p 0.5 --max-utterances 480 --batch 16 \
    --spec-weight 1 --wave-weight 1 --complex-weight 0 --lr 1e-4 --hours "${TRAIN_HOURS:-1}"
"$PY" "$HERE/03_train_vocoder.py" --data "$DATA" --export --head harmonic --phase-iters 12 --phase-momentum 1.1 \
    --sharpen 2.5 --sharpen-high 4 --sharpen-high-hz 4000 --smooth-frames 0.7 --default-decoder fast
"$PY" "$HERE/04_evaluate.py" --data "$DATA"
