import math

import numpy as np
import torch

from tempoformer.training.losses import focal_alpha, focal_loss
from tempoformer.training.metrics import f1_scores


def test_focal_alpha_and_loss_hand_computed():
    alpha = focal_alpha(np.array([0, 1, 1, 1]), 2)  # p = 1/4, 3/4
    np.testing.assert_allclose(alpha.numpy(), [2.0, math.sqrt(4 / 3)], rtol=1e-6)
    logits = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]])  # p_y: 0.5, then 0.25 for class 1
    target = torch.tensor([0, 1])
    by_hand = (-2.0 * 0.5**2 * math.log(0.5) - math.sqrt(4 / 3) * 0.75**2 * math.log(0.25)) / 2
    assert abs(focal_loss(logits, target, alpha).item() - by_hand) < 1e-6


def test_f1_hand_computed():
    gold = np.array([0, 0, 1, 1, 1])
    pred = np.array([0, 1, 1, 1, 0])
    scores = f1_scores(gold, pred, ["A", "B"])
    # A: tp 1, fp 1, fn 1 → 0.5; B: tp 2, fp 1, fn 1 → 2/3
    assert abs(scores["A"] - 0.5) < 1e-9 and abs(scores["B"] - 2 / 3) < 1e-9
    assert abs(scores["macro"] - (0.5 + 2 / 3) / 2) < 1e-9


def test_f1_equals_sklearn_on_random_predictions():
    """numpy counting gives sklearn's numbers exactly, missing classes included."""
    import numpy as np
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    for n_labels in (2, 3, 5):
        for _ in range(20):
            gold = rng.integers(0, n_labels, size=int(rng.integers(1, 60)))
            pred = rng.integers(0, n_labels - 1, size=gold.size)  # the last class never predicted
            ours = f1_scores(gold, pred, [str(i) for i in range(n_labels)])
            theirs = f1_score(gold, pred, labels=list(range(n_labels)), average=None, zero_division=0)
            assert [ours[str(i)] for i in range(n_labels)] == theirs.tolist()
            assert ours["macro"] == float(np.mean(theirs))
