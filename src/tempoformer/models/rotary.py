"""Temporal rotary multi-head attention (TempoFormer §3.5).

RoPE (Su et al.) with a float "position" per window post: its log-time gap to the current post
(or its window slot when there are no timestamps). The maths follows transformers' modeling_llama
(`rotate_half` convention: the two halves of each head, not interleaved pairs), so with integer
coordinates this is exactly Llama's RoPE.
"""

import torch
import torch.nn.functional as F
from torch import nn


def rotary_cos_sin(coords: torch.Tensor, head_dim: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """coords [B, w] (any real numbers) -> cos, sin, each [B, w, head_dim] (float32, or float64).

    angle_j = coord * base^(-2j/head_dim), j < head_dim/2, repeated over the two halves.
    """
    if head_dim % 2:
        raise ValueError(f"rotary head_dim must be even, got {head_dim}")
    # angles in float32 even under autocast/bf16: log-time gaps reach ~20 rad and bf16 would
    # lose the fine rotation the higher frequencies carry
    dtype = torch.promote_types(coords.dtype, torch.float32)  # float64 coords stay float64
    inv_freq = base ** (-torch.arange(0, head_dim, 2, device=coords.device, dtype=dtype) / head_dim)
    freqs = coords.to(dtype)[..., None] * inv_freq  # [B, w, head_dim/2]
    emb = torch.cat((freqs, freqs), dim=-1)  # [B, w, head_dim]
    return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Rotates half the hidden dims of the input: (x1, x2) -> (-x2, x1)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, unsqueeze_dim: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k [B, heads, w, head_dim]; cos, sin [B, w, head_dim] (broadcast over heads)."""
    cos = cos.unsqueeze(unsqueeze_dim).to(q.dtype)
    sin = sin.unsqueeze(unsqueeze_dim).to(q.dtype)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class TemporalRotaryAttention(nn.Module):
    """Multi-head self-attention over the [CLS] vectors of a window's posts.

    Bias-free Q/K/V, biased output projection (as in the authors' Llama-derived layer); rotation on
    Q and K only; no FFN, no norm, no residual (§3.5: "solely self-attention"); no attention dropout.
    """

    def __init__(self, hidden: int, heads: int, use_rope: bool = True, base: float = 10000.0):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
        self.heads, self.head_dim = heads, hidden // heads
        self.use_rope, self.base = use_rope, base
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, hidden, bias=False)
        self.v_proj = nn.Linear(hidden, hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden)

    def forward(self, cls: torch.Tensor, key_mask: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        """cls [B, w, H]; key_mask [B, w] bool (True = real post); coords [B, w] float or None
        (None: window slot indices 0..w-1). Returns [B, w, H]. Every row needs one real key."""
        B, w, H = cls.shape
        shape = (B, w, self.heads, self.head_dim)
        q = self.q_proj(cls).view(shape).transpose(1, 2)  # [B, nh, w, hd]
        k = self.k_proj(cls).view(shape).transpose(1, 2)
        v = self.v_proj(cls).view(shape).transpose(1, 2)
        if self.use_rope:
            if coords is None:
                coords = torch.arange(w, device=cls.device).expand(B, w)
            # padded slots may carry NaN/garbage gaps: a NaN key would poison the softmax even masked
            coords = torch.where(key_mask, coords, torch.zeros((), dtype=coords.dtype, device=cls.device))
            cos, sin = rotary_cos_sin(coords, self.head_dim, self.base)
            q, k = apply_rotary(q, k, cos, sin)
        # boolean mask: dtype-agnostic (bf16 autocast), True = attend
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask[:, None, None, :])  # [B, nh, w, hd]
        return self.o_proj(y.transpose(1, 2).reshape(B, w, H))
