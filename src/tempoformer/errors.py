"""Errors the command reports as a message rather than a traceback."""

from __future__ import annotations

import os


class InputError(ValueError):
    """Bad input: names the file, the record and the problem."""

    def __init__(self, path: str | os.PathLike, record: object, problem: str):
        self.path, self.record, self.problem = str(path), record, problem
        super().__init__(f"{path}: record {record}: {problem}")
