"""Post-level Random baseline: labels drawn from the training fold's class distribution."""

from __future__ import annotations

import numpy as np

from ..training.metrics import f1_scores


def predict(data, seed: int) -> tuple[np.ndarray, dict]:
    """One-hot test 'probabilities' of labels drawn from the training prior, and the search log."""
    prior = np.bincount(data.y[data.rows["train"]], minlength=len(data.labels)) / len(data.rows["train"])
    rng = np.random.default_rng(seed)
    pred = rng.choice(len(data.labels), size=len(data.rows["test"]), p=prior)
    prob = np.eye(len(data.labels), dtype=np.float32)[pred]
    dev_pred = rng.choice(len(data.labels), size=len(data.rows["dev"]), p=prior)
    dev_macro = f1_scores(data.y[data.rows["dev"]], dev_pred, data.labels)["macro"]
    return prob, {"selected": {"prior": prior.round(6).tolist()}, "dev_macro": dev_macro, "grid": []}
