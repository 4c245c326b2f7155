"""Generic: any corpus already flattened into a CSV, JSONL or Parquet table (by file extension).

`columns` maps the canonical fields to the file's column names, e.g.
{"timeline_id": "user", "post_id": "id", "timestamp": "time", "text": "body", "label": "y"};
timestamp and label are optional. Without `columns`, the canonical names are used, and
`timestamp` / `label` only if the file has them.

Timestamps: strings are ISO 8601, or `timestamp_format` (strptime) if given; numbers (JSONL,
Parquet) are Unix seconds; a time without a zone is taken as UTC. Posts are ordered by time,
ties in file order; without timestamps, in file order. An empty label means unlabelled (null);
`labels`, if given, lists the allowed class names.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import date, datetime
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import polars as pl

from ..posts import InputError, posts_from_records, validate_posts
from ._common import parse_datetime, read_csv_rows, require_file

log = logging.getLogger(__name__)

# The classes are whatever the file holds; `labels=` names and checks them.
LABELS: tuple[str, ...] = ()
REQUIRED = ("timeline_id", "post_id", "text")
OPTIONAL = ("timestamp", "label")
FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet",
           ".pq": "parquet"}


def read(
    path: str | os.PathLike,
    dataset: str = "generic",
    columns: Mapping[str, str] | None = None,
    labels: Sequence[str] | None = None,
    timestamp_format: str | None = None,
) -> pl.DataFrame:
    file = require_file(path)
    kind = FORMATS.get(file.suffix.lower())
    if kind is None:
        raise InputError(file, "-", f"unknown extension {file.suffix!r} (expected {sorted(FORMATS)})")
    if columns is not None:
        unknown = set(columns) - set(REQUIRED + OPTIONAL)
        if unknown:
            raise ValueError(f"unknown key(s) in columns: {sorted(unknown)}")
    rows = {"csv": _csv_rows, "jsonl": _jsonl_rows, "parquet": _parquet_rows}[kind](file)

    records, seen, mapping = [], {}, None
    allowed = None if labels is None else set(labels)
    for where, row in rows:
        if mapping is None:  # resolved against the first row's columns
            mapping = _mapping(columns, row, file, where)
        value = {field: row[name] for field, name in mapping.items()}
        record = f"{where} (timeline {value['timeline_id']!r}, post {value['post_id']!r})"
        for field in REQUIRED:
            if value[field] is None or (field != "text" and str(value[field]).strip() == ""):
                raise InputError(file, record, f"empty {field} (column {mapping[field]!r})")
        post_id = str(value["post_id"])
        if post_id in seen:
            raise InputError(file, record, f"duplicate post_id (also at {seen[post_id]})")
        seen[post_id] = where
        label = value.get("label")
        label = None if label is None or str(label) == "" else str(label)
        if label is not None and allowed is not None and label not in allowed:
            raise InputError(file, record, f"unknown label {label!r} (allowed {sorted(allowed)})")
        stamp = None
        if "timestamp" in mapping:
            raw = value["timestamp"]
            if isinstance(raw, date) and not isinstance(raw, datetime):
                raw = datetime(raw.year, raw.month, raw.day)
            stamp = parse_datetime(raw, timestamp_format, file, record)
        n = len(records)
        records.append({"timeline_id": str(value["timeline_id"]), "post_id": post_id,
                        "timestamp": stamp, "text": str(value["text"]), "label": label,
                        "order": (stamp, n) if stamp is not None else n})
    if not records:
        raise InputError(file, "-", "empty: no posts")
    df = posts_from_records(records, dataset, file)
    return validate_posts(df, file, labels)


def _mapping(columns: Mapping[str, str] | None, row: Mapping, file: Path, where: str) -> dict:
    if columns is None:
        mapping = {f: f for f in REQUIRED}
        mapping.update({f: f for f in OPTIONAL if f in row})
    else:
        mapping = dict(columns)
        missing_keys = [f for f in REQUIRED if f not in mapping]
        if missing_keys:
            raise ValueError(f"columns must map {missing_keys}")
    missing = [name for name in mapping.values() if name not in row]
    if missing:
        raise InputError(file, where, f"missing column(s) {missing}")
    log.info("generic %s: reading columns %s", file, mapping)
    return mapping


def _csv_rows(file: Path) -> Iterator[tuple[str, dict]]:
    for line, row in read_csv_rows(file, ()):
        yield f"line {line}", row


def _jsonl_rows(file: Path) -> Iterator[tuple[str, dict]]:
    columns = None
    with file.open(encoding="utf-8") as lines:
        try:
            for n, text in enumerate(lines, 1):
                if not text.strip():
                    continue
                try:
                    row = json.loads(text)
                except json.JSONDecodeError as e:
                    raise InputError(file, f"line {n}", f"malformed JSON: {e.msg}") from e
                if not isinstance(row, dict):
                    raise InputError(file, f"line {n}", "expected a JSON object")
                # Every line must have the columns of the first: a field missing further down
                # is an error, not a silent null.
                columns = columns or set(row)
                missing = sorted(columns - set(row))
                if missing:
                    raise InputError(file, f"line {n}", f"missing field(s) {missing}")
                yield f"line {n}", row
        except UnicodeDecodeError as e:
            raise InputError(file, "-", "not UTF-8 text") from e


def _parquet_rows(file: Path) -> Iterator[tuple[str, dict]]:
    try:
        df = pl.read_parquet(file)
    except Exception as e:  # polars/arrow raise several types for a broken file
        raise InputError(file, "-", f"not a readable Parquet file ({e})") from e
    for n, row in enumerate(df.iter_rows(named=True)):
        yield f"row {n}", row
