"""BiLSTM stream baseline: one bidirectional LSTM layer over the SBERT embeddings of the window.

Follows the sig-networks `LSTMModel` used for the paper's BiLSTM baseline: the final hidden
states of the two directions are added element-wise, then dropout and a linear read-out.
Time is not used (the paper's BiLSTM runs on the embedding stream only).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def packed_lstm(
    lstm: nn.LSTM, x: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run a batch_first `lstm` over the real steps (mask True) of each sequence only.

    Real steps are moved to the front (keeping their order) and packed, so padding never
    reaches the LSTM state whichever side it is on. Every row needs at least one real step.
    Returns (outputs [B, T, dirs*H], real steps first and zeros after; h_n [layers*dirs, B, H]).
    """
    lengths = mask.sum(dim=1)
    order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)
    x = torch.gather(x, 1, order[..., None].expand_as(x))
    packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    out, (h_n, _) = lstm(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    return out, h_n


class BiLSTM(nn.Module):
    # ranges of the keyword arguments that are params (tempoformer/settings.py)
    RANGES = {"hidden_dim": ">= 1", "dropout": "[0, 1)"}

    def __init__(self, input_dim: int, num_labels: int, hidden_dim: int, dropout: float = 0.1):
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_dim, num_labels)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        _, h_n = packed_lstm(self.lstm, x, mask)
        # h_n[0]: forward direction after the current post; h_n[1]: backward after the oldest.
        state = h_n[0] + h_n[1]
        return self.classifier(self.dropout(state))
