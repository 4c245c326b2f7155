"""Five folds over timelines: a timeline lies wholly in train, dev or test of a fold.

Stratified by each timeline's number of minority events: timelines are ranked by that count
(random order among equals, from the seed) and dealt in snake order (0,1,..,k-1,k-1,..,0),
so every fold and every dev split gets a similar share of change-heavy timelines and the
same number of timelines (±1).
"""

from __future__ import annotations

import numpy as np
import polars as pl


def minority_label(posts: pl.DataFrame) -> str:
    counts = posts.drop_nulls("label").group_by("label").len().sort("len", "label")
    return counts["label"][0]


def _deal(ids: np.ndarray, minority: np.ndarray, parts: int, rng: np.random.Generator):
    """Assign part numbers 0..parts-1 in snake order over ids ranked by minority count."""
    order = np.lexsort((rng.permutation(len(ids)), -minority))
    rank = np.arange(len(ids))
    snake = np.where((rank // parts) % 2 == 0, rank % parts, parts - 1 - rank % parts)
    part = np.empty(len(ids), dtype=np.int64)
    part[order] = snake
    return part


def make_folds(posts: pl.DataFrame, n_folds: int = 5, dev_ratio: float = 0.25, seed: int = 0):
    """Rows (fold, timeline_id, split) with split in train/dev/test."""
    minority = minority_label(posts)
    per_timeline = (
        posts.group_by("timeline_id", maintain_order=True)
        .agg((pl.col("label") == minority).sum().alias("minority"))
        .sort("timeline_id")
    )
    ids = per_timeline["timeline_id"].to_numpy()
    counts = per_timeline["minority"].to_numpy()
    if len(ids) < n_folds + 2:
        raise ValueError(f"{len(ids)} timelines are too few for {n_folds} folds with dev sets")
    rng = np.random.default_rng(seed)
    test_fold = _deal(ids, counts, n_folds, rng)
    frames = []
    for fold in range(n_folds):
        rest = np.flatnonzero(test_fold != fold)
        n_dev = max(1, round(dev_ratio * len(rest)))
        # Deal the rest into groups of ~1/dev_ratio; group 0 is dev: stratified like the folds.
        group = _deal(ids[rest], counts[rest], max(2, round(len(rest) / n_dev)), rng)
        split = np.full(len(ids), "test", dtype=object)
        split[rest] = np.where(group == 0, "dev", "train")
        frames.append(pl.DataFrame({"fold": fold, "timeline_id": ids, "split": split.tolist()}))
    return pl.concat(frames).with_columns(pl.col("fold").cast(pl.Int8))


def split_rows(posts: pl.DataFrame, folds: pl.DataFrame, fold: int) -> dict[str, np.ndarray]:
    """Global post rows of train/dev/test for one fold."""
    assignment = folds.filter(pl.col("fold") == fold).select("timeline_id", "split")
    joined = posts.select("timeline_id").with_row_index("row").join(
        assignment, on="timeline_id", how="left", maintain_order="left"
    )
    missing = joined.filter(pl.col("split").is_null())
    if missing.height:
        raise ValueError(f"timeline {missing['timeline_id'][0]!r} has no split in fold {fold}")
    return {
        name: joined.filter(pl.col("split") == name)["row"].to_numpy().astype(np.int64)
        for name in ("train", "dev", "test")
    }
