"""Log-signature helpers around pysiglib (torch autograd, CPU).

Paths are float tensors [B, T, d]. Log-signatures use pysiglib `method=1`: the coefficients of
the truncated tensor logarithm on the Lyndon words, which is signatory's default "words" basis
that the sig-networks reference (Tseriotou et al. 2023) was built on.

Padding: windows are left-padded. A constant stretch of a path has zero increments, and its
signature is the identity, so by Chen's identity S(const * X) = S(X). `fill_padding` makes every
padding slot a copy of a real point (the most recent earlier real point, or the first real
point for leading padding), after which a padded path has exactly the (log-)signature of its
real points, and the expanding log-signatures at leading padding slots are all zero.
"""

from __future__ import annotations

import functools

import pysiglib
import pysiglib.torch_api as siglib_torch
import torch

LOG_SIG_METHOD = 1


@functools.cache
def _prepare(dim: int, depth: int) -> None:
    # pysiglib needs its Lyndon-word tables built once per (dimension, depth) before use.
    pysiglib.prepare_log_sig(dim, depth, method=LOG_SIG_METHOD, device="cpu")


def log_signature_dim(d: int, depth: int) -> int:
    """Number of log-signature channels of a d-dimensional path truncated at `depth`."""
    return pysiglib.log_sig_length(d, depth)


def fill_padding(path: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Replace padding slots (mask False) by the latest earlier real point, or by the first
    real point when no real point precedes them, so the path is constant across padding."""
    T = path.shape[1]
    slots = torch.arange(T, device=path.device).expand_as(mask)
    latest_real = torch.where(mask, slots, -1).cummax(dim=1).values
    first_real = mask.to(torch.int8).argmax(dim=1, keepdim=True)
    source = torch.where(latest_real < 0, first_real, latest_real)
    return torch.gather(path, 1, source[..., None].expand_as(path))


def path_log_signature(
    path: torch.Tensor, depth: int, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Log-signature [B, log_signature_dim(d, depth)] of each path in [B, T, d]."""
    if mask is not None:
        path = fill_padding(path, mask)
    _prepare(path.shape[-1], depth)
    return siglib_torch.log_sig(path.contiguous(), depth, method=LOG_SIG_METHOD)


def expanding_log_signatures(
    path: torch.Tensor, depth: int, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Log-signatures of every prefix path[:, :t+1], t = 0..T-1, as [B, T, sigdim].

    Chen's identity: the signature of a prefix is the previous prefix's signature extended by
    one linear segment (pysiglib `sig_join`), so all T signatures cost one pass over the path;
    they are then mapped to log-signatures in a single batched call.
    """
    if mask is not None:
        path = fill_padding(path, mask)
    B, T, d = path.shape
    _prepare(d, depth)
    increments = (path[:, 1:] - path[:, :-1]).contiguous()
    # Signature without its scalar term; a single point's signature is the identity, i.e. 0 here.
    sig = path.new_zeros(B, pysiglib.sig_length(d, depth))
    sigs = [sig]
    for t in range(T - 1):
        sig = siglib_torch.sig_join(sig, increments[:, t].contiguous(), d, depth)
        sigs.append(sig)
    # cat (not stack + reshape) gives a tensor owning its storage, which pysiglib wants.
    stacked = torch.cat(sigs, dim=0)  # [T * B, siglen], prefix-major
    log_sigs = siglib_torch.sig_to_log_sig(stacked, d, depth, method=LOG_SIG_METHOD)
    return log_sigs.reshape(T, B, -1).transpose(0, 1)
