"""What a run was made with, beyond its fingerprint: recorded in metrics.json under `setup`.

The fingerprint says whether a run is current; this says what its numbers rest on, in words a
reader of the record can check: the device and arithmetic (a GPU's bf16 autocast is not the
CPU's fp32), the kernels, and for a transformer its backbone (name, what model it is, the sha256
of the weights file actually loaded), how a post becomes one vector and how many word pieces it keeps.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from ..backbones import BACKBONES, backbone_path
from ..device import numerics, precision


@functools.cache
def weights_sha256(folder: str) -> str | None:
    """sha256 of a backbone folder's model.safetensors (None when it has none, e.g. a hub id)."""
    path = Path(folder) / "model.safetensors"
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_setup(spec, params: dict, device: str, net=None) -> dict:
    """The `setup` block of a run's metrics.json. net: the selected model (its resolved pooling)."""
    setup = {"precision": precision(device), "numerics": numerics(device)}
    if "backbone" in dict(spec.extras):
        name = params.get("backbone", "minilm")
        registered = BACKBONES.get(name)
        sha = weights_sha256(backbone_path(name))
        setup["backbone"] = {
            "name": name, "model": registered.model if registered else name, "weights_sha256": sha,
            "matches_table": None if registered is None else sha == registered.weights_sha256}
        setup["max_tokens"] = params.get("max_tokens", 128)
        setup["post_pooling"] = getattr(getattr(net, "config", None), "post_pooling", None)
    return setup
