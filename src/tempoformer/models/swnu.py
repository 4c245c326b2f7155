"""SWNU stream baseline: Signature Window Network Unit (Tseriotou et al. 2023, sig-networks).

`SWNUnit` is sig-networks' `SWNU` and `SWNU` (the classifier the training code builds, from an
`SWNUConfig`) is its `SWNUNetwork`, composed as in the sig-networks paper scripts (log-signature
of depth 3, BiLSTM inside the unit, "signature" pooling, concatenation head):

  embeddings [B, w, D] --Conv1d(k=3) + tanh--> [B, w, conv_dim]      dimension reduction
  append the time channel                    -> path [B, w, conv_dim + 1]
  expanding-window log-signatures            -> [B, w, logsig(conv_dim + 1)]
  BiLSTM over them (directions added)        -> [B, w, hidden]
  pooling: log-signature of that hidden path -> [B, logsig(hidden)]   ("lstm": final states)
  concat(unit output, current post embedding, time gap to the previous post) -> FFN -> logits

Where this differs from sig-networks:
- by default (`path_reduction: none`) the conv reads the SBERT embeddings directly, where
  sig-networks first reduces them with UMAP to 15 dims, outside the network
  (`obtain_SWNUNetwork_input(method="umap", dimension=15, seed=42)`); `path_reduction: umap`
  is the authors' input path (see "The path's input" below). Either way the time feature is
  appended *after* the conv as a path channel of its own, where sig-networks feeds the time
  features into the conv together with the embeddings;
- time is multiplied by a fixed `time_scale` instead of being z-scored over the corpus;
- the time feature concatenated at the output is the gap from the previous post to the current
  one. The current post's own feature is 0 by construction (log-gap or distance to itself), and
  sig-networks' choice, the post's absolute time encoding, is not part of the window layout;
- one LSTM block per unit (sig-networks can stack several), no reverse-path option;
- padding is handled exactly (see `SWNUnit.forward`) instead of by zero padding.

The path's input (`path_reduction`, `path_dimension`, `path_seed`; issue 68):
- "none" (default, the paper's text, which does not mention UMAP): the unit's Conv1d reads the
  same SBERT vectors as the head, `input_dim` wide;
- "umap" (the authors' code): the run's embeddings file is the SBERT vectors with a
  `path_dimension`-d UMAP of them appended as the last columns ([n, D + path_dimension], made
  by `tempoformer reduce-embeddings`, tempoformer.data.reduce; the workflow picks the file from
  these params). The unit reads only the appended columns; the head reads the current post's
  SBERT vector (the first `input_dim - path_dimension` columns), as in sig-networks. As the
  authors do, the UMAP is fitted once on every post of the corpus, test posts included: the
  reduction sees the unlabelled test texts (a transductive leak the "none" path does not have).
  `path_seed` is the UMAP's random_state: the model does not read it, the workflow names the
  file by it (and so it is part of the run's settings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from tempoformer.models.bilstm import packed_lstm
from tempoformer.models.signature import (
    expanding_log_signatures,
    log_signature_dim,
    path_log_signature,
)

POOLINGS = ("signature", "lstm")
# What the unit's path is read from (module docstring, "The path's input").
PATH_REDUCTIONS = ("none", "umap")


@dataclass(kw_only=True)
class SWNUConfig:
    """The SWNU baseline's settings; `SeqSigNetConfig` adds its unit split and stream BiLSTM.

    A config's `params` are these fields but for `input_dim` and `num_labels`, which the run
    supplies (the SBERT size and the label count). Defaults are the sig-networks scripts'.
    """

    input_dim: int  # post embedding size
    num_labels: int
    # ranges: tempoformer/settings.py (checked at start-up and by the run, registry.validate_params)
    conv_dim: int = field(metadata={"range": ">= 1"})  # width the Conv1d reduces each embedding to
    swnu_hidden_dim: int = field(metadata={"range": ">= 1"})  # the unit's BiLSTM size
    ffn_hidden_dims: int | list[int] = field(metadata={"range": ">= 1"})  # the classifier head's hidden layers
    dropout: float = field(default=0.1, metadata={"range": "[0, 1)"})
    sig_depth: int = field(default=3, metadata={"range": ">= 1"})  # log-signature depth, in the unit and in its pooling
    # "signature" | "lstm" (the unit BiLSTM's final states)
    pooling: str = field(default="signature", metadata={"range": POOLINGS})
    concat_time: bool = True  # the time gap to the previous post at the head's input
    time_scale: float = 0.1  # factor on the time channel (log-gaps or post distances)
    # The unit's path input (module docstring): "none" the SBERT vectors; "umap" the last
    # `path_dimension` columns of the embeddings (the authors' UMAP of every post, test posts
    # included), the head reading the others. `path_seed` names the UMAP's file (the workflow's).
    path_reduction: str = field(default="none", metadata={"range": PATH_REDUCTIONS})
    path_dimension: int = field(default=15, metadata={"range": ">= 1"})
    path_seed: int = field(default=42, metadata={"range": ">= 0"})

    def __post_init__(self):
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if self.path_reduction not in PATH_REDUCTIONS:
            raise ValueError(f"path_reduction must be one of {PATH_REDUCTIONS}, got {self.path_reduction!r}")
        if self.path_reduction != "none" and not 1 <= self.path_dimension < self.input_dim:
            raise ValueError(f"path_reduction {self.path_reduction!r}: the embeddings ({self.input_dim} "
                             f"columns) must hold the post vectors and the {self.path_dimension} reduced "
                             "columns appended to them (tempoformer reduce-embeddings)")

    def path_split(self) -> tuple[int, int]:
        """(columns of the post vector the head reads, columns the unit's path reads): both the
        whole embedding for "none", else the embedding's leading columns and the appended ones."""
        if self.path_reduction == "none":
            return self.input_dim, self.input_dim
        return self.input_dim - self.path_dimension, self.path_dimension

    def split_path(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [..., input_dim] -> (post vectors, path input): `x` itself twice for "none"."""
        if self.path_reduction == "none":
            return x, x
        post_dim = self.input_dim - self.path_dimension
        return x[..., :post_dim], x[..., post_dim:]


class FromParams:
    """`Model.from_params(input_dim=..., num_labels=..., **params)`: the model built from its
    config's fields as keyword arguments, the way the training code builds stream baselines."""

    config_class: type

    @classmethod
    def from_params(cls, **params):
        return cls(cls.config_class(**params))


def feedforward(
    input_dim: int, hidden_dims: int | Sequence[int], output_dim: int, dropout: float
) -> nn.Sequential:
    """Classifier head: (Linear -> ReLU -> Dropout) per hidden layer, then a Linear read-out."""
    if isinstance(hidden_dims, int):
        hidden_dims = [hidden_dims]
    layers: list[nn.Module] = []
    for width in hidden_dims:
        layers += [nn.Linear(input_dim, width), nn.ReLU(), nn.Dropout(dropout)]
        input_dim = width
    layers.append(nn.Linear(input_dim, output_dim))
    return nn.Sequential(*layers)


def previous_gap(mask: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
    """[B, 1] time feature of the previous post minus the current post's (0 with no previous
    post). For log-gaps this is the log-seconds since the previous post."""
    if mask.shape[1] < 2:
        return time.new_zeros(time.shape[0], 1)
    gap = torch.where(mask[:, -2], time[:, -2] - time[:, -1], torch.zeros_like(time[:, -1]))
    return gap[:, None]


class SWNUnit(nn.Module):
    """One Signature Window Network Unit: a window of posts -> one vector [B, output_dim]."""

    def __init__(
        self,
        input_dim: int,
        conv_dim: int,
        hidden_dim: int,
        sig_depth: int = 3,
        pooling: str = "signature",
        time_scale: float = 0.1,
    ):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.sig_depth = sig_depth
        self.hidden_dim = hidden_dim
        self.pooling = pooling
        # Log-gaps (0..~16) and post distances (0..w-1) become O(1), like the tanh channels.
        self.time_scale = time_scale
        self.conv = nn.Conv1d(input_dim, conv_dim, kernel_size=3, padding=1)
        self.lstm = nn.LSTM(
            log_signature_dim(conv_dim + 1, sig_depth),
            hidden_dim,
            batch_first=True,
            bidirectional=True,
        )
        if pooling == "signature":
            self.output_dim = log_signature_dim(hidden_dim, sig_depth)
        else:
            self.output_dim = hidden_dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        # Zeroed padding makes the conv at the oldest real post see exactly the zero padding
        # an unpadded stream gets from Conv1d(padding=1).
        x = x * mask[..., None].to(x.dtype)
        reduced = torch.tanh(self.conv(x.transpose(1, 2))).transpose(1, 2)
        path = torch.cat([reduced, self.time_scale * time[..., None]], dim=-1)
        # Padding slots become copies of a real point: their log-signatures are 0 and the real
        # prefixes' log-signatures are those of the unpadded stream.
        streamed = expanding_log_signatures(path, self.sig_depth, mask)
        out, h_n = packed_lstm(self.lstm, streamed, mask)
        if self.pooling == "lstm":
            return h_n[0] + h_n[1]
        # sig-networks adds the two directions' outputs and takes the log-signature of the
        # resulting hidden-state path; packed_lstm put the real steps first.
        out = out[..., : self.hidden_dim] + out[..., self.hidden_dim :]
        steps = torch.arange(out.shape[1], device=out.device)
        real_first = steps[None, :] < mask.sum(dim=1, keepdim=True)
        return path_log_signature(out, self.sig_depth, real_first)


class SWNU(FromParams, nn.Module):
    """The SWNU baseline (sig-networks `SWNUNetwork`): one unit over the whole window, plus the
    current post embedding (and time gap) -> FFN classifier."""

    config_class = SWNUConfig

    def __init__(self, config: SWNUConfig):
        super().__init__()
        self.config = config
        self.concat_time = config.concat_time
        self.time_scale = config.time_scale
        # Submodules are created in this order (unit, then head) so a seed draws the same
        # initial weights as the committed runs did.
        # With path_reduction "none" both widths are input_dim: the modules of before.
        post_dim, path_dim = config.path_split()
        self.swnu = SWNUnit(path_dim, config.conv_dim, config.swnu_hidden_dim,
                            config.sig_depth, config.pooling, config.time_scale)
        head_dim = self.swnu.output_dim + post_dim + int(config.concat_time)
        self.ffn = feedforward(head_dim, config.ffn_hidden_dims, config.num_labels, config.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        post, path = self.config.split_path(x)
        parts = [self.swnu(path, mask, time), post[:, -1]]
        if self.concat_time:
            parts.append(self.time_scale * previous_gap(mask, time))
        return self.ffn(torch.cat(parts, dim=-1))
