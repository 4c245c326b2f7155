"""The workflow's artefacts read back: a damaged file is named, and set aside to be made again.

A job reads what an earlier job wrote (posts.parquet, streams_w*.parquet, folds.parquet,
sbert.npy, a run's metrics.json and predictions.parquet, the other stages' Parquet, JSON and
.npy/.npz files). A truncated or garbled one used to fail deep inside polars or numpy with a
traceback that named no file. The readers here (read_parquet, read_json, load_npy, load_npz)
raise DamagedArtefact instead, a ValueError whose message is one line,
`<file>: damaged: <problem>`, which the `tempoformer` command prints as its error.

While Snakemake builds the DAG the workflow calls set_aside_if_damaged on the files it is about
to rely on (workflow/rules/common.smk): a damaged one is renamed to `<file>.damaged` (replacing
an older one) with a warning on stderr, so Snakemake sees it missing and plans the job that
makes it. Those checks are cheap (a Parquet file's footer, a JSON file parsed, an .npy header
and its size) and each file is checked once per process (keyed by path, mtime and size).

Every output of the pipeline is written atomically (atomic.py), so a file under its final name
is never one still being written: a damaged one was damaged afterwards (a full disk on a copy, a
truncated transfer, a hand edit).
"""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path
from typing import Any

DAMAGED_SUFFIX = ".damaged"


class DamagedArtefact(ValueError):
    """A workflow artefact that exists but cannot be read: names the file and the problem."""

    def __init__(self, path: str | os.PathLike, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: damaged: {problem}")


def _one_line(error: BaseException) -> str:
    """The first non-empty line of an error's message (polars' messages run over lines)."""
    for line in str(error).splitlines():
        if line.strip():
            return line.strip()
    return type(error).__name__


def _missing(error: BaseException) -> bool:
    return isinstance(error, (FileNotFoundError, IsADirectoryError, PermissionError))


# --- readers: the full read, errors named ------------------------------------------------------


def read_parquet(path: str | os.PathLike, **kwargs):
    """pl.read_parquet(path, **kwargs); a file that is not readable Parquet raises DamagedArtefact."""
    import polars as pl

    try:
        return pl.read_parquet(path, **kwargs)
    except pl.exceptions.ColumnNotFoundError:
        raise  # a readable file without a column asked for: not damage
    except (pl.exceptions.PolarsError, OSError) as error:
        if _missing(error):
            raise
        raise DamagedArtefact(path, _one_line(error)) from None


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value in `path`; a file that does not parse raises DamagedArtefact."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DamagedArtefact(path, f"not valid JSON: {_one_line(error)}") from None


def load_npy(path: str | os.PathLike, **kwargs):
    """np.load(path, **kwargs) of an .npy array; a truncated or garbled file raises DamagedArtefact."""
    import numpy as np

    kwargs.setdefault("allow_pickle", False)
    try:
        return np.load(path, **kwargs)
    except (ValueError, EOFError, OSError) as error:
        if _missing(error):
            raise
        raise DamagedArtefact(path, _one_line(error)) from None


def load_npz(path: str | os.PathLike, **kwargs) -> dict:
    """Every array of an .npz archive, read now (np.load reads them lazily, so a damaged member
    would fail later, unnamed); a damaged archive raises DamagedArtefact."""
    import zlib

    import numpy as np

    kwargs.setdefault("allow_pickle", False)
    try:
        with np.load(path, **kwargs) as stored:
            return {key: stored[key] for key in stored.files}
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error, KeyError) as error:
        if _missing(error):
            raise
        raise DamagedArtefact(path, _one_line(error)) from None


# --- cheap checks, for the DAG build ------------------------------------------------------------


def _parquet_problem(path: str) -> str | None:
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        head = handle.read(4)
        if size >= 12:
            handle.seek(-8, os.SEEK_END)
            tail = handle.read(8)
        else:
            tail = b""
    if size < 12:
        return f"{size} bytes, shorter than a Parquet file's header and footer"
    if head != b"PAR1" or tail[4:] not in (b"PAR1", b"PARE"):
        return "no Parquet magic bytes at its start and end (truncated?)"
    if int.from_bytes(tail[:4], "little") > size - 12:
        return "its footer is longer than the file (truncated?)"
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(path)
    except (OSError, ValueError) as error:  # ArrowInvalid is a ValueError
        return _one_line(error)
    return None


def _json_problem(path: str) -> str | None:
    try:
        read_json(path)
    except DamagedArtefact as error:
        return error.problem
    return None


def _npy_problem(path: str) -> str | None:
    try:
        load_npy(path, mmap_mode="r")  # the header, and a size that holds the array it declares
    except DamagedArtefact as error:
        return error.problem
    return None


def _npz_problem(path: str) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:  # the central directory, at the file's end
            archive.namelist()
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        if _missing(error):
            raise
        return _one_line(error)
    return None


_CHECKS = {".parquet": _parquet_problem, ".json": _json_problem, ".npy": _npy_problem, ".npz": _npz_problem}
_problems: dict[tuple[str, int, int], str | None] = {}
_set_aside: dict[str, str] = {}


def problem(path: str | os.PathLike) -> str | None:
    """Why the artefact at `path` is damaged, by a cheap check; None when it reads, is missing,
    or is of a kind without a check. Cached per path, mtime and size."""
    path = os.fspath(path)
    check = _CHECKS.get(os.path.splitext(path)[1])
    if check is None:
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return None
    if not os.path.isfile(path):
        return None
    key = (path, stat.st_mtime_ns, stat.st_size)
    if key not in _problems:
        try:
            _problems[key] = check(path)
        except OSError:  # vanished or unreadable meanwhile: not for this check to judge
            _problems[key] = None
    return _problems[key]


def set_aside(path: str | os.PathLike, why: str) -> str:
    """Rename `path` to `<path>.damaged` (replacing an older one) and say so on stderr."""
    path = os.fspath(path)
    aside = path + DAMAGED_SUFFIX
    os.replace(path, aside)
    print(f"Warning: {path}: damaged: {why}; set aside as {aside}, to be made again",
          file=sys.stderr, flush=True)
    return aside


def set_aside_if_damaged(path: str | os.PathLike) -> str | None:
    """The problem when `path` is damaged (it is then set aside) or was set aside earlier in
    this process; None when it reads or is missing."""
    path = os.fspath(path)
    if path in _set_aside:
        return _set_aside[path]
    why = problem(path)
    if why is None:
        return None
    try:
        set_aside(path, why)
    except FileNotFoundError:  # set aside meanwhile by another process
        pass
    _set_aside[path] = why
    return why


def was_set_aside(path: str | os.PathLike) -> bool:
    """Whether `path` is missing and its damaged copy is there (set aside, not yet made again)."""
    path = os.fspath(path)
    return os.path.exists(path + DAMAGED_SUFFIX) and not os.path.exists(path)
