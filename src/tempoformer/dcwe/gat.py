"""The social component's graph networks, written here (no torch_geometric): GAT, GCN, or none.

`GATLayer` is PyG's GATConv with concat=False (Velickovic et al. 2018): per head h, z = W_h x;
the score of the edge j -> i is LeakyReLU_0.2(a_src,h · z_j + a_dst,h · z_i); a softmax over
the edges into i (self-loop included) gives alpha_ij, dropped out with p = 0.6 in training;
node i gets sum_j alpha_ij z_j, the heads are averaged, a bias is added. `SocialGAT` stacks two
such layers, each followed by tanh and dropout 0.2 (the authors' model.py:190-214). Parameters of
a 50 -> 50 layer with 4 heads: 10,000 + 200 + 200 + 50 = 10,450 (two layers: 20,900, as the
paper counts).

`GCNLayer` is PyG's GCNConv (Kipf & Welling 2017) with its defaults: x'_i = b + sum over the edges
j -> i (self-loop included) of (d_j d_i)^-1/2 W x_j, d = in-degree counting the self-loop, i.e.
D^-1/2 (A + I) D^-1/2 X W^T + b for an undirected graph; W Glorot-initialised, b zero.
`SocialGCN`: two such layers, each followed by tanh and dropout (the authors' --gnn gcn; 5,100
parameters for 50 -> 50). `SocialMLP` is the authors' --gnn none: two Linear(50, 50) layers,
each followed by tanh and dropout, on each unit's own vector (no graph; 5,100 parameters).
Every network takes (x (N, d), edge_index with self-loops) and returns (N, d).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def with_self_loops(edge_index: torch.Tensor, n_nodes: int) -> torch.Tensor:
    """Drop existing self-loops, add one per node (PyG's add_self_loops after remove_self_loops)."""
    keep = edge_index[0] != edge_index[1]
    loops = torch.arange(n_nodes, device=edge_index.device).expand(2, n_nodes)
    return torch.cat([edge_index[:, keep], loops], 1)


def edge_softmax(scores: torch.Tensor, target: torch.Tensor, n_nodes: int) -> torch.Tensor:
    """Softmax of edge scores (E, H) over the edges that share a target node."""
    heads = scores.shape[1]
    index = target[:, None].expand(-1, heads)
    peak = scores.new_full((n_nodes, heads), float("-inf")).scatter_reduce(0, index, scores, "amax")
    weights = (scores - peak[target]).exp()
    total = weights.new_zeros((n_nodes, heads)).index_add_(0, target, weights)
    return weights / total[target]


class GATLayer(nn.Module):
    def __init__(self, d_in: int, d_out: int, heads: int = 4, attn_dropout: float = 0.6, slope: float = 0.2):
        super().__init__()
        self.heads, self.d_out, self.attn_dropout, self.slope = heads, d_out, attn_dropout, slope
        self.lin = nn.Linear(d_in, heads * d_out, bias=False)
        self.att_src = nn.Parameter(torch.empty(heads, d_out))
        self.att_dst = nn.Parameter(torch.empty(heads, d_out))
        self.bias = nn.Parameter(torch.zeros(d_out))
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """x (N, d_in); edge_index (2, E) source/target rows, self-loops included -> (N, d_out)."""
        n = x.shape[0]
        z = self.lin(x).view(n, self.heads, self.d_out)            # (N, H, F)
        source, target = edge_index
        score_src = (z * self.att_src).sum(-1)                     # (N, H)
        score_dst = (z * self.att_dst).sum(-1)
        scores = F.leaky_relu(score_src[source] + score_dst[target], self.slope)  # (E, H)
        alpha = edge_softmax(scores, target, n)
        alpha = F.dropout(alpha, self.attn_dropout, self.training)
        out = z.new_zeros((n, self.heads, self.d_out)).index_add_(0, target, z[source] * alpha[..., None])
        return out.mean(1) + self.bias


class TwoLayers(nn.Module):
    """Two layers, each followed by tanh and dropout; graph layers read (x, edge_index), others x."""

    def __init__(self, layers: list[nn.Module], dropout: float, graph: bool = True):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.dropout, self.graph = dropout, graph

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = F.dropout(torch.tanh(layer(x, edge_index) if self.graph else layer(x)), self.dropout, self.training)
        return x


class SocialGAT(TwoLayers):
    """Two GAT layers, each followed by tanh and dropout (eq. 8: s_ij = GAT_j(s~_i, G))."""

    def __init__(self, dim: int = 50, heads: int = 4, attn_dropout: float = 0.6, dropout: float = 0.2):
        super().__init__([GATLayer(dim, dim, heads, attn_dropout) for _ in range(2)], dropout)


class GCNLayer(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out, bias=False)
        self.bias = nn.Parameter(torch.zeros(d_out))
        nn.init.xavier_uniform_(self.lin.weight)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """x (N, d_in); edge_index (2, E) source/target rows, self-loops included -> (N, d_out)."""
        n = x.shape[0]
        source, target = edge_index
        degree = x.new_zeros(n).index_add_(0, target, x.new_ones(target.shape[0]))
        norm = (degree[source] * degree[target]).rsqrt()
        z = self.lin(x)
        out = z.new_zeros((n, z.shape[1])).index_add_(0, target, z[source] * norm[:, None])
        return out + self.bias


class SocialGCN(TwoLayers):
    """Two GCN layers, each followed by tanh and dropout (the authors' --gnn gcn)."""

    def __init__(self, dim: int = 50, dropout: float = 0.2):
        super().__init__([GCNLayer(dim, dim) for _ in range(2)], dropout)


class SocialMLP(TwoLayers):
    """Two Linear layers, each followed by tanh and dropout, on each unit's vector (the authors' --gnn none)."""

    def __init__(self, dim: int = 50, dropout: float = 0.2):
        super().__init__([nn.Linear(dim, dim) for _ in range(2)], dropout, graph=False)


GNNS = ("gat", "gcn", "none")


def social_network(kind: str, dim: int = 50, heads: int = 4, attn_dropout: float = 0.6,
                   dropout: float = 0.2) -> nn.Module:
    """The social component's network: gat | gcn | none (see the module docstring)."""
    if kind == "gat":
        return SocialGAT(dim, heads, attn_dropout, dropout)
    if kind == "gcn":
        return SocialGCN(dim, dropout)
    if kind == "none":
        return SocialMLP(dim, dropout)
    raise ValueError(f"gnn must be one of {GNNS}, got {kind!r}")
