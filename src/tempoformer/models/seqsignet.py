"""Seq-Sig-Net stream baseline (Tseriotou et al. 2023, sig-networks `SeqSigNet`).

The window is cut into short overlapping units of `unit_size` posts, consecutive units
`unit_shift` posts apart, anchored at the current post (sig-networks: window_size 5, shift 3;
n units cover unit_shift * n + unit_size - unit_shift posts). One shared SWNU (`SWNUnit`) turns
each unit into a vector; a BiLSTM over the units in chronological order gives the stream state
(final states of both directions added, as in sig-networks), which is concatenated with the
current post embedding (and the time gap to the previous post) and classified by a FFN.

Units without a post of their own (see `forward`) are dropped before the SWNU and skipped by the
BiLSTM (packing), so left padding never changes the output. The SWNU differs from sig-networks
as listed in `tempoformer.models.swnu`, and its path input is SWNU's option (`path_reduction`:
"none", or "umap", the authors' UMAP of every post, test posts included, appended to the SBERT
vectors: the units read those columns, the head the current post's SBERT vector).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from tempoformer.models.bilstm import packed_lstm
from tempoformer.models.swnu import (
    FromParams,
    SWNUConfig,
    SWNUnit,
    feedforward,
    previous_gap,
)


@dataclass(kw_only=True)
class SeqSigNetConfig(SWNUConfig):
    """SWNU's settings (the shared unit and the head) plus the split into units and the BiLSTM
    over them."""

    lstm_hidden_dim: int = field(metadata={"range": ">= 1"})  # the BiLSTM over the units' vectors
    unit_size: int = field(default=5, metadata={"range": ">= 1"})  # posts per unit (sig-networks' window_size)
    unit_shift: int = field(default=3, metadata={"range": ">= 1"})  # posts between consecutive units (sig-networks' shift)

    def __post_init__(self):
        super().__post_init__()
        if not 1 <= self.unit_shift <= self.unit_size:
            raise ValueError(
                f"need 1 <= unit_shift <= unit_size, got {self.unit_shift}, {self.unit_size}"
            )


class SeqSigNet(FromParams, nn.Module):
    config_class = SeqSigNetConfig

    def __init__(self, config: SeqSigNetConfig):
        super().__init__()
        self.config = config
        self.unit_size = config.unit_size
        self.unit_shift = config.unit_shift
        self.concat_time = config.concat_time
        self.time_scale = config.time_scale
        # Unit, stream BiLSTM, head: the committed runs' creation order (same seed, same weights).
        # With path_reduction "none" both widths are input_dim: the modules of before.
        post_dim, path_dim = config.path_split()
        self.swnu = SWNUnit(path_dim, config.conv_dim, config.swnu_hidden_dim,
                            config.sig_depth, config.pooling, config.time_scale)
        self.lstm = nn.LSTM(
            self.swnu.output_dim, config.lstm_hidden_dim, batch_first=True, bidirectional=True
        )
        head_dim = config.lstm_hidden_dim + post_dim + int(config.concat_time)
        self.ffn = feedforward(head_dim, config.ffn_hidden_dims, config.num_labels, config.dropout)

    def split_units(self, x: torch.Tensor, mask: torch.Tensor, time: torch.Tensor):
        """[B, w, ...] -> [B, n, unit_size, ...], oldest unit first, last unit ending at the
        current post. The window is left-padded (mask False) up to the length n units span."""
        w = x.shape[1]
        n = 1 + max(0, math.ceil((w - self.unit_size) / self.unit_shift))
        pad = self.unit_size + (n - 1) * self.unit_shift - w
        x = F.pad(x, (0, 0, pad, 0))
        mask = F.pad(mask, (pad, 0), value=False)
        time = F.pad(time, (pad, 0))
        # unfold puts the unit axis last: [B, n, D, unit_size] -> [B, n, unit_size, D].
        x_units = x.unfold(1, self.unit_size, self.unit_shift).transpose(2, 3)
        mask_units = mask.unfold(1, self.unit_size, self.unit_shift)
        time_units = time.unfold(1, self.unit_size, self.unit_shift)
        return x_units, mask_units, time_units

    def forward(self, x: torch.Tensor, mask: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        post, path = self.config.split_path(x)  # `x` itself twice for path_reduction "none"
        x_units, mask_units, time_units = self.split_units(path, mask, time)
        B, n = mask_units.shape[:2]
        # A unit is used when one of its first `unit_shift` slots is a real post, i.e. it holds
        # a post the next unit does not. A unit whose real posts all reappear in the next unit
        # exists only because the window is longer than the stream; using it would make the
        # output depend on how much padding there is. The last unit holds the current post.
        present = mask_units[..., : self.unit_shift].any(dim=-1)  # [B, n]
        present[:, -1] = True
        vectors = self.swnu(x_units[present], mask_units[present], time_units[present])
        unit_states = vectors.new_zeros(B, n, vectors.shape[-1])
        unit_states[present] = vectors
        _, h_n = packed_lstm(self.lstm, unit_states, present)
        parts = [h_n[0] + h_n[1], post[:, -1]]
        if self.concat_time:
            parts.append(self.time_scale * previous_gap(mask, time))
        return self.ffn(torch.cat(parts, dim=-1))
