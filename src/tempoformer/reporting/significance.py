"""Paired bootstrap test of macro-F1: is model A better than model B on the same test posts?

Both models' predictions cover the same posts (the folds' test sets pooled), once per seed.
Each resample draws with replacement, the same draw for every seed, and compares the models'
macro-F1 averaged over seeds. What is drawn is the unit the data cluster in: with `clusters`
(each post's timeline) whole timelines, each keeping all its posts (a cluster bootstrap: the
posts of one timeline are not independent, and drawing them one by one understates the
spread); without, single posts (Efron's bootstrap). The one-sided p-value is the
share of resamples in which A is not better than B, ties counted half: about 0 when A is
clearly better, 0.5 when the predictions are identical, about 1 when B is clearly better.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

UNITS = ("timeline", "post")


@dataclass(frozen=True)
class Bootstrap:
    """How the tables' significance tests resample: `unit` timeline (default: whole timelines,
    each keeping its posts) or post (the posts one by one, as before issue 68)."""

    resamples: int = 1000
    seed: int = 0
    unit: str = "timeline"

    def __post_init__(self):
        if self.unit not in UNITS:
            raise ValueError(f"bootstrap unit {self.unit!r} is not one of {', '.join(UNITS)}")

    def describe(self) -> str:
        drawn = ("whole test timelines (each keeping all its posts)" if self.unit == "timeline"
                 else "single test posts")
        return f"{self.resamples} resamples of {drawn} (seed {self.seed})"


def macro_f1(gold: np.ndarray, pred: np.ndarray, n_labels: int, weights: np.ndarray | None = None) -> float:
    """Macro-F1 of integer-coded labels, each post counted `weights` times (F1 = 0 for a class
    with no gold and no predicted post, as sklearn's zero_division=0)."""
    confusion = np.bincount(gold * n_labels + pred, weights=weights,
                            minlength=n_labels * n_labels).reshape(n_labels, n_labels)
    tp = np.diag(confusion)
    denominator = confusion.sum(0) + confusion.sum(1)  # 2tp + fp + fn
    f1 = np.divide(2 * tp, denominator, out=np.zeros(n_labels), where=denominator > 0)
    return float(f1.mean())


def paired_bootstrap(gold: np.ndarray, pred_a: np.ndarray, pred_b: np.ndarray, n_labels: int,
                     resamples: int = 1000, seed: int = 0, clusters: np.ndarray | None = None) -> dict:
    """gold: (n,) labels of the pooled test posts; pred_a, pred_b: (seeds, n) predictions of the
    two models, row i of both from the same seed; clusters: (n,) the timeline of each post, or
    None to draw posts. Returns the observed difference of seed-mean macro-F1 (A - B), the
    p-value of "A is not better than B" and the test's settings."""
    gold = np.asarray(gold)
    pred_a, pred_b = np.atleast_2d(pred_a), np.atleast_2d(pred_b)
    if pred_a.shape != pred_b.shape or pred_a.shape[1] != len(gold):
        raise ValueError(f"predictions {pred_a.shape} and {pred_b.shape} do not pair with {len(gold)} gold labels")

    def difference(weights):
        return float(np.mean([macro_f1(gold, a, n_labels, weights) - macro_f1(gold, b, n_labels, weights)
                              for a, b in zip(pred_a, pred_b)]))

    rng = np.random.default_rng(seed)
    n = len(gold)
    if clusters is None:
        unit, codes = "post", np.arange(n)
    else:
        if len(clusters) != n:
            raise ValueError(f"{len(clusters)} cluster ids do not pair with {n} gold labels")
        unit, codes = "timeline", np.unique(np.asarray(clusters), return_inverse=True)[1]
    k = int(codes.max()) + 1
    # weight of a post = how often its unit was drawn
    deltas = np.array([difference(np.bincount(rng.integers(k, size=k), minlength=k).astype(float)[codes])
                       for _ in range(resamples)])
    p_value = (np.sum(deltas < 0) + 0.5 * np.sum(deltas == 0)) / resamples
    return {"difference": difference(None), "p_value": float(p_value), "resamples": resamples,
            "seed": seed, "posts": n, "seeds": int(pred_a.shape[0]), "unit": unit, "units": k}
