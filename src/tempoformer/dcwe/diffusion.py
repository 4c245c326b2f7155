"""Semantic diffusion through the social network (Hofmann et al. 2021, §5.4, Figures 4-5).

For a pair (word k, associate k'), e.g. the paper's ("network", "learning") on ArXiv and
("mask", "vaccine") on Reddit:
- every occurrence of k in a document of unit i at time j gets its contextualised embedding from
  the trained model (the document's dynamic embeddings through the encoder), the mean of the
  first `layers` layers (footnote 15: the first six), a word of several pieces the mean of its
  pieces (footnote 14);
- the candidates at time j are the time-specific centroids of the words of the filtered
  vocabulary (vocab.py) and of k', each the mean over the units that used the word at j of the
  unit's mean embedding of it ("averaged over social contexts"); k itself is not a candidate;
- r is the rank of k''s centroid among the candidates by cosine similarity to the occurrence
  (1 = nearest), and r^ = N - r + 1 if r <= N, else 0 (eq. 16, N = 100); where k' does not occur
  at time j it has no centroid and r^ = 0 (`associate_present` false);
- r^ of a (unit, time) is the mean over k's occurrences there (Figure 4 colours the units by it).

Walk vs flight (Figure 5): for each time j, the units with r^ > 0 at j and at no earlier time
are newly reached; a newly reached unit adjacent in the graph to a unit reached before j spread
by a walk, any other by a flight. `walk_share` = walks / newly reached, undefined (null) where
no unit was reached before j (nothing to walk from, e.g. the first time).

The paper does not say among which embeddings the N nearest neighbours are sought; we take the
candidates above (its "time-specific centroids ... averaged over social contexts") and say so.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import polars as pl
import torch

from ..settings import settings_from_dict
from .evaluate import text_words
from .model import DcweModel
from .train import collate, truncate

log = logging.getLogger(__name__)


@dataclass
class DiffusionSettings:
    # ranges: tempoformer/settings.py
    pairs: list = field(default_factory=list)  # [[word, associate], ...]
    neighbours: int = field(default=100, metadata={"range": ">= 1"})  # N of eq. 16
    layers: int = field(default=6, metadata={"range": ">= 1"})  # the first `layers` layers averaged (footnote 15)
    batch_size: int = field(default=32, metadata={"range": ">= 1"})
    splits: list = field(default_factory=lambda: ["train", "dev", "test"])  # documents read

    def __post_init__(self):
        for pair in self.pairs:
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(w, str) and w.strip()
                                                                               for w in pair)):
                raise ValueError(f"diffusion pairs are [word, associate] lists of two words, got {pair!r}")
            if pair[0].strip().lower() == pair[1].strip().lower():
                raise ValueError(f"diffusion pair {pair!r}: the word and its associate are the same")
        unknown = set(self.splits) - {"train", "dev", "test"}
        if unknown or not self.splits:
            raise ValueError(f"diffusion splits must be some of train, dev, test, got {self.splits!r}")

    @classmethod
    def from_dict(cls, values: dict | None) -> "DiffusionSettings":
        return settings_from_dict(cls, values, "diffusion")


# --------------------------------------------------------------------------- embeddings


@torch.no_grad()
def contextual_words(model: DcweModel, tokenizer, texts: Sequence[str], units: np.ndarray, times: np.ndarray,
                     max_length: int, layers: int = 6, batch_size: int = 32, device: str = "cpu"):
    """Yield (document index, word as its piece ids, vector) for every word of every text: the
    mean over the word's pieces of the mean of the encoder's first `layers` layers, computed on
    the text's dynamic embeddings (the model's offsets for the text's unit and time). A text
    longer than max_length keeps its first and last pieces, as in training; words cut away are
    not yielded."""
    model.to(device).eval()
    n_layers = model.config.num_hidden_layers
    if layers > n_layers:
        log.warning("diffusion layers %d > the backbone's %d: all of them are averaged", layers, n_layers)
    layers = min(layers, n_layers)
    words = text_words(tokenizer, texts)
    for start in range(0, len(texts), batch_size):
        picks = range(start, min(start + batch_size, len(texts)))
        rows, owners = [], []
        for d in picks:
            flat = [(piece, w) for w, word in enumerate(words[d]) for piece in word]
            kept = truncate(flat, max_length - 2)
            rows.append([tokenizer.cls_token_id, *(p for p, _ in kept), tokenizer.sep_token_id])
            owners.append([None, *(w for _, w in kept), None])
        ids, attention = collate(rows, tokenizer.pad_token_id)
        ids, attention = ids.to(device), attention.to(device)
        t = torch.as_tensor(times[list(picks)], dtype=torch.long, device=device)
        u = torch.as_tensor(units[list(picks)], dtype=torch.long, device=device)
        emb, offsets, _ = model.offsets(ids, attention, t, u)
        inputs = emb if offsets is None else emb + offsets
        out = model.bert(inputs_embeds=inputs, attention_mask=attention, output_hidden_states=True)
        hidden = torch.stack(out.hidden_states[1: layers + 1]).mean(0).float().cpu()
        for row, d in enumerate(picks):
            positions: dict[int, list[int]] = defaultdict(list)
            for position, w in enumerate(owners[row]):
                if w is not None:
                    positions[w].append(position)
            for w, where in positions.items():
                yield d, words[d][w], hidden[row, where].mean(0).numpy()


def _normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def rank_score(vector: np.ndarray, centroids: np.ndarray, associate: int | None, neighbours: int) -> float:
    """r^ = N - r + 1 (eq. 16) with r the rank of row `associate` of `centroids` by cosine
    similarity to `vector` (1 = nearest; ties count in its favour), 0 when r > N or when there is
    no associate row."""
    if associate is None:
        return 0.0
    sims = _normalise(centroids) @ _normalise(vector)
    rank = 1 + int(np.sum(sims > sims[associate]))
    return float(neighbours - rank + 1) if rank <= neighbours else 0.0


def diffusion_scores(occurrences: Sequence[tuple[int, int, np.ndarray]], centroids: dict[int, tuple[list, np.ndarray]],
                     word, associate, neighbours: int) -> pl.DataFrame:
    """unit, time, r_hat (mean over the word's occurrences there), occurrences, associate_present.

    occurrences: (unit, time, vector) of the word; centroids: time -> (candidate words, their
    centroid rows); the word itself is dropped from the candidates."""
    per: dict[tuple[int, int], list[float]] = defaultdict(list)
    present: dict[int, bool] = {}
    for unit, time, vector in occurrences:
        words, rows = centroids.get(time, ([], np.zeros((0, len(vector)))))
        keep = [i for i, w in enumerate(words) if w != word]
        candidates = [words[i] for i in keep]
        index = candidates.index(associate) if associate in candidates else None
        present[time] = index is not None
        per[(unit, time)].append(rank_score(vector, rows[keep], index, neighbours))
    keys = sorted(per)
    return pl.DataFrame({"unit": [k[0] for k in keys], "time": [k[1] for k in keys],
                         "r_hat": [float(np.mean(per[k])) for k in keys], "occurrences": [len(per[k]) for k in keys],
                         "associate_present": [present[k[1]] for k in keys]},
                        schema={"unit": pl.Int64, "time": pl.Int64, "r_hat": pl.Float64, "occurrences": pl.Int64,
                                "associate_present": pl.Boolean})


def time_centroids(sums: dict, counts: dict) -> dict[int, tuple[list, np.ndarray]]:
    """time -> (words, centroids): a word's centroid at a time is the mean over the units that
    used it then of each unit's mean vector of it. sums/counts: (word, time, unit) -> sum, count."""
    per: dict[tuple, list[np.ndarray]] = defaultdict(list)
    for (word, time, unit), total in sums.items():
        per[(word, time)].append(total / counts[(word, time, unit)])
    out: dict[int, tuple[list, list]] = defaultdict(lambda: ([], []))
    for (word, time) in sorted(per, key=lambda k: (k[1], k[0])):
        out[time][0].append(word)
        out[time][1].append(np.mean(per[(word, time)], axis=0))
    return {t: (words, np.stack(rows)) for t, (words, rows) in out.items()}


def walk_flight(scores: pl.DataFrame, edges: Sequence[tuple[int, int]], n_times: int,
                directed: bool = False) -> pl.DataFrame:
    """Per time: units reached (r^ > 0), newly reached, walks, flights, walk share (module docstring).
    A directed edge (a, b) lets a change spread from a to b."""
    neighbours: dict[int, set[int]] = defaultdict(set)
    for a, b in edges:
        neighbours[b].add(a)
        if not directed:
            neighbours[a].add(b)
    reached: set[int] = set()
    rows = []
    for time in range(n_times):
        now = set(scores.filter((pl.col("time") == time) & (pl.col("r_hat") > 0))["unit"].to_list())
        used = scores.filter(pl.col("time") == time).height
        new = now - reached
        walks = sum(1 for u in new if neighbours[u] & reached)
        rows.append({"time": time, "units_using": used, "reached": len(now), "new": len(new), "walk": walks,
                     "flight": len(new) - walks,
                     "walk_share": walks / len(new) if new and reached else None})
        reached |= now
    return pl.DataFrame(rows, schema={"time": pl.Int64, "units_using": pl.Int64, "reached": pl.Int64,
                                      "new": pl.Int64, "walk": pl.Int64, "flight": pl.Int64,
                                      "walk_share": pl.Float64})


def analyse(model: DcweModel, tokenizer, docs: pl.DataFrame, candidate_ids: Sequence[int], edges, n_times: int,
            settings: DiffusionSettings, max_length: int, device: str = "cpu",
            directed: bool = False) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """(r^ per pair, unit and time; walk/flight per pair and time; counts) of `docs` (the corpus's
    document table, the chosen splits). candidate_ids: the filtered vocabulary's word ids."""
    docs = docs.filter(pl.col("split").is_in(list(settings.splits)))
    pieces = {w: tuple(tokenizer(w, add_special_tokens=False)["input_ids"])
              for pair in settings.pairs for w in pair}
    empty = [w for w, p in pieces.items() if not p]
    if empty:
        raise ValueError(f"diffusion words {empty} have no word piece")
    targets = {pieces[a] for a, _ in settings.pairs}
    candidates = {(int(i),) for i in candidate_ids} | {pieces[b] for _, b in settings.pairs}
    sums: dict = {}
    counts: dict = defaultdict(int)
    occurrences: dict[tuple, list] = defaultdict(list)
    units, times = docs["unit"].to_numpy(), docs["time"].to_numpy()
    for d, word, vector in contextual_words(model, tokenizer, docs["text"].to_list(), units, times, max_length,
                                            settings.layers, settings.batch_size, device):
        unit, time = int(units[d]), int(times[d])
        if word in candidates:
            key = (word, time, unit)
            sums[key] = sums[key] + vector if key in sums else vector.astype(np.float64)
            counts[key] += 1
        if word in targets:
            occurrences[word].append((unit, time, vector))
    centroids = time_centroids(sums, counts)
    frames, walks, info = [], [], {}
    for word, associate in settings.pairs:
        name = f"{word}/{associate}"
        scores = diffusion_scores(occurrences[pieces[word]], centroids, pieces[word], pieces[associate],
                                  settings.neighbours)
        info[name] = {"occurrences": int(scores["occurrences"].sum()) if scores.height else 0,
                      "units": scores["unit"].n_unique() if scores.height else 0,
                      "associate_times": sorted(t for t, (ws, _) in centroids.items() if pieces[associate] in ws)}
        if not scores.height:
            log.warning("diffusion: %r does not occur in the documents read", word)
        frames.append(scores.with_columns(pl.lit(word).alias("word"), pl.lit(associate).alias("associate")))
        walks.append(walk_flight(scores, edges, n_times, directed).with_columns(
            pl.lit(word).alias("word"), pl.lit(associate).alias("associate")))
    return pl.concat(frames, how="vertical"), pl.concat(walks, how="vertical"), info


# --------------------------------------------------------------------------- figures


def layout(vectors: np.ndarray) -> np.ndarray:
    """2-d positions of the units: the first two principal components of their node2vec vectors
    (neighbours in the graph lie close), deterministic."""
    x = np.asarray(vectors, dtype=np.float64)
    x = x - x.mean(0)
    if x.shape[0] < 2:
        return np.zeros((x.shape[0], 2))
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    out = x @ vt[:2].T
    if out.shape[1] < 2:
        out = np.pad(out, ((0, 0), (0, 2 - out.shape[1])))
    # a fixed sign per axis: the largest coordinate positive
    return out * np.where(out[np.abs(out).argmax(0), [0, 1]] < 0, -1, 1)


def figure4(scores: pl.DataFrame, positions: np.ndarray, edges, periods: Sequence[str], neighbours: int,
            out_path: str | Path, title: str) -> Path:
    """One row per pair, one panel per time: the graph (grey), the units that used the word then
    coloured by r^ (0 .. N)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..atomic import write_with

    pairs = scores.select("word", "associate").unique(maintain_order=True).rows()
    n_times = len(periods)
    fig, axes = plt.subplots(max(1, len(pairs)), n_times, figsize=(2.6 * n_times, 2.6 * max(1, len(pairs))),
                             squeeze=False)
    segments = np.array([[positions[a], positions[b]] for a, b in edges]) if len(edges) else None
    mappable = None
    for r, (word, associate) in enumerate(pairs or [("–", "–")]):
        rows = scores.filter((pl.col("word") == word) & (pl.col("associate") == associate))
        for t in range(n_times):
            ax = axes[r][t]
            if segments is not None:
                from matplotlib.collections import LineCollection

                ax.add_collection(LineCollection(segments, colors="0.85", linewidths=0.3, zorder=0))
            ax.scatter(positions[:, 0], positions[:, 1], s=1, c="0.7", zorder=1)
            here = rows.filter(pl.col("time") == t)
            if here.height:
                units = here["unit"].to_numpy()
                mappable = ax.scatter(positions[units, 0], positions[units, 1], c=here["r_hat"].to_numpy(), s=14,
                                      cmap="viridis", vmin=0, vmax=neighbours, edgecolors="k", linewidths=0.3,
                                      zorder=2)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(periods[t], fontsize=9)
            if t == 0:
                ax.set_ylabel(f"{word} / {associate}", fontsize=9)
    if mappable is not None:
        fig.colorbar(mappable, ax=axes.ravel().tolist(), shrink=0.6, label="r̂ (0 .. N)")
    fig.suptitle(title, fontsize=10)
    out_path = Path(out_path)
    write_with(out_path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)
    return out_path


def figure5(walks: pl.DataFrame, periods: Sequence[str], out_path: str | Path, title: str) -> Path:
    """Per pair, per time: newly reached units split into walks (W) and flights (F); no bar where
    no unit was reached before (the share is undefined), only the count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..atomic import write_with

    pairs = walks.select("word", "associate").unique(maintain_order=True).rows()
    fig, axes = plt.subplots(1, max(1, len(pairs)), figsize=(3.6 * max(1, len(pairs)), 3.0), squeeze=False)
    for ax, (word, associate) in zip(axes[0], pairs):
        rows = walks.filter((pl.col("word") == word) & (pl.col("associate") == associate)).sort("time")
        x = np.arange(rows.height)
        # no bar where the share is undefined (nothing reached before: nothing to walk from)
        defined = rows["walk_share"].is_not_null().to_numpy()
        new = np.maximum(rows["new"].to_numpy(), 1)
        walk = np.where(defined, rows["walk"].to_numpy() / new, 0.0)
        flight = np.where(defined, rows["flight"].to_numpy() / new, 0.0)
        ax.bar(x, walk, color="C0", label="walk (W)")
        ax.bar(x, flight, bottom=walk, color="C1", label="flight (F)")
        for i, (n, ok) in enumerate(zip(rows["new"].to_list(), defined)):
            ax.text(i, 1.02, f"n={n}" if ok or n == 0 else f"n={n}, first", ha="center", fontsize=7)
        ax.set(xticks=x, ylim=(0, 1.15), title=f"{word} / {associate}", ylabel="share of newly reached units")
        ax.set_xticklabels([periods[t] for t in rows["time"].to_list()], rotation=45, fontsize=7)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    out_path = Path(out_path)
    write_with(out_path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)
    return out_path
