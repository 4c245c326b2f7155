"""Per-class and macro-averaged F1, the paper's metrics.

Counted with numpy: the same numbers as sklearn's `f1_score(average=None, zero_division=0)`
(tests/test_losses_metrics.py checks), without the 1.8 s that importing sklearn.metrics adds to
every training job's start.
"""

from __future__ import annotations

import numpy as np


def f1_scores(gold: np.ndarray, pred: np.ndarray, labels: list[str]) -> dict[str, float]:
    """{label: F1, ..., 'macro': mean of the per-class F1} for integer-coded gold/pred."""
    gold, pred = np.asarray(gold), np.asarray(pred)
    classes = np.arange(len(labels))[:, None]
    tp = np.sum((gold == classes) & (pred == classes), axis=1)
    gold_n, pred_n = np.sum(gold == classes, axis=1), np.sum(pred == classes, axis=1)
    # F1 = 2TP / (|gold| + |pred|); a class with neither gold nor predicted posts scores 0
    denominator = gold_n + pred_n
    per_class = np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), 0.0)
    scores = {label: float(f) for label, f in zip(labels, per_class)}
    scores["macro"] = float(np.mean(per_class))
    return scores
