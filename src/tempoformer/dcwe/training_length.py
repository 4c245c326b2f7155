"""Tables 2-3 at equal training length (beyond the paper): dcwe_equal_epochs.

Early stopping (`training.patience`) ends each run at its own epoch, so a model that stopped at
a noisy rise of dev perplexity is compared at a worse point than one that trained on. This table
gives each model's dev perplexity after the last epoch that every model of the dataset ran on
that seed, beside the kept epoch's, and the models' ranks under both. Runs by steps all train
the same steps: their final dev perplexity is the equal-length value.

A module of its own (not in tables.py) because `dcwe-train` reads tables.py to pick a
`selected` run's grid point: a change there would change the fingerprint of every MLM run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import polars as pl

from ..reporting.render import Table, write_table
from .tables import NAMES, _fmt, load_runs, select_runs

VARIANTS = ("dcwe", "sa", "ta", "static", "cwe")


def _dev_after(run: dict, epochs: int | None) -> float:
    """Dev perplexity after `epochs` epochs (None: the run's final one, a run by steps)."""
    return run["epochs"][epochs - 1]["dev"] if epochs else run["dev"]["perplexity"]


def _ranks(values: dict[str, list[float]]) -> dict[str, int]:
    """1 for the lowest mean perplexity."""
    order = sorted(values, key=lambda v: np.mean(values[v]))
    return {v: order.index(v) + 1 for v in values}


def equal_epochs_table(runs: list[dict], label: str) -> tuple[Table, pl.DataFrame]:
    """Per dataset and model (each seed at its best grid point, as Tables 2-3): dev perplexity at
    the kept epoch and at the last epoch all the dataset's models ran on that seed."""
    header = ["Dataset", "Model", "Seeds", "Dev at the kept epoch", "Kept / run per seed", "Dev at equal epochs",
              "Equal epoch per seed", "Rank (kept)", "Rank (equal)"]
    rows, csv = [], []
    selected = select_runs(runs, "mlm")
    for dataset in sorted({r["dataset"] for r in selected}):
        by = {(r["variant"], r["seed"]): r for r in selected if r["dataset"] == dataset}
        variants = [v for v in VARIANTS if any(variant == v for variant, _ in by)]
        seeds = sorted(s for s in {seed for _, seed in by} if all((v, s) in by for v in variants))
        if not seeds:
            continue
        run_lengths = {s: [len(by[(v, s)].get("epochs") or []) for v in variants] for s in seeds}
        common = {s: (min(lengths) or None) for s, lengths in run_lengths.items()}
        kept = {v: [by[(v, s)]["dev"]["perplexity"] for s in seeds] for v in variants}
        equal = {v: [_dev_after(by[(v, s)], common[s]) for s in seeds] for v in variants}
        rank_kept, rank_equal = _ranks(kept), _ranks(equal)
        at = "; ".join(str(common[s]) if common[s] else f"{by[(variants[0], s)]['train_steps']} steps" for s in seeds)
        for v in variants:
            lengths = "; ".join(f"{by[(v, s)].get('best_epoch')}/{len(by[(v, s)].get('epochs') or [])}"
                                if common[s] else "–" for s in seeds)
            row = [dataset, NAMES[v], str(len(seeds)), _fmt(kept[v]), lengths, _fmt(equal[v]), at,
                   str(rank_kept[v]), str(rank_equal[v])]
            rows.append(row)
            csv.append(dict(zip(["dataset", "model", "seeds", "dev_kept", "kept_of_run", "dev_equal", "equal_epoch",
                                 "rank_kept", "rank_equal"], [row[0], v, *row[2:]])))
    notes = [
        "Beyond the paper. Each model at its best grid point per seed (the runs of Tables 2-3). Dev at the kept epoch: "
        "the early-stopped run's best epoch, as Tables 2-3. Dev at equal epochs: the same run's dev perplexity after "
        "the last epoch that every model of the dataset ran on that seed (a run stops after `patience` epochs "
        "without a better dev value, so the models of one seed stop at different epochs). Mean ± sd over seeds; "
        "rank 1 is the lowest mean. Runs by steps train the same steps: both columns are their final value.",
        f"Ours: {label}. Only dev: a run records its dev perplexity after every epoch, its test perplexity only at the "
        "kept epoch.",
    ]
    return (Table("DCWE and its controls at equal training length (dev perplexity)", header, rows, notes,
                  label_columns=2), pl.DataFrame(csv))


def write_equal_epochs_table(metric_paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike,
                             label: str) -> list[Path]:
    """dcwe_equal_epochs (.md, .csv, .tex, .html) under out_dir."""
    table, csv = equal_epochs_table(load_runs(metric_paths), label)
    return write_table(table, csv, out_dir, "dcwe_equal_epochs")
