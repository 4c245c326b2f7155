"""Helpers shared by the readers: file checks, CSV/JSON loading, timestamp parsing and the
accepted range of timestamps (TimeRange; the policy is in the package docstring).

Every failure is turned into an InputError naming the file, the record and the problem.
"""

from __future__ import annotations

import csv
import io
import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator, Sequence

from ..posts import InputError

# The csv module refuses fields over 131,072 characters by default, which stops a corpus with
# one long post. The whole file is already in memory when it is parsed, so the limit guards
# nothing here; 2**31 - 1 is the largest value a C long takes on every platform.
csv.field_size_limit(2**31 - 1)

EARLIEST_TIMESTAMP = "1970-01-01T00:00:00Z"
LATEST_TIMESTAMP = "now"
# "now" allows a day ahead of the ingest machine's clock: a post written minutes ago in a
# zone ahead of UTC (up to +14 h), stored without its zone and so read as UTC, is not refused.
NOW_GRACE = timedelta(days=1)


def require_file(path: str | os.PathLike) -> Path:
    path = Path(path)
    if not path.is_file():
        problem = "is a folder, expected a file" if path.is_dir() else "no such file"
        raise InputError(path, "-", problem)
    return path


def require_dir(path: str | os.PathLike) -> Path:
    path = Path(path)
    if not path.is_dir():
        problem = "is a file, expected a folder" if path.exists() else "no such folder"
        raise InputError(path, "-", problem)
    return path


def load_json(path: Path) -> object:
    try:
        text = require_file(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, f"byte {e.start}", "not UTF-8 text") from e
    try:
        return json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as e:
        raise InputError(path, f"line {e.lineno} column {e.colno}", f"malformed JSON: {e.msg}") from e
    except DuplicateKey as e:
        # json would keep only the last value: a duplicated id would lose a record silently.
        raise InputError(path, f"key {e.args[0]!r}", "duplicate key (duplicate id)") from e


class DuplicateKey(Exception):
    pass


def unique_keys(pairs: list[tuple[str, object]]) -> dict:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return result


def read_csv_rows(
    path: Path, required: Sequence[str], encoding: str = "utf-8"
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield (line number, row) for each data row; the header must hold `required`.

    Uses the csv module in strict mode so broken quoting and ragged rows are errors, and the
    error can name the line (the line where the row starts).
    """
    raw = require_file(path).read_bytes()
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise InputError(path, f"byte {e.start}", f"not {encoding} text") from e
    if text.startswith("\ufeff"):  # a BOM would otherwise glue itself to the first column name
        text = text[1:]
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise InputError(path, "line 1", "empty file, no header")
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(path, "header (line 1)", f"missing column(s) {missing}")
        if len(set(header)) != len(header):
            raise InputError(path, "header (line 1)", "duplicate column names")
        start = reader.line_num + 1
        for row in reader:
            if not row:  # a blank line carries no record
                start = reader.line_num + 1
                continue
            if len(row) != len(header):
                raise InputError(
                    path, f"line {start}", f"expected {len(header)} fields, found {len(row)}"
                )
            yield start, dict(zip(header, row))
            start = reader.line_num + 1
    except csv.Error as e:
        raise InputError(path, f"line {reader.line_num}", f"malformed CSV: {e}") from e


def parse_datetime(value: object, fmt: str | None, path: Path, record: str) -> datetime:
    """Parse a timestamp into an aware UTC datetime.

    Strings go through `fmt` (strptime) if given, else ISO 8601; numbers are Unix seconds;
    datetimes pass through. A timestamp without a zone is taken as UTC.
    """
    try:
        if isinstance(value, datetime):
            parsed = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            parsed = datetime.fromtimestamp(value, tz=timezone.utc)
        elif isinstance(value, str) and value.strip():
            text = value.strip()
            parsed = datetime.strptime(text, fmt) if fmt else datetime.fromisoformat(text)
        else:
            raise ValueError("empty")
    except (ValueError, OverflowError, OSError) as e:
        raise InputError(path, record, f"unparseable timestamp {value!r} ({e})") from e
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


class TimeRange:
    """The accepted timestamps, [earliest, latest] inclusive (either end None: open).

    `earliest` / `latest` are the readers' options earliest_timestamp / latest_timestamp: an
    ISO 8601 date or date-time (no zone: UTC; a date alone: its midnight), a datetime, None
    (no bound), or for `latest` "now" (the time this object is made, plus NOW_GRACE).
    A reader calls check() for every timestamp it reads and raise_refused() when it has read
    them all: the error names the first timestamp out of range and counts all of them.
    """

    def __init__(self, earliest: str | datetime | None = EARLIEST_TIMESTAMP,
                 latest: str | datetime | None = LATEST_TIMESTAMP):
        self.earliest = _bound(earliest, "earliest_timestamp")
        self.latest = _bound(latest, "latest_timestamp")
        self.latest_name = (
            f"now ({self.latest.isoformat(timespec='seconds')}: the time of ingest plus "
            f"{NOW_GRACE.days} day)"
            if latest == "now" else str(self.latest and self.latest.isoformat())
        )
        if self.earliest and self.latest and self.earliest > self.latest:
            raise ValueError(f"earliest_timestamp {self.earliest.isoformat()} is after "
                             f"latest_timestamp {self.latest_name}")
        self.read = self.refused = 0
        self.first: tuple[Path, str, str] | None = None

    def contains(self, stamp: datetime) -> bool:
        return not ((self.earliest and stamp < self.earliest)
                    or (self.latest and stamp > self.latest))

    def check(self, stamp: datetime, path: str | os.PathLike, record: str) -> None:
        self.read += 1
        if self.contains(stamp):
            return
        self.refused += 1
        if self.first is None:
            if self.earliest and stamp < self.earliest:
                bound = f"before earliest_timestamp {self.earliest.isoformat()}"
            else:
                bound = f"after latest_timestamp {self.latest_name}"
            self.first = (Path(path), record, f"timestamp {stamp.isoformat()} is {bound}")

    def raise_refused(self) -> None:
        """Stop naming the first refused timestamp, with the count of all refused."""
        if self.first is None:
            return
        path, record, problem = self.first
        raise InputError(
            path, record,
            f"{problem}; {self.refused} of {self.read} timestamp(s) read are out of range "
            "(reader options earliest_timestamp / latest_timestamp; null lifts a bound)",
        )


def _bound(value: str | datetime | None, name: str) -> datetime | None:
    if value is None:
        return None
    if value == "now" and name == "latest_timestamp":
        return datetime.now(timezone.utc) + NOW_GRACE
    try:
        if isinstance(value, datetime):
            parsed = value
        elif isinstance(value, str):
            parsed = datetime.fromisoformat(value.strip())
        else:
            raise ValueError(f"a {type(value).__name__}")
    except ValueError as e:
        also = ', "now"' if name == "latest_timestamp" else ""
        raise ValueError(f"{name} must be an ISO 8601 date or date-time{also} or null, "
                         f"got {value!r} ({e})") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)
