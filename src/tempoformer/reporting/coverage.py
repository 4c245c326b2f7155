"""Where each TempoFormer-family cell stands, beyond the paper's tables: one row per dataset,
model of the family (TempoFormer and the variants of Tables 3, 4 and 6) and window it ran at,
with the (fold, seed) runs behind it, the runs of the paper's protocol (5 folds x seeds 0, 1,
12, 123) still missing, its test and pooled macro-F1 as the tables print them, the paper's
number, and the paired bootstrap of the full TempoFormer at the same window against it.

It comes from the same runs as the tables, so a progress summary in a README is a workflow
output rather than numbers copied by hand.
"""

from __future__ import annotations

import polars as pl

from . import paper_numbers
from .render import Table
from .significance import Bootstrap
from .tables import PAPER_ROW, POOLED, TABLE_MODELS, VARIANTS, Dataset, mean_std_cell, paired_test, row_label

PAPER_SEEDS = (0, 1, 12, 123)
PAPER_FOLDS = (0, 1, 2, 3, 4)
FAMILY = ["tempoformer", *VARIANTS]
# The paper's table that prints each member: TempoFormer per window in Table 11, each variant
# in the first of Tables 3, 4, 6 that has its row.
PAPER_TABLE = {"tempoformer": 11, **{m: next(n for n in (3, 4, 6) if m in TABLE_MODELS[n]) for m in VARIANTS}}
TITLE = "Coverage: the TempoFormer-family cells, the runs behind them and the runs left"
SCHEMA = {"dataset": pl.String, "model": pl.String, "cell": pl.String, "window": pl.Int64,
          "chosen_on_dev": pl.Boolean, "runs": pl.Int64, "seeds": pl.String, "missing_runs": pl.Int64,
          "missing": pl.String, "macro_mean": pl.Float64, "macro_std": pl.Float64,
          "pooled_mean": pl.Float64, "pooled_std": pl.Float64, "paper": pl.Float64,
          "difference": pl.Float64, "p_value": pl.Float64, "seeds_tested": pl.String,
          "folds_tested": pl.String}


def spans(numbers) -> str:
    """[0, 1, 2, 4] → "0-2, 4": consecutive numbers as a span."""
    numbers, parts = sorted(numbers), []
    for n in numbers:
        if parts and n == parts[-1][1] + 1:
            parts[-1][1] = n
        else:
            parts.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in parts)


def seeds_text(done: set[tuple[int, int]]) -> str:
    """The seeds of the (fold, seed) runs; a seed short of the paper's folds lists its folds."""
    folds_of = {}
    for fold, seed in done:
        folds_of.setdefault(seed, set()).add(fold)
    return ", ".join(str(s) if set(PAPER_FOLDS) <= folds_of[s] else f"{s} ({_folds(folds_of[s])})"
                     for s in sorted(folds_of))


def _folds(folds) -> str:
    return f"fold{'s' * (len(folds) > 1)} {spans(folds)}"


def missing_runs(done: set[tuple[int, int]]) -> tuple[int, str]:
    """How many (fold, seed) runs of the paper's protocol are not in `done`, and which: seeds
    that miss the same folds share a clause ("seeds 1, 12: all folds; seed 123: folds 2-4")."""
    by_folds = {}
    for seed in PAPER_SEEDS:
        folds = tuple(f for f in PAPER_FOLDS if (f, seed) not in done)
        if folds:
            by_folds.setdefault(folds, []).append(seed)
    clauses = [f"seed{'s' * (len(seeds) > 1)} {', '.join(map(str, seeds))}: "
               + ("all folds" if folds == PAPER_FOLDS else _folds(folds))
               for folds, seeds in by_folds.items()]
    count = sum(len(folds) * len(seeds) for folds, seeds in by_folds.items())
    return count, "; ".join(clauses) or "none"


def paper_macro(model: str, window: int, dataset: Dataset) -> float | None:
    """The paper's macro-F1 for the cell: Table 11's window row for TempoFormer, else the
    variant's row of its table (the paper prints each variant once, at its best window)."""
    if dataset.paper_column is None:
        return None
    number = PAPER_TABLE[model]
    row = str(window) if number == 11 else PAPER_ROW.get(number, {}).get(model, row_label(model)[1])
    return paper_numbers.f1_numbers(number).get((row, dataset.paper_column, "macro"))


def coverage_table(runs: pl.DataFrame, summary: pl.DataFrame, datasets: list[Dataset],
                   bootstrap: Bootstrap = Bootstrap(), known_tests: dict | None = None) -> tuple[Table, pl.DataFrame]:
    """The coverage table (Markdown/LaTeX/HTML) and its CSV, one row per family cell run.
    known_tests: {(dataset, model, window): paired_test result} already made for Tables 3, 4
    and 6 (the same bootstrap, so not run twice)."""
    known_tests = known_tests or {}
    cells = {(r["dataset"], r["model"], r["window"], r["label"]): r for r in summary.iter_rows(named=True)}
    best = {(r["dataset"], r["model"]): r["window"] for r in summary.filter("best").iter_rows(named=True)}
    md_rows, csv_rows, not_run = [], [], []
    for d in datasets:
        ran = runs.filter((pl.col("dataset") == d.name) & (pl.col("label") == "macro"))
        for model in FAMILY:
            windows = sorted(set(ran.filter(pl.col("model") == model)["window"]))
            if not windows:
                not_run.append(f"{d.name} {row_label(model)[1]}")
            for window in windows:
                done = set(ran.filter((pl.col("model") == model) & (pl.col("window") == window))
                           .select("fold", "seed").iter_rows())
                count, missing = missing_runs(done)
                macro, pooled = cells[(d.name, model, window, "macro")], cells[(d.name, model, window, POOLED)]
                paper = paper_macro(model, window, d)
                test = None
                if model != "tempoformer":
                    test = known_tests.get((d.name, model, window)) or paired_test(
                        runs, d, ("tempoformer", window), (model, window), bootstrap)
                row = {
                    "dataset": d.name, "model": model, "cell": row_label(model)[1], "window": window,
                    "chosen_on_dev": best[(d.name, model)] == window, "runs": macro["runs"],
                    "seeds": seeds_text(done), "missing_runs": count, "missing": missing,
                    "macro_mean": macro["mean"], "macro_std": macro["std"], "pooled_mean": pooled["mean"],
                    "pooled_std": pooled["std"], "paper": paper, "difference": None, "p_value": None,
                    "seeds_tested": None, "folds_tested": None,
                }
                tested = "–"
                if test is not None:
                    row.update(difference=100 * test["difference"], p_value=test["p_value"],
                               seeds_tested=" ".join(map(str, test["seeds_tested"])),
                               folds_tested=" ".join(map(str, test["folds_tested"])))
                    tested = (f"{row['difference']:+.1f} (p = {test['p_value']:.3f}; seeds "
                              f"{', '.join(map(str, test['seeds_tested']))} x folds {spans(test['folds_tested'])})")
                csv_rows.append(row)
                md_rows.append([d.name, row["cell"], "yes" if row["chosen_on_dev"] else "no", row["seeds"],
                                f"{count} ({missing})" if count else "none", str(window), str(macro["runs"]),
                                mean_std_cell(macro), mean_std_cell(pooled), "–" if paper is None else f"{paper:.1f}",
                                tested])
    header = ["Dataset", "Cell", "Chosen on dev", "Seeds", "Missing of the paper's 20", "Window", "Runs",
              "Test macro-F1", "Pooled macro-F1", "Paper", "TempoFormer minus it (p; runs tested)"]
    notes = [
        "One row per TempoFormer-family model and window that ran. Chosen on dev: the window with "
        "the model's best mean dev macro-F1, the one Tables 2, 3, 4 and 6 print (Table 11 prints "
        "every TempoFormer window). Seeds: a seed short of folds 0-4 lists the folds it has. Missing: "
        f"the (fold, seed) runs of the paper's protocol (folds 0-4 x seeds {', '.join(map(str, PAPER_SEEDS))}) "
        "with no finished run here.",
        "Test macro-F1: mean ± standard deviation over the (fold, seed) runs; pooled: macro-F1 of "
        "the folds' pooled test predictions per seed, mean ± standard deviation over the seeds (a "
        "partial seed counts as a seed). Paper: Table 11's number for TempoFormer at that window, "
        "the variant's Table 3, 4 or 6 number otherwise ('–': none, or no paper column).",
        "Last column: paired bootstrap of the full TempoFormer at the same window against the "
        f"variant, as in Tables 3, 4 and 6, on the seeds x folds block of shared runs with the most "
        f"runs; {bootstrap.describe()}; difference in macro-F1 points, TempoFormer "
        "minus the variant; p = share of resamples in which TempoFormer is not better.",
        f"Not run: {', '.join(not_run)}." if not_run else "Every family member ran on every dataset.",
    ]
    return (Table(TITLE, header, md_rows, notes, label_columns=5),
            pl.DataFrame(csv_rows, schema=SCHEMA))
