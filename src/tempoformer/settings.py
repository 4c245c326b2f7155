"""Settings dataclasses built from config sections: unknown keys are refused by name, and values
out of their field's range too.

Ranges sit next to the fields they constrain, as plain text the reader can check by eye: a
dataclass field's `metadata={"range": ...}` (`epochs: int = field(default=1, metadata={"range":
">= 1"})`), or for a class that is no dataclass (a model built from keyword arguments) a
`RANGES` table {name: range} on the class. A range is one of
- a bound: ">= 1", "> 0", "<= 1", "< 1";
- an interval: "[0, 1)", "(0, 1]", "[0, 1]", "(0, 1)";
- a tuple of the values allowed: ("adam", "adamw").
A number must be finite to be in a bound's range. A list (hidden sizes, one per layer) is in
range when each of its items is; None (an optional setting left unset) always is. Values of
another type are left to the type checks.

This module imports nothing of the package: the model registry, the stage settings and the
workflow's start-up checks all read it, without torch.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing

RANGE = "range"  # the metadata key of a dataclass field's range

_BOUND = re.compile(r"^\s*(>=|>|<=|<)\s*(\S+)\s*$")
_INTERVAL = re.compile(r"^\s*([\[(])\s*([^,\s]+)\s*,\s*([^\])\s]+)\s*([\])])\s*$")


def field_ranges(cls) -> dict[str, object]:
    """{name: range} of a settings class: its dataclass fields' `range` metadata, then its
    `RANGES` table."""
    ranges = {}
    if dataclasses.is_dataclass(cls):
        ranges.update({f.name: f.metadata[RANGE] for f in dataclasses.fields(cls) if RANGE in f.metadata})
    ranges.update(getattr(cls, "RANGES", None) or {})
    return ranges


def _number(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def _bounds(spec: str) -> tuple[float | None, bool, float | None, bool]:
    """(low, low_open, high, high_open) of a bound or interval; None: unbounded on that side."""
    if m := _BOUND.match(spec):
        op, value = m[1], _number(m[2])
        return (value, op == ">", None, False) if op.startswith(">") else (None, False, value, op == "<")
    if m := _INTERVAL.match(spec):
        return _number(m[2]), m[1] == "(", _number(m[3]), m[4] == ")"
    raise ValueError(f"not a range: {spec!r} (a bound such as '>= 1' or an interval such as '[0, 1)')")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def in_range(value, spec) -> bool:
    """Whether `value` (a number, a list of them, None) is in range `spec`."""
    if value is None:
        return True
    if isinstance(value, (list, tuple)) and not isinstance(spec, tuple):
        return all(in_range(v, spec) for v in value)
    if isinstance(spec, tuple):
        return value in spec or isinstance(value, (list, tuple, dict))  # a list is the type check's
    if not _is_number(value):
        return True  # the type check's to refuse
    if not math.isfinite(value):
        return False
    low, low_open, high, high_open = _bounds(spec)
    if low is not None and (value <= low if low_open else value < low):
        return False
    return not (high is not None and (value >= high if high_open else value > high))


def _integers(hint) -> bool:
    """Whether an annotation holds integers (int, list[int], int | None), not any number."""
    if hint is int:
        return True
    if hint is float or hint is None:
        return False
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_integers(a) for a in args) and not any(a is float for a in args)
    return bool(args) and all(_integers(a) for a in args if a is not Ellipsis)


def describe_range(spec, hint=None) -> str:
    """The range in words: "an integer >= 1", "a number in [0, 1)", "one of 'adam', 'adamw'"."""
    if isinstance(spec, tuple):
        return "one of " + ", ".join(map(repr, spec))
    _bounds(spec)  # a malformed range is the code's mistake: say so here
    what = "an integer" if _integers(hint) else "a number"
    return f"{what} {spec.strip()}" if _BOUND.match(spec) else f"{what} in {spec.strip()}"


def range_problem(where: str, value, spec, hint=None) -> str | None:
    """None when `value` is in range, else "<where>: <value> is out of range: <range in words>"
    (for a list, the first item out of range, and the list)."""
    if in_range(value, spec):
        return None
    if isinstance(value, (list, tuple)) and not isinstance(spec, tuple):
        item = next(v for v in value if not in_range(v, spec))
        return f"{where}: {item!r} (in {list(value)!r}) is out of range: {describe_range(spec, hint)}"
    return f"{where}: {value!r} is out of range: {describe_range(spec, hint)}"


def check_ranges(cls, values: typing.Mapping, where: str) -> None:
    """ValueError "<where>.<key>: <value> is out of range: ..." for the first value of `values`
    outside its field's range in `cls`; keys `cls` has no range for are not checked here."""
    ranges = field_ranges(cls)
    hints = typing.get_type_hints(cls) if dataclasses.is_dataclass(cls) else {}
    for key, value in values.items():
        if key in ranges and (problem := range_problem(f"{where}.{key}", value, ranges[key], hints.get(key))):
            raise ValueError(problem)


def check_settings(cls, values: typing.Mapping | None, where: str) -> None:
    """ValueError naming, under `where`, the keys of `values` that `cls` has no field for, or the
    first value out of its field's range."""
    values = dict(values or {})
    unknown = set(values) - set(cls.__dataclass_fields__)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(map(repr, sorted(unknown)))}; "
                         f"known: {', '.join(cls.__dataclass_fields__)}")
    check_ranges(cls, values, where)


def settings_from_dict(cls, values: dict | None, what: str, **extra):
    """cls(**values, **extra), or a ValueError naming the keys `cls` does not have, or a value
    out of its field's range."""
    values = dict(values or {})
    unknown = set(values) - set(cls.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown {what} settings {sorted(unknown)}")
    check_ranges(cls, values, f"{what} settings")
    return cls(**values, **extra)
