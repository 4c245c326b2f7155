"""Topic Shift MI: the Mixed-Initiative topic annotation of Switchboard conversations.

`path` is a folder with one CSV per conversation (windows-1252), columns
`,Person,Conversation,Custom Tag,Custom Tag 2,Topic Description,Class`. A conversation is a
timeline, ordered by the unnamed first column (the utterance index); there are no timestamps.
As the authors did, rows with an empty Person or Conversation are dropped (counted and logged)
and Class 2 is merged into 1: Class 0 → M (the minority), 1 and 2 → R.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Sequence

import polars as pl

from ..posts import InputError, posts_from_records, validate_posts
from ._common import read_csv_rows, require_dir

log = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("M", "R")
CLASSES = {"0": "M", "1": "R", "2": "R"}
COLUMNS = ("", "Person", "Conversation", "Class")
ENCODING = "windows-1252"


def read(
    path: str | os.PathLike, dataset: str = "topic_shift_mi", labels: Sequence[str] | None = None
) -> pl.DataFrame:
    """`labels`: the dataset's class names; a mapped Class outside them is an error."""
    folder = require_dir(path)
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise InputError(folder, "-", "no .csv files in the folder")
    others = [p.name for p in sorted(folder.iterdir()) if p.suffix != ".csv"]
    if others:
        log.info("topic_shift_mi %s: skipped %d non-CSV file(s): %s",
                 folder, len(others), ", ".join(others[:5]))
    records, dropped = [], 0
    for file in files:
        file_records, file_dropped = _read_conversation(file)
        records += file_records
        dropped += file_dropped
    if dropped:
        log.info("topic_shift_mi %s: dropped %d row(s) with empty Person or Conversation",
                 folder, dropped)
    df = posts_from_records(records, dataset, folder, labels=labels)
    return validate_posts(df, folder, LABELS)


def _read_conversation(file: Path) -> tuple[list[dict], int]:
    records, dropped, seen = [], 0, {}
    for line, row in read_csv_rows(file, COLUMNS, ENCODING):
        if row["Person"] == "" or row["Conversation"] == "":
            dropped += 1
            continue
        record = f"line {line} (utterance {row['']!r})"
        try:
            index = int(row[""])
        except ValueError:
            raise InputError(file, record, "utterance index (first column) is not an integer")
        if index in seen:
            raise InputError(file, record, f"duplicate utterance index (also on line {seen[index]})")
        seen[index] = line
        label = CLASSES.get(row["Class"].strip())
        if label is None:
            raise InputError(file, record, f"unknown Class {row['Class']!r} (expected 0, 1, 2)")
        records.append({"timeline_id": file.stem, "post_id": f"{file.stem}:{index}",
                        "timestamp": None, "text": row["Conversation"], "label": label,
                        "order": index, "where": (file, record)})
    if not records:
        raise InputError(file, "-", "empty timeline: no utterances")
    return records, dropped
