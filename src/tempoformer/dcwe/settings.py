"""Settings dataclasses from config sections (node2vec, warm-up, training)."""

from __future__ import annotations


def settings_from_dict(cls, values: dict | None, what: str):
    """A settings dataclass from a config section; an unknown key is an error naming `what`."""
    values = dict(values or {})
    unknown = set(values) - set(cls.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown {what} settings {sorted(unknown)}")
    return cls(**values)
