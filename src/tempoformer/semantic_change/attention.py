"""Temporal attention (Rosin & Radinsky 2022, eq. 2) and the scaled-attention baselines, as pure
functions on per-head tensors. Shapes: B batch, H heads, n tokens, d head size.

Temporal attention. With T = X_t W_T the time matrix of a sequence (one row per token, the
row of its time point's embedding projected per head), the paper's scores are

    scores = Q (Tᵀ T / ‖T‖) Kᵀ / √d                                        (form "paper")

Q Tᵀ T Kᵀ = Q (Tᵀ T) Kᵀ, so the time enters as a d×d matrix M = TᵀT/‖T‖ per head between the
query and the key. We keep the pretrained encoder (the authors' code discarded it), so the
default form adds M to the identity,

    scores = Q (I + TᵀT/‖T‖) Kᵀ / √d                                       (form "residual")

which equals the pretrained attention when T = 0; M is homogeneous of degree 1 in T, so with a
small initial W_T the model starts next to the pretrained one and the gradient of W_T is not
small. ‖T‖ is the Frobenius norm:

- time_norm "sequence" (default): TᵀT and ‖T‖ per sequence and per head, over the real tokens
  only (padding excluded): a sequence's output depends on nothing else in its batch;
- time_norm "batch": the authors' code: TᵀT per sequence and head over every position including
  padding (padding has its own time point), ‖T‖ one scalar over the whole batch tensor, so an
  embedding changes with the other sentences in its batch.

Scaled attention (paper §5.2): scores_ij = s(t_i) q_i k_jᵀ / √d, s from the query token's time.
"""

from __future__ import annotations

import torch

TIME_NORMS = ("sequence", "batch")
FORMS = ("residual", "paper")


def time_matrix(t: torch.Tensor, token_mask: torch.Tensor, time_norm: str = "sequence",
                eps: float = 1e-12) -> torch.Tensor:
    """M = TᵀT / ‖T‖, shape (B, H, d, d). t: (B, H, n, d); token_mask: (B, n), True = real token."""
    if time_norm == "sequence":
        t = t * token_mask[:, None, :, None].to(t.dtype)
        norm = torch.sqrt(t.pow(2).sum(dim=(-2, -1), keepdim=True) + eps)  # (B, H, 1, 1)
    elif time_norm == "batch":
        norm = torch.sqrt(t.pow(2).sum() + eps)  # one scalar over everything, padding included
    else:
        raise ValueError(f"time_norm must be one of {TIME_NORMS}, got {time_norm!r}")
    return t.transpose(-1, -2) @ t / norm


def temporal_scores(q: torch.Tensor, k: torch.Tensor, t: torch.Tensor, token_mask: torch.Tensor,
                    scaling: float, time_norm: str = "sequence", form: str = "residual") -> torch.Tensor:
    """Attention logits (B, H, n, n) before the padding mask."""
    qm = q @ time_matrix(t, token_mask, time_norm)
    if form == "residual":
        qm = q + qm
    elif form != "paper":
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    return (qm @ k.transpose(-1, -2)) * scaling


def scaled_scores(q: torch.Tensor, k: torch.Tensor, scale: torch.Tensor, scaling: float) -> torch.Tensor:
    """Logits s(t_i) q_i·k_j * scaling; scale: (B, n) per query token (or (B,) per sequence)."""
    if scale.dim() == 1:
        scale = scale[:, None]
    return (q @ k.transpose(-1, -2)) * scaling * scale[:, None, :, None]


def plain_scores(q: torch.Tensor, k: torch.Tensor, scaling: float) -> torch.Tensor:
    return (q @ k.transpose(-1, -2)) * scaling


def scale_table(kind: str, n_periods: int, doc_counts: list[int] | None = None) -> list[float]:
    """s per time point, index 0..n_periods-1 (paper: index(t_i) counts from 1)."""
    if kind == "scaled_linear":
        return [float(i + 1) for i in range(n_periods)]
    if kind == "scaled_exp":
        return [float(2 ** (i + 1)) for i in range(n_periods)]
    if kind == "scaled_doc":
        if not doc_counts or len(doc_counts) != n_periods:
            raise ValueError(f"scaled_doc needs the document count of each of {n_periods} periods")
        total = float(sum(doc_counts))
        return [c / total for c in doc_counts]
    raise ValueError(f"unknown scaled attention {kind!r}")
