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
"$PY" "$B/lease_queue.py" --commands "$B/commands.txt" --budget "$left" --parallel "$parallel" --log "$OUT/queue.log" || true
pkill -f "nvidia-smi --query-gpu=timestamp" || true
"$PY" - "$B/commands.txt" "$OUT/runs.tar" "$start" <<'PY'
import re, shlex, sys, tarfile
from pathlib import Path
start = float(sys.argv[3])  # runs finished before this call (tracked, carried with the tree) stay out
with tarfile.open(sys.argv[2], "w") as tar:
    for command in Path(sys.argv[1]).read_text().splitlines():
        if not command.strip():
            continue
        words = shlex.split(command)
        run = Path(words[words.index("--out-dir") + 1])
        if (run / "metrics.json").exists() and (run / "metrics.json").stat().st_mtime >= start:
            for name in ("metrics.json", "predictions.parquet"):
                tar.add(run / name)
            log = re.search(r"2> (\S+)\s*$", command)
            if log and Path(log.group(1)).exists():
                tar.add(log.group(1))
    print(f"run.sh: {len(tar.getnames())} files in {sys.argv[2]}")
PY
