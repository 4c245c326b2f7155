"""The training loop's settings (`TrainSettings`), in a module of their own.

A leaf: it imports nothing of the package, so the models' setups and the model registry read the
settings' fields without importing the training loop (which imports the registry in turn): no
import cycle between `tempoformer.models` and `tempoformer.training` (tests/test_import_graph.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TrainSettings:
    # Each field's range (tempoformer/settings.py): the workflow's start-up checks and the run's
    # own check (models/registry.py validate_params) refuse a value outside it, naming it.
    lr: float = field(metadata={"range": "> 0"})
    epochs: int = field(metadata={"range": ">= 1"})
    batch_size: int = field(metadata={"range": ">= 1"})
    # epochs without a dev gain before training stops (0 would stop as 1 does)
    patience: int = field(default=3, metadata={"range": ">= 1"})
    grad_accum: int = field(default=1, metadata={"range": ">= 1"})
    # "adam" (stream baselines) | "adamw" (transformers)
    optimizer: str = field(default="adam", metadata={"range": ("adam", "adamw")})
    # "none" | "linear" (linear decay to 0, stepped per optimizer step)
    schedule: str = field(default="none", metadata={"range": ("none", "linear")})
    weight_decay: float = field(default=0.0, metadata={"range": ">= 0"})
    # "shuffle" rows | "chunk": consecutive rows, chunks shuffled
    batching: str = field(default="shuffle", metadata={"range": ("shuffle", "chunk")})
    eval_batch_size: int = field(default=64, metadata={"range": ">= 1"})
