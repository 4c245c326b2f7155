"""Where a pretrained causal LM's weights are and how transformers opens them, from the name a
config gives (`base_model:` and `tokenizer:` of the future-LM stage, `model:` of the LLM rows).

A name is one of:
- a registered model published as one GGUF file (backbones.py; `smollm2-135m`, the 4-bit
  SmolLM2-135M-Instruct): set up as that file, `$TEMPOFORMER_BACKBONES/<entry's folder>`, where
  the entry's `folder` names the .gguf file (`<folder>/<file>.gguf`) and its `weights_sha256` is
  that file's (scripts/setup_backbone.sh verified it when it put it there);
- a path to a .gguf file;
- anything else: backbone_path's answer (a registered folder, or a folder / hub id as given).

transformers opens a GGUF with `from_pretrained(folder, gguf_file=file)` and de-quantizes it to
float32; that needs the `gguf` and `accelerate` packages, the optional extra `gguf` of
pyproject.toml, which the opt-in set-up installs. Light (no torch), as backbones.py.

The GGUF entries are told apart by their `folder` (a .gguf path) rather than by a field of their
own: the Backbone class is code every training job's fingerprint covers, so a new field would
make every committed run stale (fingerprint.py), while an entry of the table is data that only
the jobs naming it take.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from .backbones import BACKBONES, BackboneMissing, backbone_path, backbones_dir

GGUF = ".gguf"
GGUF_PACKAGES = ("gguf", "accelerate")  # pinned by pyproject.toml's optional extra `gguf`


def is_gguf_entry(name: str) -> bool:
    spec = BACKBONES.get(name)
    return spec is not None and spec.folder.endswith(GGUF)


def gguf_file(name: str) -> Path:
    """The set-up .gguf file of a registered GGUF model; BackboneMissing (with the set-up command)
    when this machine has not set it up."""
    spec = BACKBONES[name]
    path = backbones_dir() / spec.folder
    if not path.is_file():
        raise BackboneMissing(
            f"model {name!r} ({spec.model}) is not set up: {path} does not exist. "
            f"It is an opt-in download: {spec.obtain}. "
            f"(TEMPOFORMER_BACKBONES names the folder that holds backbones; now {backbones_dir()})")
    return path


def weights_path(name: str) -> str:
    """What `tokenizer:`/`base_model:`/`model:` names, as a path or hub id: a registered GGUF
    model's file, else backbone_path's answer (a .gguf path passes through unchanged)."""
    return str(gguf_file(name)) if is_gguf_entry(name) else backbone_path(name)


def require_gguf_packages(path: str) -> None:
    missing = [p for p in GGUF_PACKAGES if importlib.util.find_spec(p) is None]
    if missing:
        raise RuntimeError(
            f"{path}: opening a GGUF file needs the packages {', '.join(missing)} (the optional extra "
            f"`gguf`: bash scripts/setup_backbone.sh smollm2-135m installs it, or pip install -e '.[gguf]')")


def pretrained_source(name: str) -> tuple[str, dict]:
    """(folder or hub id, the extra keyword arguments of from_pretrained) for a name: a GGUF file
    opens as (its folder, {"gguf_file": its file name})."""
    path = weights_path(name)
    if not path.endswith(GGUF):
        return path, {}
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such GGUF file")
    require_gguf_packages(path)
    return str(Path(path).parent), {"gguf_file": Path(path).name}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_record(name: str) -> dict:
    """What a run loaded for `name`, for its record: the model it is, the file read and that file's
    sha256 (a GGUF file, or a folder's model.safetensors; None when neither is on disk, e.g. a hub
    id), and whether the sha256 is the registry's (None for an unregistered name)."""
    path = Path(weights_path(name))
    weights = path if path.suffix == GGUF else path / "model.safetensors"
    sha = sha256_file(weights) if weights.is_file() else None
    spec = BACKBONES.get(name)
    return {"name": name, "model": spec.model if spec else name, "file": weights.name, "weights_sha256": sha,
            "matches_table": None if spec is None else sha == spec.weights_sha256}
