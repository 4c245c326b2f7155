"""Corpus readers: each turns one raw format into the canonical post table (DESIGN.md §3).

Every reader module has `read(path, dataset=..., **options) -> polars.DataFrame` and
`LABELS` (class names, minority class first). Bad input raises posts.InputError naming the
file, the record and the problem; whatever a reader skips on purpose is counted and logged.
Readers never write files.
"""

from __future__ import annotations

import os
from types import ModuleType

import polars as pl

from . import chitchat, generic, lrs, talklife, topic_shift_mi

READERS: dict[str, ModuleType] = {
    "chitchat": chitchat,
    "lrs": lrs,
    "topic_shift_mi": topic_shift_mi,
    "talklife": talklife,
    "generic": generic,
}


def ingest(
    fmt: str, path: str | os.PathLike | None, dataset: str | None = None, **options
) -> pl.DataFrame:
    """Read `path` with the reader for `fmt`; the `dataset` column defaults to `fmt`."""
    if fmt not in READERS:
        raise ValueError(f"unknown format {fmt!r}; known: {sorted(READERS)}")
    if path is None and fmt != "chitchat":
        raise ValueError(f"format {fmt!r} needs a path (only chitchat has a default corpus)")
    return READERS[fmt].read(path, dataset=dataset or fmt, **options)
