#!/usr/bin/env bash
# Second device call (carry .device/b): rebuild MiniLM, put the data in place, run the queue,
# and leave the finished runs in $OUT/runs.tar.  Usage: run.sh <budget seconds> <runs at a time>
set -euo pipefail
B=$(cd "$(dirname "$0")" && pwd)
SITE=${SITE:-/tmp/site}
STAGE=${STAGE:-/tmp/device}
PY=${PYTHON:-python3}
: "${OUT:?OUT must name the folder whose files come back}"
budget=${1:?budget in seconds}; parallel=${2:-16}
start=$(date +%s)
export PYTHONPATH=$PWD/src:$SITE HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 PATH=$STAGE/bin:$PATH
"$PY" "$B/minilm_pack.py" join --rows "$STAGE/word_rows.safetensors" --second "$B" \
  --package-init "$B/package_init.py" --site "$SITE"
cp -r "$B/data/." .
"$PY" "$B/minilm_pack.py" check-tokens --rows "$STAGE/word_rows.safetensors" --second "$B"
mkdir -p "$STAGE/bin"
printf '#!/bin/sh\nexec %s -m tempoformer "$@"\n' "$PY" > "$STAGE/bin/tempoformer"
chmod +x "$STAGE/bin/tempoformer"
(nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 15 > "$OUT/gpu.csv" 2>&1 &) || true
# what is left of the budget after the set-up above, less a margin for the tar
left=$(( budget - ($(date +%s) - start) - 15 ))
"$PY" "$B/lease_queue.py" --commands "$B/commands.txt" --budget "$left" --parallel "$parallel" \
  --log "$OUT/queue.log" --tar "$OUT/runs.tar" || true
pkill -f "nvidia-smi --query-gpu=timestamp" || true
