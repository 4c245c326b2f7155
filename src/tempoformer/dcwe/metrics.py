"""Torch-free metrics and tests of the DCWE tables: the Wilcoxon signed-rank test on paired
per-document MLM losses (Table 2), macro-F1 and the exact McNemar test of two sentiment
classifiers on the same documents (Table 5). The tables job imports only this, not torch.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from ..training.metrics import f1_scores

LABELS = ["negative", "positive"]


def wilcoxon(a: pl.DataFrame, b: pl.DataFrame) -> dict:
    """Wilcoxon signed-rank on paired per-document mean CE (a, b: document_losses on one split)."""
    from scipy import stats

    joined = a.join(b, on="doc_id", suffix="_b", how="inner")
    if joined.height != a.height or joined.height != b.height:
        raise ValueError(f"per-document losses do not pair: {a.height} and {b.height} documents, "
                         f"{joined.height} in common")
    x = (joined["loss_sum"] / joined["n_masked"]).to_numpy()
    y = (joined["loss_sum_b"] / joined["n_masked_b"]).to_numpy()
    diff = x - y
    result = {"n": int(len(diff)), "mean_diff": float(diff.mean()) if len(diff) else None,
              "statistic": None, "p": None}
    if np.any(diff != 0):
        test = stats.wilcoxon(x, y)
        result.update(statistic=float(test.statistic), p=float(test.pvalue))
    else:
        result["p"] = 1.0
    return result


def classify(probs: np.ndarray) -> np.ndarray:
    """1 where P(positive) > 0.5 (torch.round: 0.5 -> 0)."""
    return (np.asarray(probs) > 0.5).astype(np.int64)


def scores(gold: np.ndarray, pred: np.ndarray) -> dict:
    """Macro-F1 (the authors' metric), per-class F1, accuracy, counts."""
    gold, pred = np.asarray(gold), np.asarray(pred)
    f1 = f1_scores(gold, pred, LABELS)
    return {"macro_f1": f1["macro"], "f1_negative": f1["negative"], "f1_positive": f1["positive"],
            "accuracy": float(np.mean(gold == pred)) if len(gold) else None, "documents": int(len(gold)),
            "positive_gold": int(gold.sum()), "positive_predicted": int(pred.sum())}


def mcnemar(gold, pred_a, pred_b) -> dict:
    """Exact (binomial) McNemar test of two classifiers on the same documents.

    b = documents A gets right and B wrong, c = the reverse; under H0 b ~ Binomial(b + c, 1/2);
    two-sided p = min(1, 2 P(X <= min(b, c))) (1 when b + c = 0)."""
    gold, pred_a, pred_b = (np.asarray(x) for x in (gold, pred_a, pred_b))
    if not (len(gold) == len(pred_a) == len(pred_b)):
        raise ValueError(f"McNemar needs paired predictions: {len(gold)}, {len(pred_a)}, {len(pred_b)}")
    right_a, right_b = pred_a == gold, pred_b == gold
    b, c = int(np.sum(right_a & ~right_b)), int(np.sum(~right_a & right_b))
    n = b + c
    p = 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n)
    return {"b": b, "c": c, "n": n, "p": p, "documents": int(len(gold))}


def paired_predictions(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    """Two runs' predictions (doc_id, label, pred) joined on doc_id; they must cover the same documents."""
    joined = a.select("doc_id", "label", "pred").join(b.select("doc_id", "label", pred_b="pred"), on="doc_id",
                                                      how="inner", suffix="_b")
    if joined.height != a.height or joined.height != b.height:
        raise ValueError(f"predictions do not pair: {a.height} and {b.height} documents, {joined.height} in common")
    if (joined["label"] != joined["label_b"]).any():
        raise ValueError("predictions of the same documents carry different gold labels")
    return joined
