"""A sheet for the paper's human evaluation (Table 4), which raters fill in by hand.

Six questions per generated abstract (the authors' evaluation_tools/output_analysis.py:21-27):
is the topic / problem / method clear and correct, and is it new. Items are drawn at random
(seeded) from every model's generations, the same number per model, shuffled together, and
shown under blinded ids; the key (item -> model, seed) is a separate file for whoever scores the
answers. The authors instead show the samples ranked 8-13 by content METEOR per system.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl

from ..atomic import write_text_atomic

QUESTIONS = ("topic_clear_correct", "topic_new", "problem_clear_correct", "problem_new",
             "method_clear_correct", "method_new")


def build_sheet(generation_files: list[str | os.PathLike], per_model: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(sheet, key): `per_model` random generations of each model (over its seeds), blinded."""
    rng = np.random.default_rng(seed)
    by_model: dict[str, list[dict]] = {}
    for path in sorted(map(str, generation_files)):
        for line in Path(path).read_text().splitlines():
            g = json.loads(line)
            by_model.setdefault(g["model"], []).append(g)
    picked = []
    for model in sorted(by_model):
        items = by_model[model]
        for i in sorted(rng.choice(len(items), size=min(per_model, len(items)), replace=False)):
            picked.append(items[i])
    order = rng.permutation(len(picked))
    sheet_rows, key_rows = [], []
    for rank, i in enumerate(order, 1):
        g = picked[i]
        item = f"item{rank:03d}"
        sheet_rows.append({"item": item, "year": g["year"], "text": g["text"], **{q: "" for q in QUESTIONS}})
        key_rows.append({"item": item, "model": g["model"], "seed": g["seed"], "sample": g["sample"]})
    sheet = pl.DataFrame(sheet_rows, schema={"item": pl.String, "year": pl.Int64, "text": pl.String,
                                             **{q: pl.String for q in QUESTIONS}})
    key = pl.DataFrame(key_rows, schema={"item": pl.String, "model": pl.String, "seed": pl.Int64, "sample": pl.Int64})
    return sheet, key


def write_sheet(generation_files, sheet_path, key_path, per_model: int = 10, seed: int = 0) -> int:
    sheet, key = build_sheet(generation_files, per_model, seed)
    write_text_atomic(sheet_path, sheet.write_csv())
    write_text_atomic(key_path, key.write_csv())
    return sheet.height
