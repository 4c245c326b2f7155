"""FFN History: the current post's embedding concatenated with the mean of its window."""

from __future__ import annotations

import torch
from torch import nn


class FFNHistory(nn.Module):
    # ranges of the keyword arguments that are params (tempoformer/settings.py)
    RANGES = {"hidden_dims": ">= 1", "dropout": "[0, 1)"}

    def __init__(self, input_dim: int, num_labels: int, hidden_dims=(64, 64), dropout: float = 0.1):
        super().__init__()
        layers, width = [], 2 * input_dim
        for hidden in hidden_dims:
            layers += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout)]
            width = hidden
        self.ffn = nn.Sequential(*layers, nn.Linear(width, num_labels))

    def forward(self, x: torch.Tensor, mask: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        # x [B, w, D], mask [B, w]; the current post sits in the last slot
        weights = mask.to(x.dtype)[..., None]
        history = (x * weights).sum(1) / weights.sum(1)  # [B, D] mean over real posts
        return self.ffn(torch.cat([x[:, -1], history], dim=-1))
