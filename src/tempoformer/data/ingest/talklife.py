"""TalkLife Moments of Change: user timelines of timestamped posts (private data).

A CSV with columns `timeline_id, post_id, datetime, content, label`; the annotation labels
map 0 → O, IE/IEP → IE, IS/ISB → IS. Posts are ordered by time within a timeline, ties kept in
file order. `datetime` is ISO 8601 unless `timestamp_format` (strptime) is given; a time without
a zone is taken as UTC.
"""

from __future__ import annotations

import logging
import os

import polars as pl

from ..posts import InputError, posts_from_records, validate_posts
from ._common import parse_datetime, read_csv_rows, require_file

log = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("IS", "IE", "O")
LABEL_MAP = {"0": "O", "IE": "IE", "IEP": "IE", "IS": "IS", "ISB": "IS"}
COLUMNS = ("timeline_id", "post_id", "datetime", "content", "label")


def read(
    path: str | os.PathLike,
    dataset: str = "talklife",
    timestamp_format: str | None = None,
) -> pl.DataFrame:
    file = require_file(path)
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
        records.append({"timeline_id": row["timeline_id"], "post_id": row["post_id"],
                        "timestamp": stamp, "text": row["content"], "label": label,
                        "order": (stamp, line)})
    if not records:
        raise InputError(file, "-", "empty: no posts")
    log.info("talklife %s: %d posts in %d timelines", file, len(records),
             len({r["timeline_id"] for r in records}))
    return validate_posts(posts_from_records(records, dataset, file), file, LABELS)
