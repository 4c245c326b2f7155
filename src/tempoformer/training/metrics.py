"""Per-class and macro-averaged F1, the paper's metrics."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import f1_score


def f1_scores(gold: np.ndarray, pred: np.ndarray, labels: list[str]) -> dict[str, float]:
    """{label: F1, ..., 'macro': mean of the per-class F1} for integer-coded gold/pred."""
    per_class = f1_score(gold, pred, labels=list(range(len(labels))), average=None, zero_division=0)
    scores = {label: float(f) for label, f in zip(labels, per_class)}
    scores["macro"] = float(np.mean(per_class))
    return scores
