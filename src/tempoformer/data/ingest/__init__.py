"""Corpus readers: each turns one raw format into the canonical post table (its columns and
checks: `POST_SCHEMA` and `validate_posts` in src/tempoformer/data/posts.py).

Every reader module has `read(path, dataset=..., labels=None, **options) -> polars.DataFrame`
and `LABELS` (class names, minority class first). Bad input raises posts.InputError naming the
file, the record and the problem; whatever a reader skips on purpose is counted and logged.
Readers never write files. `ingest()` is the entry point: it checks the options against the
reader's signature (`reader_options`), so a misspelt or mistyped option is an error naming it.

Labels: given the dataset's `labels`, every labelled post's label (read from the file, or
derived by the reader: lrs, topic_shift_mi, chitchat, talklife) must be one of them, else an
InputError naming the file, the record (the line, for CSV and JSONL) and the label
(posts.check_label, the one check all readers share).

Timestamps: a reader refuses any timestamp outside [earliest_timestamp, latest_timestamp]
(reader options, both ends inclusive). earliest_timestamp defaults to 1970-01-01T00:00:00Z,
the Unix epoch: no corpus of posts is older, and negative Unix seconds or a misread year are
mistakes. latest_timestamp defaults to "now": the time of ingest plus one day (a post written
just now in a zone up to UTC+14, stored without its zone and so read as UTC, is not refused);
the bound only ever widens as time passes, so a corpus accepted once stays accepted. Either
takes an ISO 8601 date or date-time (no zone: UTC; a date alone: its midnight), or null for no
bound (a corpus of older texts: earliest_timestamp null or its own date). A timestamp out of
range is never dropped: once every timestamp is read the reader stops with an InputError
naming the first one out of range (file, record, timestamp) and the count of all of them.
Topic Shift MI has no timestamps, so no such options.
"""

from __future__ import annotations

import collections.abc
import inspect
import json
import os
import types
import typing
from datetime import datetime
from types import ModuleType

import polars as pl

from ..posts import label_set
from . import chitchat, generic, lrs, talklife, topic_shift_mi

READERS: dict[str, ModuleType] = {
    "chitchat": chitchat,
    "lrs": lrs,
    "topic_shift_mi": topic_shift_mi,
    "talklife": talklife,
    "generic": generic,
}
# Parameters of read() that ingest() fills itself: not reader options.
_NOT_OPTIONS = ("path", "dataset", "labels")


def ingest(
    fmt: str,
    path: str | os.PathLike | None,
    dataset: str | None = None,
    labels: typing.Sequence[str] | None = None,
    **options,
) -> pl.DataFrame:
    """Read `path` with the reader for `fmt`; the `dataset` column defaults to `fmt`.

    `labels`: the dataset's class names; a post labelled otherwise is an InputError naming
    its record. `options`: the reader's own options (reader_options(fmt)).
    """
    if fmt not in READERS:
        raise ValueError(f"unknown format {fmt!r}; known: {sorted(READERS)}")
    if path is None and fmt != "chitchat":
        raise ValueError(f"format {fmt!r} needs a path (only chitchat has a default corpus)")
    check_options(fmt, options)
    labels = label_set(labels)  # before reading: a bad list is the caller's, not the corpus's
    return READERS[fmt].read(path, dataset=dataset or fmt, labels=labels, **options)


def reader_options(fmt: str) -> dict[str, inspect.Parameter]:
    """The options the reader for `fmt` takes, from its read() signature, in order."""
    parameters = inspect.signature(READERS[fmt].read).parameters
    return {name: p for name, p in parameters.items() if name not in _NOT_OPTIONS}


def check_options(fmt: str, options: typing.Mapping[str, object]) -> None:
    """ValueError naming an option `fmt` does not take (listing those it does), or a value
    of the wrong type (from the annotation of read())."""
    accepted = reader_options(fmt)
    unknown = [name for name in options if name not in accepted]
    if unknown:
        takes = ", ".join(accepted) or "no options"
        raise ValueError(f"unknown option(s) {', '.join(map(repr, unknown))} for format "
                         f"{fmt!r}; it takes: {takes}")
    hints = typing.get_type_hints(READERS[fmt].read)
    for name, value in options.items():
        if name in hints and not _matches(value, hints[name]):
            raise ValueError(f"option {name!r} of format {fmt!r} must be "
                             f"{_type_name(hints[name])}, got {value!r}")


def options_help() -> str:
    """Each format's options with their types and defaults (JSON), for `ingest --options`."""
    parts = []
    for fmt in READERS:
        hints = typing.get_type_hints(READERS[fmt].read)
        keys = [f"{name} ({_type_name(hints[name])}, default {_json(p.default)})"
                for name, p in reader_options(fmt).items()]
        parts.append(f"{fmt}: {', '.join(keys) or 'none'}")
    return "; ".join(parts)


def _json(value: object) -> str:
    try:
        return json.dumps(value)
    except TypeError:
        return repr(value)


_UNION = (typing.Union, types.UnionType)
_SEQUENCES = (collections.abc.Sequence, collections.abc.Iterable, list, tuple)
_MAPPINGS = (collections.abc.Mapping, dict)


def _matches(value: object, hint: object) -> bool:
    """Whether `value` is of the annotated type; a type not handled here accepts anything."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in _UNION:
        return any(_matches(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint is int:  # bool is an int in Python, never in an option
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint in (str, bool, datetime, os.PathLike):
        return isinstance(value, hint)
    if (origin or hint) in _MAPPINGS:
        return isinstance(value, collections.abc.Mapping) and all(
            _matches(k, args[0]) and _matches(v, args[1]) for k, v in value.items()
        ) if len(args) == 2 else isinstance(value, collections.abc.Mapping)
    if (origin or hint) in _SEQUENCES:
        # a string is a sequence of strings, never meant as a list
        return isinstance(value, (list, tuple)) and all(_matches(v, args[0]) for v in value) \
            if args else isinstance(value, (list, tuple))
    return True


_NAMES = {type(None): ("null", "nulls"), str: ("a string", "strings"),
          os.PathLike: ("a string", "strings"), datetime: ("a string", "strings"),
          int: ("an integer", "integers"), float: ("a number", "numbers"),
          bool: ("true or false", "booleans")}


def _type_name(hint: object, plural: bool = False) -> str:
    """The annotation in JSON words, e.g. "a list of strings or null"."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in _UNION:
        return " or ".join(dict.fromkeys(_type_name(a, plural) for a in args))
    if hint in _NAMES:
        return _NAMES[hint][plural]
    if (origin or hint) in _MAPPINGS:
        values = f" of {_type_name(args[1], True)}" if len(args) == 2 else ""
        return ("objects" if plural else "an object") + values
    if (origin or hint) in _SEQUENCES:
        items = f" of {_type_name(args[0], True)}" if args else ""
        return ("lists" if plural else "a list") + items
    return str(hint)
