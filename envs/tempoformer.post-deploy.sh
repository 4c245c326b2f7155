#!/usr/bin/env bash
# Snakemake runs this inside the new environment (--use-conda), from the working directory:
# install the tempoformer package from the repository there (its pinned dependencies are in
# tempoformer.yaml already).
set -euo pipefail
if ! grep -qs '^name = "tempoformer"' pyproject.toml; then
  echo "tempoformer.post-deploy.sh: run snakemake from the repository root (the folder with" \
       "pyproject.toml), or pip install the package into this environment yourself" >&2
  exit 1
fi
python -m pip install --no-deps --no-build-isolation -e .
