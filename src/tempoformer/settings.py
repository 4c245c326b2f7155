"""Settings dataclasses built from config sections: unknown keys are refused by name."""

from __future__ import annotations


def settings_from_dict(cls, values: dict | None, what: str, **extra):
    """cls(**values, **extra), or a ValueError naming the keys `cls` does not have."""
    values = dict(values or {})
    unknown = set(values) - set(cls.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown {what} settings {sorted(unknown)}")
    return cls(**values, **extra)
