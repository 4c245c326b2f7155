"""TalkLife Moments of Change: user timelines of timestamped posts (private data).

A CSV with columns `timeline_id, post_id, datetime, content, label`; the annotation labels
map 0 → O, IE/IEP → IE, IS/ISB → IS. Posts are ordered by time within a timeline, ties kept in
file order. `datetime` is ISO 8601 unless `timestamp_format` (strptime) is given; a time without
a zone is taken as UTC; times outside [earliest_timestamp, latest_timestamp] are refused (see
the package docstring).
"""

from __future__ import annotations

import logging
import os
from datetime import datetime
from typing import Sequence

import polars as pl

from ..posts import InputError, posts_from_records, validate_posts
from ._common import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TimeRange, parse_datetime, read_csv_rows, require_file,
)

log = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("IS", "IE", "O")
LABEL_MAP = {"0": "O", "IE": "IE", "IEP": "IE", "IS": "IS", "ISB": "IS"}
COLUMNS = ("timeline_id", "post_id", "datetime", "content", "label")


def read(
    path: str | os.PathLike,
    dataset: str = "talklife",
    timestamp_format: str | None = None,
    earliest_timestamp: str | datetime | None = EARLIEST_TIMESTAMP,
    latest_timestamp: str | datetime | None = LATEST_TIMESTAMP,
    labels: Sequence[str] | None = None,
) -> pl.DataFrame:
    """`labels`: the dataset's class names; a mapped label outside them is an error."""
    file = require_file(path)
    span = TimeRange(earliest_timestamp, latest_timestamp)
    records, seen = [], {}
    for line, row in read_csv_rows(file, COLUMNS):
        record = f"line {line} (timeline {row['timeline_id']!r}, post {row['post_id']!r})"
        for column in ("timeline_id", "post_id"):
            if not row[column].strip():
                raise InputError(file, record, f"empty {column}")
        if row["post_id"] in seen:
            raise InputError(file, record, f"duplicate post_id (also on line {seen[row['post_id']]})")
        seen[row["post_id"]] = line
        label = LABEL_MAP.get(row["label"].strip())
        if label is None:
            raise InputError(file, record, f"unknown label {row['label']!r}")
        stamp = parse_datetime(row["datetime"], timestamp_format, file, record)
        span.check(stamp, file, record)
        records.append({"timeline_id": row["timeline_id"], "post_id": row["post_id"],
                        "timestamp": stamp, "text": row["content"], "label": label,
                        "order": (stamp, line), "where": (file, record)})
    if not records:
        raise InputError(file, "-", "empty: no posts")
    span.raise_refused()
    log.info("talklife %s: %d posts in %d timelines", file, len(records),
             len({r["timeline_id"] for r in records}))
    return validate_posts(posts_from_records(records, dataset, file, labels=labels), file, LABELS)
