#!/usr/bin/env bash
# Set up the environment and run the whole workflow on the embedded default config.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH" HF_HUB_OFFLINE=1
snakemake --cores all "$@"
