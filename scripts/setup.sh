#!/usr/bin/env bash
# Create .venv with the pinned environment and the tempoformer package (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
log=$(mktemp)
if ! .venv/bin/pip install --disable-pip-version-check -e . >"$log" 2>&1; then
  cat "$log"; rm -f "$log"; echo "setup: pip install failed" >&2; exit 1
fi
rm -f "$log"
.venv/bin/python -c "import tempoformer, torch, transformers, snakemake; print('environment ready: torch', torch.__version__, '/ transformers', transformers.__version__)"
