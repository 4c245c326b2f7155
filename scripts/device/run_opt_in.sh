#!/usr/bin/env bash
# Last device call of an opt-in backbone's lease (after every carry's stage.sh): rebuild the
# backbone, put the data in place, check CUDA against the CPU, run the queue, and leave the
# finished runs in $OUT/runs.tar. Usage: run_opt_in.sh <backbone> <budget seconds> <runs at a time> [per-run s]
set -euo pipefail
STAGE=${STAGE:-/tmp/device}
SITE=${SITE:-/tmp/site}
PY=${PYTHON:-python3}
: "${OUT:?OUT must name the folder whose files come back}"
backbone=${1:?backbone}; budget=${2:?budget in seconds}; parallel=${3:-16}; per_run=${4:-20}
start=$(date +%s)
mkdir -p "$SITE" "$STAGE/bin"
tar -xJf "$STAGE/polars.tar.xz" -C "$SITE"
export PYTHONPATH=$PWD/src:$SITE HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 PATH=$STAGE/bin:$PATH
export TEMPOFORMER_BACKBONES=$STAGE/backbones
folder=$("$PY" -c "from tempoformer.backbones import BACKBONES; print(BACKBONES['$backbone'].folder)")
"$PY" scripts/device/backbone_pack.py join --stage "$STAGE" --dest "$TEMPOFORMER_BACKBONES/$folder"
"$PY" scripts/device/backbone_pack.py check-tokens --stage "$STAGE" --model-dir "$TEMPOFORMER_BACKBONES/$folder"
cp -r "$STAGE/data/." .
printf '#!/bin/sh\nexec %s -m tempoformer "$@"\n' "$PY" > "$STAGE/bin/tempoformer"
chmod +x "$STAGE/bin/tempoformer"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
(nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 15 > "$OUT/gpu.csv" 2>&1 &) || true
# the CUDA paths against the CPU, beside the queue (the GPU has room for both)
(timeout 300 "$PY" -m pytest -q -p no:cacheprovider tests/test_cuda.py > "$OUT/cuda_tests.log" 2>&1 || true) &
left=$(( budget - ($(date +%s) - start) - 15 ))
"$PY" scripts/device/lease_queue.py --commands "$STAGE/commands.txt" --budget "$left" --parallel "$parallel" \
  --per-run-s "$per_run" --startup-s 30 --log "$OUT/queue.log" --tar "$OUT/runs.tar" || true
wait || true
pkill -f "nvidia-smi --query-gpu=timestamp" || true
