#!/usr/bin/env bash
# One lent-GPU call (issue 43): continue the natural voice from its last shipped weights on a natural corpus's
# token shards, export it and leave it under OUT; the run's optimizer state stays on the machine.
# Usage: recipes/voice/gpu.sh TOKENS OUT
#   TOKENS  the corpus's token folder, DATA/tokens/mel22k (recipes/natural stage 04: train-* and dev-* shards)
#   OUT     where the exported voice (OUT/voice, float16) and the training log (OUT/log.jsonl) go
#   env: INIT (weights to start from; default voices/natural, else voices/joe), CONF (default
#        conf/kokoro_gpu.yaml), DEVICE (default cuda), MAX_MINUTES (training's wall-clock cap, default 5: the
#        export and the refiner need the rest of a 9-minute call),
#        MAX_STEPS (a shorter stop, for a smoke test), SPEAKERS (exported speakers; default heart and adam),
#        REFINER_STEPS / REFINER_MINUTES / REFINER_THREADS (the mel refiner's run after the export: 4000 steps,
#        at most 2 minutes, every core; on this 2-core CPU 15000 and 40 gave the shipped refiner),
#        PARALLEL_STEPS (the exported voice's own K; default INIT's: re-choose it on the dev split, README.md
#        "Two passes and a fair bench"), LEVEL0_TEMPERATURE (its level-0 temperature, chosen with K; default
#        INIT's, README.md "One greedy pass"), WEAK_FORMS (true when TOKENS carry weak-form labels,
#        recipes/natural/05_weak_forms.py; default INIT's: voices/natural has it since 2026-12-06, so relabel a
#        corpus's shards with stage 05 before continuing it), DUR_SHARDS (more dev shards for the duration
#        calibration, space-separated: joe's, which TOKENS of the Kokoro corpus lack)
# On a lent machine (the device tool), from the repository root, inside one call of <= 9 minutes:
#   recipes/voice/gpu.sh path/to/tokens/mel22k "$OUT"
# then, here: copy OUT/voice over voices/natural if its dev figures improve (recipes/voice/README.md); OUT/voice
# carries a mel refiner trained on the new weights' own predictions.
# Without a GPU, the CPU schedule in the background (a 2-core machine, ~2.5 s a step):
#   DEVICE=cpu CONF=recipes/voice/conf/kokoro.yaml MAX_MINUTES=110 nohup nice recipes/voice/gpu.sh TOKENS OUT &
set -euo pipefail
TOKENS="${1:?usage: gpu.sh TOKENS OUT}"
OUT="${2:?usage: gpu.sh TOKENS OUT}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PY="${PYTHON:-python3}"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
INIT="${INIT:-$([ -d "$REPO/voices/natural" ] && echo "$REPO/voices/natural" || echo "$REPO/voices/joe")}"
RUN="$(mktemp -d)/run"
mkdir -p "$OUT"
shopt -s nullglob
TRAIN=("$TOKENS"/train-*.safetensors)
DEV=("$TOKENS"/dev-*.safetensors)
[ ${#TRAIN[@]} -gt 0 ] || { echo "error: no train-*.safetensors in $TOKENS" >&2; exit 2; }
[ ${#DEV[@]} -gt 0 ] || { echo "error: no dev-*.safetensors in $TOKENS" >&2; exit 2; }

echo "== train from $INIT"
"$PY" -m audiopd.train --config "${CONF:-$HERE/conf/kokoro_gpu.yaml}" --device "${DEVICE:-cuda}" \
  --init-from "$INIT" --map-speakers --shards "${TRAIN[@]}" --val-shards "${DEV[@]}" --out "$RUN" \
  --max-minutes "${MAX_MINUTES:-5}" ${MAX_STEPS:+--max-steps "$MAX_STEPS"}
cp "$RUN/log.jsonl" "$OUT/log.jsonl"

echo "== export -> $OUT/voice"
PSTEPS="${PARALLEL_STEPS:-$(sed -n 's/^parallel_steps: *//p' "$INIT/config.yaml")}"
L0TEMP="${LEVEL0_TEMPERATURE:-$(sed -n 's/^level0_temperature: *//p' "$INIT/config.yaml")}"
"$PY" -m audiopd.train.export "$RUN" "$OUT/voice" --speakers "${SPEAKERS:-kokoro:af_heart,kokoro:am_adam}" \
  --codec "$REPO/codecs/mel22k" --checker "$HERE/conf/checker_natural.yaml" --dtype float16 \
  --parallel-steps "${PSTEPS:-0}" $([ -n "$L0TEMP" ] && [ "$L0TEMP" != null ] && echo --level0-temperature "$L0TEMP") \
  $([ "${WEAK_FORMS:-$(sed -n 's/^weak_forms: *//p' "$INIT/config.yaml")}" = true ] && echo --weak-forms)

# Each speaker's durations put back to its teacher's total on the dev split (VoiceInfo.duration_scale; README.md,
# "Duration calibration"); DUR_SHARDS adds held-out shards of speakers TOKENS lacks (joe's dev split).
echo "== duration calibration -> $OUT/voice/config.yaml"
"$PY" -m audiopd.train.duration_scale --voice "$OUT/voice" "${DEV[@]}" ${DUR_SHARDS:-} --write

# The mel refiner learns the new weights' own mistakes (audiopd/model/refiner.py), starting from the refiner that
# INIT ships; a voice without one would decode through the codec's blur alone.
echo "== mel refiner -> $OUT/voice"
"$PY" -m audiopd.train.refiner --voice "$OUT/voice" --tokens "$TOKENS" --steps "${REFINER_STEPS:-4000}" \
  --max-minutes "${REFINER_MINUTES:-2}" --threads "${REFINER_THREADS:-$(nproc)}" \
  $([ -f "$INIT/refiner.yaml" ] && echo --init-from "$INIT")
