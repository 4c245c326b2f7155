"""The DCWE variants and training settings, importable without torch: the workflow reads them
when it parses its rules (workflow/rules/dcwe.smk), and every Snakemake start parses them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..settings import settings_from_dict

# config variant -> mode (the paper's names: DCWE, SA social ablation, TA temporal ablation;
# static: beyond the paper, one learned offset per word, neither time nor social context)
VARIANTS = {"cwe": "cwe", "dcwe": "full", "sa": "time_only", "ta": "social_only", "static": "static"}
WALK_AT_T0 = ("skip", "authors")
PRIOR_NORMS = ("paper", "authors")


@dataclass
class DCWETrainSettings:
    # ranges: tempoformer/settings.py (checked at start-up, config_checks.py, and by from_dict)
    steps: int = field(default=100, metadata={"range": ">= 1"})
    # instead of steps: passes over the training documents, each followed by a dev evaluation
    # (the best epoch is kept); with `patience`, the most epochs
    epochs: int | None = field(default=None, metadata={"range": ">= 1"})
    # with epochs: stop after this many epochs in a row without a better dev value (None: run
    # all `epochs`, the paper's reading: a fixed number of epochs, each one a trial)
    patience: int | None = field(default=None, metadata={"range": ">= 1"})
    batch_size: int = field(default=4, metadata={"range": ">= 1"})
    lr: float = field(default=3e-6, metadata={"range": "> 0"})  # backbone and MLM head (the paper's best)
    # offset FFNs and GATs (None: lr, as the authors)
    dynamic_lr: float | None = field(default=None, metadata={"range": "> 0"})
    # a new head: the warm-up's MLM head, the sentiment classifier (None: lr)
    head_lr: float | None = field(default=None, metadata={"range": "> 0"})
    mlm_probability: float = field(default=0.15, metadata={"range": "(0, 1]"})
    lambda_a: float = field(default=0.1, metadata={"range": ">= 0"})  # anchor prior (the paper's best)
    lambda_w_ratio: float = field(default=1000.0, metadata={"range": ">= 0"})  # lambda_w = ratio * lambda_a
    prior_norm: str = field(default="paper", metadata={"range": PRIOR_NORMS})  # paper | authors
    walk_at_t0: str = field(default="skip", metadata={"range": WALK_AT_T0})  # skip | authors
    max_grad_norm: float | None = field(default=None, metadata={"range": "> 0"})

    def __post_init__(self):
        if self.prior_norm not in PRIOR_NORMS:
            raise ValueError(f"prior_norm must be one of {PRIOR_NORMS}, got {self.prior_norm!r}")
        if self.walk_at_t0 not in WALK_AT_T0:
            raise ValueError(f"walk_at_t0 must be skip or authors, got {self.walk_at_t0!r}")
        if self.patience is not None and self.epochs is None:
            raise ValueError("patience needs epochs (the most epochs to run): with steps there is no dev "
                             "evaluation to stop on")

    @property
    def lambda_w(self) -> float:
        return self.lambda_w_ratio * self.lambda_a

    def steps_per_epoch(self, n_docs: int) -> int:
        return max(1, math.ceil(n_docs / self.batch_size))

    def total_steps(self, n_docs: int) -> int:
        """`steps`, or `epochs` passes over n_docs documents."""
        return self.steps if self.epochs is None else self.epochs * self.steps_per_epoch(n_docs)

    @classmethod
    def from_dict(cls, values: dict | None) -> "DCWETrainSettings":
        return settings_from_dict(cls, values, "training")
