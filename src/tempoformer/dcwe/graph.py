"""The social graph: statistics (Table 1) and node2vec input embeddings.

node2vec with p = q = 1 is a uniform random walk (the second-order bias is 1 everywhere), so
the walks here are uniform: `walks_per_node` walks of `walk_length` nodes from every node, in a
seeded order. The embeddings are skip-gram with negative sampling over those walks (context
window 2 on each side, `negatives` noise nodes per pair drawn from the walk-count distribution
to the power 0.75, as word2vec), trained in torch with SparseAdam; the paper's settings
(train_vectors.py:29-30: 50-d, 10 walks x 80, window 2, 10 epochs) are the defaults. A node
without neighbours has walks of itself only and keeps its (seeded) initial vector.
Everything random comes from `seed`: the same seed gives the same vectors.
Precomputed vectors (the authors' `{name}_vectors_50.txt`) are read by data.read_vectors.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from ..settings import settings_from_dict

log = logging.getLogger(__name__)


def adjacency(n_nodes: int, edges: Sequence[tuple[int, int]], directed: bool = False) -> list[list[int]]:
    neighbours: list[set[int]] = [set() for _ in range(n_nodes)]
    for a, b in edges:
        neighbours[a].add(b)
        if not directed:
            neighbours[b].add(a)
    return [sorted(n) for n in neighbours]


def connected_components(n_nodes: int, edges: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Weakly connected components, each sorted, in order of their smallest node."""
    neighbours = adjacency(n_nodes, edges)
    seen, components = [False] * n_nodes, []
    for start in range(n_nodes):
        if seen[start]:
            continue
        seen[start], stack, component = True, [start], []
        while stack:
            node = stack.pop()
            component.append(node)
            for other in neighbours[node]:
                if not seen[other]:
                    seen[other] = True
                    stack.append(other)
        components.append(sorted(component))
    return components


def mean_shortest_path(nodes: Sequence[int], neighbours: list[list[int]]) -> float:
    """Mean BFS distance over ordered pairs of distinct nodes of one connected component."""
    total, pairs = 0, 0
    for source in nodes:
        dist = {source: 0}
        queue = deque([source])
        while queue:
            node = queue.popleft()
            for other in neighbours[node]:
                if other not in dist:
                    dist[other] = dist[node] + 1
                    queue.append(other)
        total += sum(dist.values())
        pairs += len(dist) - 1
    return total / pairs if pairs else float("nan")


def graph_stats(n_nodes: int, edges: Sequence[tuple[int, int]], directed: bool = False) -> dict:
    """|S|, |E|, mean degree, density, mean shortest path on the largest (weak) component.

    Undirected: mu_d = 2|E|/|S|, rho = 2|E|/(|S|(|S|-1)); directed: mu_d = |E|/|S| (out-degree),
    rho = |E|/(|S|(|S|-1)); paths over the undirected version.
    """
    n_edges = len(edges)
    factor = 1 if directed else 2
    largest = max(connected_components(n_nodes, edges), key=len) if n_nodes else []
    return {
        "units": n_nodes, "edges": n_edges,
        "mean_degree": factor * n_edges / n_nodes if n_nodes else float("nan"),
        "density": factor * n_edges / (n_nodes * (n_nodes - 1)) if n_nodes > 1 else float("nan"),
        "largest_component": len(largest),
        "mean_shortest_path": mean_shortest_path(largest, adjacency(n_nodes, edges)) if len(largest) > 1
        else float("nan"),
    }


# --------------------------------------------------------------------------- node2vec


@dataclass
class Node2VecSettings:
    # ranges: tempoformer/settings.py (checked at start-up, config_checks.py, and by from_dict)
    dim: int = field(default=50, metadata={"range": ">= 1"})
    walks_per_node: int = field(default=10, metadata={"range": ">= 1"})
    walk_length: int = field(default=80, metadata={"range": ">= 1"})
    window: int = field(default=2, metadata={"range": ">= 1"})
    epochs: int = field(default=10, metadata={"range": ">= 1"})
    negatives: int = field(default=5, metadata={"range": ">= 1"})
    batch_size: int = field(default=4096, metadata={"range": ">= 1"})
    lr: float = field(default=0.01, metadata={"range": "> 0"})

    @classmethod
    def from_dict(cls, values: dict | None) -> "Node2VecSettings":
        return settings_from_dict(cls, values, "node2vec")


def random_walks(neighbours: list[list[int]], walks_per_node: int, walk_length: int,
                 rng: np.random.Generator) -> np.ndarray:
    """(n_nodes * walks_per_node, walk_length) uniform walks; -1 pads the walks of isolated nodes."""
    n = len(neighbours)
    walks = np.full((n * walks_per_node, walk_length), -1, dtype=np.int64)
    row = 0
    for _ in range(walks_per_node):
        for start in rng.permutation(n):
            node = int(start)
            walks[row, 0] = node
            for step in range(1, walk_length):
                options = neighbours[node]
                if not options:
                    break
                node = options[int(rng.integers(len(options)))]
                walks[row, step] = node
            row += 1
    return walks


def skipgram_pairs(walks: np.ndarray, window: int) -> np.ndarray:
    """(P, 2) (centre, context) pairs within `window` steps of each other on a walk."""
    pairs = []
    for offset in range(1, window + 1):
        a, b = walks[:, :-offset].ravel(), walks[:, offset:].ravel()
        ok = (a >= 0) & (b >= 0)
        pairs.append(np.stack([a[ok], b[ok]], 1))
        pairs.append(np.stack([b[ok], a[ok]], 1))
    return np.concatenate(pairs) if pairs else np.zeros((0, 2), dtype=np.int64)


def node2vec(n_nodes: int, edges: Sequence[tuple[int, int]], settings: Node2VecSettings, seed: int,
             directed: bool = False) -> np.ndarray:
    """(n_nodes, dim) float32 embeddings (p = q = 1), deterministic for a seed."""
    import torch  # here: the graph statistics (the data job) need no torch
    from torch.nn import functional as F

    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    neighbours = adjacency(n_nodes, edges, directed)
    walks = random_walks(neighbours, settings.walks_per_node, settings.walk_length, rng)
    pairs = torch.from_numpy(skipgram_pairs(walks, settings.window))
    # word2vec init: input vectors uniform in ±0.5/dim, output vectors zero
    centre = torch.nn.Embedding(n_nodes, settings.dim, sparse=True)
    context = torch.nn.Embedding(n_nodes, settings.dim, sparse=True)
    with torch.no_grad():
        centre.weight.uniform_(-0.5 / settings.dim, 0.5 / settings.dim, generator=generator)
        context.weight.zero_()
    if len(pairs):
        counts = np.bincount(walks[walks >= 0], minlength=n_nodes).astype(np.float64) ** 0.75
        noise = torch.from_numpy(counts / counts.sum())
        optimizer = torch.optim.SparseAdam(list(centre.parameters()) + list(context.parameters()), lr=settings.lr)
        for epoch in range(settings.epochs):
            order = torch.randperm(len(pairs), generator=generator)
            total = 0.0
            for start in range(0, len(pairs), settings.batch_size):
                batch = pairs[order[start: start + settings.batch_size]]
                negatives = torch.multinomial(noise, len(batch) * settings.negatives, replacement=True,
                                              generator=generator).view(len(batch), settings.negatives)
                u = centre(batch[:, 0])                                    # (b, d)
                positive = (u * context(batch[:, 1])).sum(-1)             # (b,)
                negative = torch.einsum("bd,bkd->bk", u, context(negatives))
                loss = -(F.logsigmoid(positive).mean() + F.logsigmoid(-negative).sum(-1).mean())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(batch)
            log.info("node2vec epoch %d/%d: loss %.4f over %d pairs", epoch + 1, settings.epochs,
                     total / len(pairs), len(pairs))
    return centre.weight.detach().numpy().astype(np.float32)


def settings_dict(settings: Node2VecSettings) -> dict:
    return asdict(settings)

