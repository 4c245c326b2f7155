"""Generic: any corpus already flattened into a CSV, JSONL or Parquet table (by file extension).

`columns` maps the canonical fields to the file's column names, e.g.
{"timeline_id": "user", "post_id": "id", "timestamp": "time", "text": "body", "label": "y"};
timestamp and label are optional. Without `columns`, the canonical names are used, and
`timestamp` / `label` only if the file has them.

Timestamps: strings are ISO 8601, or `timestamp_format` (strptime) if given; numbers (JSONL,
Parquet) are Unix seconds; a time without a zone is taken as UTC; times outside
[earliest_timestamp, latest_timestamp] are refused (see the package docstring). Posts are
ordered by time, ties in file order; without timestamps, in file order. An empty label means
unlabelled (null); `labels`, if given, lists the allowed class names (the dataset's `labels`).

Speed: Parquet files (typed columns) are read with column expressions (bench/streams.py:
1M posts in ~1.5 s instead of ~45 s); if any record might be bad, the file is read again row
by row, which raises the exact error naming the first bad record in file order. CSV and JSONL
are always checked row by row (line numbers, strict parsing); all formats are then sorted and
numbered by polars, not by a Python sort over a dict per post.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import date, datetime
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np
import polars as pl

from ..posts import POST_SCHEMA, InputError, check_label, label_set, validate_posts
from ._common import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, DuplicateKey, TimeRange, parse_datetime, read_csv_rows, require_file,
    unique_keys,
)

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
    earliest_timestamp: str | datetime | None = EARLIEST_TIMESTAMP,
    latest_timestamp: str | datetime | None = LATEST_TIMESTAMP,
) -> pl.DataFrame:
    labels = label_set(labels)
    span = TimeRange(earliest_timestamp, latest_timestamp)
    file = require_file(path)
    kind = FORMATS.get(file.suffix.lower())
    if kind is None:
        raise InputError(file, "-", f"unknown extension {file.suffix!r} (expected {sorted(FORMATS)})")
    if columns is not None:
        unknown = set(columns) - set(REQUIRED + OPTIONAL)
        if unknown:
            raise ValueError(f"unknown key(s) in columns: {sorted(unknown)}")
    if kind == "parquet":
        # Typed columns: a vectorised path (no Python object per post). It returns None as
        # soon as anything looks wrong; the row-by-row path below then reads the file again
        # and raises the exact error, naming the first bad record in file order.
        fast = _parquet_fast(file, dataset, columns, labels, timestamp_format, span)
        if fast is not None:
            return fast
    rows = {"csv": _csv_rows, "jsonl": _jsonl_rows, "parquet": _parquet_rows}[kind](file)
    return _read_rows(rows, file, dataset, columns, labels, timestamp_format, span)


def _read_rows(
    rows: Iterator[tuple[str, dict]],
    file: Path,
    dataset: str,
    columns: Mapping[str, str] | None,
    labels: tuple[str, ...] | None,
    timestamp_format: str | None,
    span: TimeRange,
) -> pl.DataFrame:
    """The row-by-row path: checks each record in file order, so the first error is named
    (timestamps out of range: the first one, with their count, once every row is read)."""
    fields: dict[str, list] = {f: [] for f in ("timeline_id", "post_id", "timestamp", "text",
                                               "label")}
    seen, mapping = {}, None
    for where, row in rows:
        if mapping is None:  # resolved against the first row's columns
            mapping = _mapping(columns, row, file, where)
        value = {field: row[name] for field, name in mapping.items()}
        record = f"{where} (timeline {value['timeline_id']!r}, post {value['post_id']!r})"
        for field in REQUIRED:
            if value[field] is None or (field != "text" and str(value[field]).strip() == ""):
                raise InputError(file, record, f"empty {field} (column {mapping[field]!r})")
        for field in ("timeline_id", "post_id"):
            # 1 and 1.0 would be two timelines, True the text "True": an id is text or an integer
            if isinstance(value[field], bool) or not isinstance(value[field], (str, int)):
                raise InputError(file, record, f"{field} {value[field]!r} (column {mapping[field]!r}) is a "
                                 f"{type(value[field]).__name__}: an id must be text or an integer")
        if not isinstance(value["text"], str):
            raise InputError(file, record, f"text {value['text']!r} (column {mapping['text']!r}) is a "
                             f"{type(value['text']).__name__}, not text")
        if isinstance(value.get("label"), (bool, float, list, dict)):
            raise InputError(file, record, f"label {value['label']!r} (column {mapping['label']!r}) is a "
                             f"{type(value['label']).__name__}: a label is text or an integer")
        post_id = str(value["post_id"])
        if post_id in seen:
            raise InputError(file, record, f"duplicate post_id (also at {seen[post_id]})")
        seen[post_id] = where
        label = value.get("label")
        label = None if label is None or str(label) == "" else str(label)
        check_label(label, labels, file, record)
        stamp = None
        if "timestamp" in mapping:
            raw = value["timestamp"]
            if isinstance(raw, date) and not isinstance(raw, datetime):
                raw = datetime(raw.year, raw.month, raw.day)
            stamp = parse_datetime(raw, timestamp_format, file, record)
            span.check(stamp, file, record)
        # Columns, not a dict per post: the table is built, sorted and numbered by polars.
        fields["timeline_id"].append(str(value["timeline_id"]))
        fields["post_id"].append(post_id)
        fields["timestamp"].append(stamp)
        fields["text"].append(str(value["text"]))
        fields["label"].append(label)
    if mapping is None:
        raise InputError(file, "-", "empty: no posts")
    span.raise_refused()
    frame = pl.DataFrame(fields, schema={f: POST_SCHEMA[f] for f in fields})
    return _finish(frame, dataset, file, labels, timed="timestamp" in mapping)


def _finish(
    frame: pl.DataFrame, dataset: str, file: Path, labels: Sequence[str] | None, timed: bool
) -> pl.DataFrame:
    """Order posts (by time, ties in file order; without timestamps in file order), number
    them 0..N-1 per timeline and check the contract: what posts_from_records did with a
    Python sort over dicts, as one polars sort."""
    # Sort on an integer code per timeline (its rank among the distinct ids, so the order is
    # that of the id strings) rather than on the strings: several times faster at 1M posts.
    ids = frame["timeline_id"].unique().sort()
    code = frame["timeline_id"].replace_strict(
        ids, pl.int_range(ids.len(), dtype=pl.UInt32, eager=True), return_dtype=pl.UInt32
    )
    keys = ["_timeline", "timestamp", "_file_row"] if timed else ["_timeline", "_file_row"]
    frame = frame.with_row_index("_file_row").with_columns(_timeline=code).sort(keys)
    # Rows are now contiguous per timeline: position = row - first row of its timeline.
    row = pl.int_range(pl.len(), dtype=pl.Int32)
    starts = pl.col("_timeline").ne_missing(pl.col("_timeline").shift(1))
    frame = frame.select(
        pl.lit(dataset, dtype=pl.String).alias("dataset"),
        "timeline_id",
        "post_id",
        (row - pl.when(starts).then(row).forward_fill()).alias("position"),
        pl.col("timestamp").cast(POST_SCHEMA["timestamp"]),
        "text",
        "label",
    )
    return validate_posts(frame, file, labels)


# Python's str.isspace() is Unicode White_Space (regex \s) plus the separators \x1c-\x1f.
_BLANK = r"^[\s\x1c-\x1f]*$"
_MIN_SECONDS, _MAX_SECONDS = -62_135_596_800 + 86_400, 253_402_300_799 - 86_400  # years 1..9999


def _stringable(dtype: pl.DataType) -> bool:
    """Types whose polars cast to String equals Python's str() of the value."""
    return dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum)) or dtype.is_integer()


def _parquet_fast(
    file: Path,
    dataset: str,
    columns: Mapping[str, str] | None,
    labels: tuple[str, ...] | None,
    timestamp_format: str | None,
    span: TimeRange,
) -> pl.DataFrame | None:
    """The Parquet file as the canonical table with column expressions, or None when any
    record might be bad or a column type is not handled here (the row path then decides)."""
    try:
        schema = pl.read_parquet_schema(file)
    except Exception as e:  # polars/arrow raise several types for a broken file
        raise InputError(file, "-", f"not a readable Parquet file ({e})") from e
    try:
        mapping = _mapping(columns, schema, file, "row 0")
    except (InputError, ValueError):
        return None  # an empty file is "empty: no posts" first: the row path orders that
    try:
        raw = pl.read_parquet(file, columns=sorted(set(mapping.values())))
    except Exception as e:
        raise InputError(file, "-", f"not a readable Parquet file ({e})") from e
    if raw.height == 0:
        return None
    out = {}
    for field in REQUIRED + ("label",):
        if field not in mapping:
            continue
        column = raw[mapping[field]]
        if field == "label" and column.dtype == pl.Null:  # an all-empty label column
            out[field] = column.cast(pl.String)
        elif not _stringable(column.dtype) or (field != "label" and column.null_count()):
            return None
        else:
            out[field] = column.cast(pl.String)
    frame = pl.DataFrame(out)
    if frame["post_id"].n_unique() != frame.height:  # a duplicate post_id
        return None
    suspect = pl.col("timeline_id").str.contains(_BLANK) | pl.col("post_id").str.contains(_BLANK)
    if "label" in out:
        frame = frame.with_columns(pl.when(pl.col("label") != "").then(pl.col("label")))
        if labels is not None:
            suspect = suspect | ~pl.col("label").is_in(list(labels)).fill_null(True)
    else:
        frame = frame.with_columns(label=pl.lit(None, dtype=pl.String))
    if frame.select(suspect.any()).item():
        return None
    if "timestamp" in mapping:
        stamps = _fast_timestamps(raw[mapping["timestamp"]], timestamp_format, file)
        if stamps is None or not (span.contains(stamps.min()) and span.contains(stamps.max())):
            return None
    else:
        stamps = pl.Series([None] * raw.height, dtype=POST_SCHEMA["timestamp"])
    frame = frame.with_columns(timestamp=stamps)
    return _finish(frame, dataset, file, labels, timed="timestamp" in mapping)


def _fast_timestamps(column: pl.Series, fmt: str | None, file: Path) -> pl.Series | None:
    """parse_datetime's result for every value, vectorised; None if any value would fail
    there (null, out of range, unparseable) or the type is not handled here."""
    utc = POST_SCHEMA["timestamp"]
    dtype = column.dtype
    if column.null_count():
        return None
    if isinstance(dtype, pl.Datetime) or dtype == pl.Date:
        if isinstance(dtype, pl.Datetime) and dtype.time_unit == "ns" and (
            column.dt.epoch("ns") % 1000 != 0
        ).any():
            return None  # Python datetimes drop the nanoseconds: leave that to the row path
        years = column.dt.year()
        if years.min() < 1 or years.max() > 9999:
            return None
        if dtype == pl.Date:
            return column.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        if dtype.time_zone is None:  # a time without a zone is UTC
            return column.dt.cast_time_unit("us").dt.replace_time_zone("UTC")
        return column.dt.cast_time_unit("us").dt.convert_time_zone("UTC").cast(utc)
    if dtype.is_integer() or dtype.is_float():  # Unix seconds
        seconds = column.cast(pl.Float64).to_numpy()
        if not np.isfinite(seconds).all() or seconds.min() < _MIN_SECONDS or (
            seconds.max() > _MAX_SECONDS
        ):
            return None
        if dtype.is_integer():
            micros = column.cast(pl.Int64).to_numpy() * 1_000_000
        else:  # as datetime.fromtimestamp: whole seconds + fraction rounded half to even
            fraction, whole = np.modf(seconds)
            micros = whole.astype(np.int64) * 1_000_000 + np.rint(fraction * 1e6).astype(np.int64)
        return pl.Series(micros).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    if dtype == pl.String:
        # Python's own parser on each distinct text (ISO 8601 or `fmt`), as the row path.
        unique = column.unique()
        parsed = []
        for text in unique.to_list():
            try:
                parsed.append(parse_datetime(text, fmt, file, "-"))
            except InputError:
                return None
        return column.replace_strict(unique, pl.Series(parsed, dtype=utc), return_dtype=utc)
    return None


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
                    row = json.loads(text, object_pairs_hook=unique_keys)
                except json.JSONDecodeError as e:
                    raise InputError(file, f"line {n}", f"malformed JSON: {e.msg}") from e
                except DuplicateKey as e:  # json would keep the last value silently
                    raise InputError(file, f"line {n}", f"key {e.args[0]!r} appears twice") from e
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
