"""The `aggregate` subcommand's work: finished runs → Tables 2, 3, 4, 6 and 11 (tables.py builds
their cells and tests), the coverage table (coverage.py) and Figure 3 (figures.py), written once.

Its own module so that tables.py and coverage.py import in one direction only (coverage reads the
tables' cells and tests; this module reads both): no import cycle among the reporting modules.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from .coverage import coverage_table
from .render import write_table
from .significance import Bootstrap
from .tables import (POOLED, Dataset, best_baseline_test, load_runs, results_table, row_label, summarise,
                     variant_tests)


def _runs_tested(test: dict) -> str:
    return (f"folds {', '.join(map(str, test['folds_tested']))}; "
            f"seeds {', '.join(map(str, test['seeds_tested']))}")


def _significance_note(tests: list[dict], bootstrap: Bootstrap) -> str:
    if not tests:
        return "Significance: no dataset has both TempoFormer and a baseline run, so no test."
    results = "; ".join(
        f"{t['dataset']}: TempoFormer w{t['window']} vs {row_label(t['baseline'])[1]} w{t['baseline_window']} "
        f"({_runs_tested(t)}), difference {100 * t['difference']:+.1f} points, p = {t['p_value']:.3f}" for t in tests)
    return (f"Significance (beyond the paper): paired bootstrap of TempoFormer against the baseline with "
            f"the best mean dev macro-F1, on the folds' pooled test predictions; {bootstrap.describe()}, "
            "the same resample for every seed, "
            "comparing macro-F1 averaged over the seeds both ran; p = share of resamples in which "
            f"TempoFormer is not better (ties count half). {results}.")


def _variant_note(tests: list[dict], bootstrap: Bootstrap) -> str:
    if not tests:
        return ("Significance: no TempoFormer variant of this table has runs that the full "
                "TempoFormer also has at its window, so no test.")
    results = "; ".join(
        f"{t['dataset']}: {row_label(t['model'])[1]} w{t['window']} ({_runs_tested(t)}), TempoFormer {100 * t['difference']:+.1f} points, p = {t['p_value']:.3f}" for t in tests)
    return (f"Significance (beyond the paper): paired bootstrap of the full TempoFormer against each "
            f"variant at the variant's window, on the folds' pooled test predictions of the (fold, seed) "
            f"runs both have (the seeds x folds block with the most runs, since every seed must cover "
            f"the same folds); {bootstrap.describe()}; "
            "difference = TempoFormer minus the variant in macro-F1 averaged over the seeds; p = share "
            "of resamples in which TempoFormer is not better (ties count half): a small p says the "
            f"drop is real. {results}.")


def _with_tests(csv: pl.DataFrame, tests: list[dict]) -> pl.DataFrame:
    """The CSV with each test on its row's pooled line. tests: dataset, model (the row),
    compared_with, difference (points, the row's model minus compared_with), p_value."""
    tests_frame = pl.DataFrame(
        [{**t, "label": POOLED} for t in tests],
        schema={"dataset": pl.String, "model": pl.String, "compared_with": pl.String,
                "difference": pl.Float64, "p_value": pl.Float64, "label": pl.String})
    return csv.join(tests_frame, on=["dataset", "model", "label"], how="left", maintain_order="left")


def aggregate(metric_paths: list[str | Path], datasets: list[Dataset] | dict[str, list[str]],
              out_dir: str | Path, figures_dir: str | Path | None = None,
              bootstrap: Bootstrap = Bootstrap(), backbones: dict[str, str] | None = None) -> pl.DataFrame:
    """Tables 2, 3, 4, 6, 11 and the coverage table (coverage.py) as md, tex, html and csv under
    out_dir, and Figure 3 under figures_dir."""
    if isinstance(datasets, dict):  # {name: labels}: no paper columns
        datasets = [Dataset(name, labels) for name, labels in datasets.items()]
    labels = {d.name: d.labels for d in datasets}
    runs = load_runs(metric_paths)
    summary = summarise(runs, labels)
    variant_results = {}  # (dataset, model, window) → bootstrap, reused by the coverage table
    for number in (2, 3, 4, 6, 11):
        table, csv = results_table(number, summary, datasets, backbones)
        if number == 2:
            tests = best_baseline_test(runs, summary, datasets, bootstrap)
            table.notes.append(_significance_note(tests, bootstrap))
            csv = _with_tests(csv, [{"dataset": t["dataset"], "model": "tempoformer", "compared_with": t["baseline"],
                                     "difference": 100 * t["difference"], "p_value": t["p_value"]} for t in tests])
        elif number in (3, 4, 6):
            tests = variant_tests(runs, summary, datasets, number, bootstrap)
            variant_results.update({(t["dataset"], t["model"], t["window"]): t for t in tests})
            table.notes.append(_variant_note(tests, bootstrap))
            # the row is the variant: its difference to TempoFormer is minus the note's drop
            csv = _with_tests(csv, [{"dataset": t["dataset"], "model": t["model"], "compared_with": "tempoformer",
                                     "difference": -100 * t["difference"], "p_value": t["p_value"]} for t in tests])
        write_table(table, csv, out_dir, f"table{number}")
    write_table(*coverage_table(runs, summary, datasets, bootstrap, variant_results), out_dir, "coverage")
    if figures_dir is not None:
        from .figures import figure3

        figure3(summary, datasets, Path(figures_dir) / "figure3.png")
    return summary
