"""The training loop's settings (`TrainSettings`), in a module of their own.

A leaf: it imports nothing of the package, so the models' setups and the model registry read the
settings' fields without importing the training loop (which imports the registry in turn): no
import cycle between `tempoformer.models` and `tempoformer.training` (tests/test_import_graph.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainSettings:
    lr: float
    epochs: int
    batch_size: int
    patience: int = 3
    grad_accum: int = 1
    optimizer: str = "adam"  # "adam" (stream baselines) | "adamw" (transformers)
    schedule: str = "none"  # "none" | "linear" (linear decay to 0, stepped per optimizer step)
    weight_decay: float = 0.0
    batching: str = "shuffle"  # "shuffle" rows | "chunk": consecutive rows, chunks shuffled
    eval_batch_size: int = 64
