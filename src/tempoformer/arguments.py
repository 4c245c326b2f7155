"""Argument types shared by the subcommands of every stage."""

from __future__ import annotations

import argparse
import json


def json_arg(text: str):
    """A JSON value on the command line (settings, label lists)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON: {error}") from None
