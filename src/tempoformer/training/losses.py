"""Alpha-weighted focal loss (Lin et al. 2017) as the paper uses it (gamma 2, alpha_c = sqrt(1/p_c))."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def focal_alpha(train_labels: np.ndarray, num_labels: int) -> torch.Tensor:
    """alpha_c = sqrt(1 / p_c), p_c the class share in the training fold."""
    counts = np.bincount(train_labels, minlength=num_labels).astype(np.float64)
    if (counts == 0).any():
        missing = np.flatnonzero(counts == 0).tolist()
        raise ValueError(f"classes {missing} do not occur in the training fold")
    return torch.tensor(np.sqrt(len(train_labels) / counts), dtype=torch.float32)


def focal_loss(logits: torch.Tensor, target: torch.Tensor, alpha: torch.Tensor, gamma: float = 2.0):
    """mean over the batch of -alpha_y (1 - p_y)^gamma log p_y."""
    log_p = F.log_softmax(logits.float(), dim=-1).gather(1, target[:, None]).squeeze(1)
    return (-alpha.to(logits.device)[target] * (1 - log_p.exp()) ** gamma * log_p).mean()
