"""The canonical post table, defined here (columns: `POST_SCHEMA`; rules: `validate_posts`; the
README's "Stages" table lists the columns), and the checks every reader's output must pass.

One row per post, rows sorted by (timeline_id, position); a row's index in this table is the
post's global index, which windows, folds and embeddings refer to.
"""

from __future__ import annotations

import logging
import os
from typing import Iterable, Mapping

import polars as pl

from ..artefacts import read_parquet
from ..atomic import write_with
from ..errors import InputError  # noqa: F401  (readers raise it from here)

log = logging.getLogger(__name__)

POST_SCHEMA: dict[str, pl.DataType] = {
    "dataset": pl.String(),
    "timeline_id": pl.String(),
    "post_id": pl.String(),
    "position": pl.Int32(),
    "timestamp": pl.Datetime("us", "UTC"),
    "text": pl.String(),
    "label": pl.String(),
}


def label_set(labels: Iterable[str] | None) -> tuple[str, ...] | None:
    """The dataset's class names, checked: distinct non-empty strings (None: any label)."""
    if labels is None:
        return None
    if isinstance(labels, str) or not all(isinstance(x, str) and x for x in labels):
        raise ValueError(f"labels must be a list of non-empty strings, got {labels!r}")
    labels = tuple(labels)
    if not labels or len(set(labels)) != len(labels):
        raise ValueError(f"labels must be a non-empty list of distinct names, got {list(labels)}")
    return labels


def check_label(
    label: str | None, labels: tuple[str, ...] | None, path: str | os.PathLike, record: str
) -> None:
    """The one label check of every reader: a post's label (None: unlabelled) must be one of
    the dataset's `labels` (None: no check)."""
    if label is not None and labels is not None and label not in labels:
        raise InputError(
            path, record, f"unknown label {label!r}: not one of the dataset's labels {list(labels)}"
        )


def posts_from_records(
    records: Iterable[Mapping],
    dataset: str,
    source: str | os.PathLike,
    order_key: str = "order",
    labels: Iterable[str] | None = None,
) -> pl.DataFrame:
    """Build the canonical table from reader records.

    Each record has timeline_id, post_id, timestamp (datetime or None), text, label and an
    `order_key` that sorts posts within their timeline (a reader decides what it is, e.g.
    (time, id)); positions are assigned from it. With `labels`, every label must be one of
    them (check_label); the error names the record's optional `where` = (file, record in that
    file), else `source` and the post.
    """
    rows = list(records)
    if not rows:
        raise InputError(source, "-", "no posts were read")
    labels = label_set(labels)
    if labels is not None:  # in reading order, so the error names the first bad record read
        for r in rows:
            path, record = r.get("where") or (source, _name(r))
            check_label(r["label"], labels, path, record)
    rows.sort(key=lambda r: (r["timeline_id"], r[order_key]))
    position, previous = 0, None
    for r in rows:
        position = position + 1 if r["timeline_id"] == previous else 0
        previous = r["timeline_id"]
        r["position"] = position
    df = pl.DataFrame(
        {
            "dataset": [dataset] * len(rows),
            "timeline_id": [r["timeline_id"] for r in rows],
            "post_id": [r["post_id"] for r in rows],
            "position": [r["position"] for r in rows],
            "timestamp": [r["timestamp"] for r in rows],
            "text": [r["text"] for r in rows],
            "label": [r["label"] for r in rows],
        },
        schema=POST_SCHEMA,
    )
    return validate_posts(df, source, labels)


def validate_posts(
    df: pl.DataFrame, source: str | os.PathLike, labels: Iterable[str] | None = None
) -> pl.DataFrame:
    """Check the contract; raise InputError naming the first offending record."""
    missing = [c for c in POST_SCHEMA if c not in df.columns]
    if missing:
        raise InputError(source, "-", f"missing column(s) {missing}")
    df = df.select(list(POST_SCHEMA)).cast(POST_SCHEMA)
    # Every check is a column expression over the whole table (no Python loop over posts);
    # only the first offending row is turned into Python, to name it.
    for column in ("dataset", "timeline_id", "post_id", "position", "text"):
        if df[column].null_count():
            nulls = df.filter(pl.col(column).is_null())
            raise InputError(source, _name(nulls.row(0, named=True)), f"{column} is empty")
    key = pl.col("post_id") if df["dataset"].n_unique() <= 1 else pl.struct("dataset", "post_id")
    if df.select(key.n_unique()).item() != df.height:  # cheap test first, then find the row
        dupes = df.filter(key.is_duplicated())
        raise InputError(source, _name(dupes.row(0, named=True)), "duplicate post_id")
    # Sorted by (timeline_id, position) <=> no row is below the row before it.
    timeline, previous = pl.col("timeline_id"), pl.col("timeline_id").shift(1)
    same = timeline == previous
    position = pl.col("position")
    unsorted = df.filter((timeline < previous) | (same & (position < position.shift(1))))
    if unsorted.height:
        raise InputError(
            source, _name(unsorted.row(0, named=True)),
            "rows are not sorted by (timeline_id, position): this row belongs before the one "
            "above it",
        )
    # Given the order, 0..N-1 per timeline <=> 0 where a timeline starts, else previous + 1.
    bad = df.filter(pl.when(same).then(position != position.shift(1) + 1).otherwise(position != 0))
    if bad.height:
        raise InputError(source, _name(bad.row(0, named=True)), "positions are not 0..N-1")
    backwards = df.filter(same & (pl.col("timestamp") < pl.col("timestamp").shift(1)))
    if backwards.height:
        raise InputError(
            source, _name(backwards.row(0, named=True)), "timestamp earlier than previous post"
        )
    if labels is not None:
        allowed = set(labels)
        unknown = df.filter(pl.col("label").is_not_null() & ~pl.col("label").is_in(allowed))
        if unknown.height:
            row = unknown.row(0, named=True)
            raise InputError(source, _name(row), f"unknown label {row['label']!r}")
    return df


def _name(row: Mapping) -> str:
    return f"timeline {row['timeline_id']!r} post {row['post_id']!r}"


def write_parquet_atomic(df: pl.DataFrame, path: str | os.PathLike) -> None:
    """Write via a temporary file in the same folder, so a failure leaves no partial output."""
    # zstd level 1: ~40% faster than polars' default level on the 1M-post streams for
    # ~3% more bytes (bench/streams.py).
    write_with(path, lambda tmp: df.write_parquet(tmp, compression="zstd", compression_level=1))


def read_posts(path: str | os.PathLike) -> pl.DataFrame:
    return validate_posts(read_parquet(path), path)
