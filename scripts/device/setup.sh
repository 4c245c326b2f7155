#!/usr/bin/env bash
# First device call (carry .device/a): unpack polars and the word-embedding rows the posts use.
# They stay in /tmp while the machine is warm (30 s after a call), so the second call, with the
# rest of MiniLM, the data and the commands, must follow at once.
set -euo pipefail
A=$(cd "$(dirname "$0")" && pwd)
SITE=${SITE:-/tmp/site}
STAGE=${STAGE:-/tmp/device}
PY=${PYTHON:-python3}
mkdir -p "$SITE" "$STAGE"
tar -xJf "$A/polars.tar.xz" -C "$SITE"
cp "$A/word_rows.safetensors" "$STAGE/"
PYTHONPATH=$SITE "$PY" -c "import polars, torch, transformers; print('setup: polars', polars.__version__, '/ torch', torch.__version__, '/ transformers', transformers.__version__, '/ cuda', torch.cuda.is_available())"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
