"""How one encoder layer of a backbone family runs: padded ([N, L, H], the reference) or on packed
tokens ([T, H], the fast path: every per-token op sees only real tokens, padding exists only inside
attention).

Two families, told apart by the backbone's `config.model_type` (`layer_family`):
  BertLayers   BERT / RoBERTa (transformers' BertLayer, RobertaLayer, serving/bert.py's Layer):
               attention.self (query, key, value, `scaling`), attention.output (dense, dropout,
               LayerNorm(+residual)); absolute positions, nothing added to the attention scores.
  MPNetLayers  MPNet (all-mpnet-base-v2): attention.attn (q, k, v, o), attention.dropout and
               attention.LayerNorm(+residual); one relative-position bias table (buckets x heads),
               held by the encoder and shared by every layer, added to every layer's attention
               scores. The table is this module's parameter (the model registers it once).
Both then run the same feed-forward block: layer.output(layer.intermediate(h), h).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def extended_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[N, L] 1/0 -> additive [N, 1, 1, L]: 0 for real tokens, dtype's min for padding."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


class Packing:
    """The real tokens of N rows packed row-major into [T, ...], row r holding counts[r] tokens;
    attention pads them to [N, Lt] (Lt = the longest row), everything else runs packed.
    Index tensors are built once per batch and shared by every layer that runs on these rows."""

    def __init__(self, counts: torch.Tensor):
        self.counts = counts  # [N] >= 1
        self.N, self.Lt = counts.shape[0], int(counts.max())
        self.mask = torch.arange(self.Lt, device=counts.device) < counts[:, None]  # [N, Lt] real tokens
        self.flat = self.mask.flatten().nonzero().squeeze(1)  # [T] row*Lt + col
        self.row = torch.div(self.flat, self.Lt, rounding_mode="floor")  # [T] row of each token
        self.starts = counts.cumsum(0) - counts  # [N] packed offset of each row's token 0
        self._bias = {}

    def cached(self, key, make):
        """make(), computed once per batch and key (every layer on these rows shares it)."""
        if key not in self._bias:
            self._bias[key] = make()
        return self._bias[key]

    def bias(self, dtype: torch.dtype, heads: int | None = None) -> torch.Tensor:
        """Additive key mask: 0 at real tokens, dtype's min at padding; [N, 1, 1, Lt], or with
        heads [N*heads, 1, Lt] (the batched-matmul layout). Built once per batch and dtype."""
        def make():
            ext = extended_mask(self.mask, dtype)  # [N, 1, 1, Lt]
            return ext if heads is None else ext.expand(-1, heads, -1, -1).reshape(-1, 1, self.Lt)
        return self.cached((dtype, heads), make)

    def mean(self, xt: torch.Tensor) -> torch.Tensor:
        """[T, H] -> [N, H], the mean over each row's tokens (summed in float32 at least, like
        torch.sum does for bf16)."""
        dtype = torch.promote_types(xt.dtype, torch.float32)
        total = torch.zeros(self.N, xt.shape[-1], dtype=dtype, device=xt.device).index_add_(0, self.row, xt.to(dtype))
        return total / self.counts[:, None].to(dtype)


def project(sa: nn.Module, x: torch.Tensor, names: tuple[str, ...]) -> torch.Tensor:
    """Several of a self-attention's query/key/value projections of x [T, H] in one matmul ->
    [T, len(names) * H]: one GEMM and one weight gradient instead of three, and one gradient
    for x. Modules that are not plain nn.Linear (serving's transposed ones) are called one by one."""
    mods = [getattr(sa, n) for n in names]
    if all(type(m) is nn.Linear and m.bias is not None for m in mods):
        return F.linear(x, torch.cat([m.weight for m in mods]), torch.cat([m.bias for m in mods]))
    return torch.cat([m(x) for m in mods], dim=-1)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pk: Packing, p: float, scale: float,
              scores_bias: torch.Tensor | None = None) -> torch.Tensor:
    """q [N, nh, Lq, hd] over k, v [N, nh, Lt, hd] of pk's padded rows, padding masked; attention
    dropout p; scores_bias [N, nh, Lq, Lt], when given, the whole additive mask (padding masked
    in it too, see BertLayers.scores_bias). -> [N, nh, Lq, hd]."""
    if p == 0.0:  # SDPA's fused CPU kernel
        mask = pk.bias(q.dtype) if scores_bias is None else scores_bias
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    # With dropout SDPA's CPU kernels step aside for its math fallback, which scales q and k
    # separately, copies them and runs a NaN-safe softmax: bmm_attention is the same computation
    # in half the ops (on a shared CPU each op can wait for its second thread).
    bias = pk.bias(q.dtype, q.shape[1]) if scores_bias is None else scores_bias.flatten(0, 1)
    return bmm_attention(q, k, v, bias, scale, p)


def bmm_attention(q, k, v, bias, scale: float, p: float) -> torch.Tensor:
    """softmax(q k^T * scale + bias) with dropout p, times v: q [N, nh, Lq, hd], k, v [N, nh, Lt, hd]
    (each viewable as [N*nh, ., hd]), bias [N*nh, 1 or Lq, Lt] -> [N, nh, Lq, hd]."""
    N, nh, Lq, hd = q.shape
    Lt = k.shape[2]
    scores = torch.baddbmm(bias, q.reshape(N * nh, Lq, hd), k.reshape(N * nh, Lt, hd).transpose(1, 2),
                           alpha=scale)  # [N*nh, Lq, Lt]
    weights = F.dropout(torch.softmax(scores, dim=-1), p)
    return torch.bmm(weights, v.reshape(N * nh, Lt, hd)).view(N, nh, Lq, hd)


class BertLayers(nn.Module):
    """How a BERT / RoBERTa layer runs (see the module docstring). No parameters of its own."""

    qkv = ("query", "key", "value")  # the self-attention's projections

    def self_attention(self, layer: nn.Module) -> nn.Module:
        return layer.attention.self

    def scaling(self, sa: nn.Module) -> float:
        return sa.scaling

    def attention_output(self, layer: nn.Module, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The attention block's output from the heads' concatenated context a and its input x."""
        return layer.attention.output(a, x)  # dense, dropout, LayerNorm(+residual)

    def position_bias(self, length: int, device) -> torch.Tensor | None:
        """What every layer adds to its attention scores of a row of `length` tokens,
        [1, heads, length, length]; None: nothing."""
        return None

    def padded(self, layer: nn.Module, x: torch.Tensor, ext: torch.Tensor, position_bias=None) -> torch.Tensor:
        """layer on padded rows x [N, L, H]: ext = extended_mask of their tokens, position_bias =
        position_bias(L) (once for all layers)."""
        return layer(x, ext)  # BertLayer in transformers 5 returns a tensor

    def scores_bias(self, pk: Packing, dtype: torch.dtype, cls_only: bool) -> torch.Tensor | None:
        """The additive attention mask of a packed layer on pk's rows, [N, heads, Lq, Lt] (Lq: 1
        with cls_only, else Lt), once per batch; None: attention masks pk's padding by itself."""
        def make():
            bias = self.position_bias(pk.Lt, pk.mask.device)
            if bias is None:
                return None
            bias = bias[:, :, :1] if cls_only else bias  # [CLS] is token 0 of every row
            return pk.bias(dtype) + bias.to(dtype)  # the padding keys' min absorbs the bias
        return pk.cached(("scores", id(self), dtype, cls_only), make)


class MPNetLayers(BertLayers):
    """How an MPNet layer runs (see the module docstring): the backbone's relative-position table,
    and its config (what save_trained records of the backbone)."""

    qkv = ("q", "k", "v")

    def __init__(self, relative_attention_bias: nn.Embedding, config):
        super().__init__()
        self.relative_attention_bias = relative_attention_bias  # [buckets, heads], pretrained
        self.config = config

    def self_attention(self, layer: nn.Module) -> nn.Module:
        return layer.attention.attn

    def scaling(self, sa: nn.Module) -> float:
        return sa.attention_head_size**-0.5  # MPNetSelfAttention divides by sqrt(head size)

    def attention_output(self, layer: nn.Module, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        block = layer.attention
        return block.LayerNorm(block.dropout(block.attn.o(a)) + x)

    def position_bias(self, length: int, device) -> torch.Tensor:
        """MPNetEncoder.compute_position_bias for rows of `length` tokens: the table's entry of the
        bucket of each key-query offset (token indices, so right padding leaves it unchanged)."""
        from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

        positions = torch.arange(length, dtype=torch.long, device=device)
        # num_buckets=32, as compute_position_bias calls it (whatever relative_attention_num_buckets says)
        bucket = MPNetEncoder.relative_position_bucket(positions[None, :] - positions[:, None], num_buckets=32)
        return self.relative_attention_bias(bucket).permute(2, 0, 1).unsqueeze(0)  # [1, heads, L, L]

    def padded(self, layer: nn.Module, x: torch.Tensor, ext: torch.Tensor, position_bias=None) -> torch.Tensor:
        return layer(x, ext, position_bias=position_bias)[0]  # MPNetLayer returns a tuple


BERT = BertLayers()  # packed_layer's default family


def layer_family(backbone: nn.Module) -> BertLayers:
    """The family of a built backbone's layers, by its config's model_type."""
    if backbone.config.model_type == "mpnet":
        return MPNetLayers(backbone.encoder.relative_attention_bias, backbone.config)
    return BertLayers()


def packed_layer(layer: nn.Module, xp: torch.Tensor, pk: Packing, cls_only: bool = False,
                 family: BertLayers = BERT) -> torch.Tensor:
    """An encoder layer of `family` (default BERT/RoBERTa) on packed tokens: padding only inside attention.

    xp [T, H] the real tokens of pk.N rows (pk's layout). The Q/K/V and output projections,
    LayerNorms and FFN run on the T real tokens only; attention runs on the padded
    [N, nh, Lt, hd] view. Returns [T, H], equal to the layer on padded rows at the real tokens; with
    cls_only only the [CLS] (token 0) queries and FFNs run and it returns [N, H], the padded
    layer's output at token 0.
    """
    sa = family.self_attention(layer)
    nh, hd = sa.num_attention_heads, sa.attention_head_size
    H, N, Lt = nh * hd, pk.N, pk.Lt
    p = sa.dropout.p if sa.training else 0.0
    scale = family.scaling(sa)
    names = family.qkv[1:] if cls_only else family.qkv
    # one scatter of the projections into the padded layout, zeros at padding (masked out as keys)
    qkv = project(sa, xp, names)  # [T, 2H or 3H]
    qkv = qkv.new_zeros(N * Lt, qkv.shape[-1]).index_copy(0, pk.flat, qkv)
    heads = qkv.view(N, Lt, len(names), nh, hd).permute(2, 0, 3, 1, 4)  # [2|3, N, nh, Lt, hd]
    if p > 0.0:
        heads = heads.contiguous()  # one copy for all three: the batched matmuls read [N*nh, Lt, hd]
    # unbind, not indexing: its backward is one stack, not a zero-filled copy per part
    *q, k, v = heads.unbind(0)  # [N, nh, Lt, hd] each
    bias = family.scores_bias(pk, k.dtype, cls_only)
    if cls_only:
        xc = xp.index_select(0, pk.starts)  # [N, H]
        q = getattr(sa, family.qkv[0])(xc).view(N, 1, nh, hd).transpose(1, 2)  # [N, nh, 1, hd]
        a = attention(q, k, v, pk, p, scale, bias)
        h = family.attention_output(layer, a.reshape(N, H), xc)
        return layer.output(layer.intermediate(h), h)
    a = attention(q[0], k, v, pk, p, scale, bias)  # [N, nh, Lt, hd]
    a = a.transpose(1, 2).reshape(N * Lt, H).index_select(0, pk.flat)  # [T, H]
    h = family.attention_output(layer, a, xp)
    return layer.output(layer.intermediate(h), h)
