"""Issue 68's cause-by-cause record: the committed TempoFormer setting (the config's
`causes.reference`) and each factor entry that changes one thing from it (`causes.factors`,
model entry -> what it changes), per dataset, against the best stream/post baseline.

Each row is one model entry at its window with the best mean dev macro-F1 (chosen on dev, as
Table 2 does): its (fold, seed) runs, dev macro-F1 and test macro-F1 (mean, ± sd) over them, the
test difference to the reference on the (fold, seed) runs both have, and the baseline of
`causes.baselines` with the best mean test macro-F1 on the runs it shares with the row (the
strongest competitor there, so the comparison is a hard one), with the paired bootstrap of the
row against it (tables.paired_test: the folds' pooled test predictions, one row per seed, the
config's `bootstrap` settings). It also says what the runs ran on (metrics.json `device`, with
the GPU's name where the run recorded it) and their backbone (metrics.json `setup.backbone.name`
where recorded, else the config entry's `params.backbone`, default minilm).

A factor can also be a choice made on dev (`causes.chosen_on_dev`: name -> member entries, e.g.
one entry per learning rate, each a job short enough for one session): per (dataset, window,
fold, seed) that every member ran, the member run with the best dev macro-F1 (ties: the member
listed first), as a training job's grid would choose; pairs not every member ran are left out.

The `causes` subcommand writes it as causes.md/.csv/.tex/.html; the workflow's aggregate rule
runs it after `aggregate` for a config with a `causes:` section. Its own subcommand so that the
`aggregate` subcommand's code, and so every committed table, is untouched by it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..artefacts import read_json
from .render import Table, write_table
from .significance import Bootstrap
from .tables import BACKBONE_NAMES, Dataset, _shared_runs, load_runs, paired_test, row_label

TITLE = "Cause by cause: one factor changed at a time from the committed TempoFormer setting, macro-F1 (%)"
NOT_RUN = "not run"
NONE = "–"
HEADER = ["Dataset", "Entry", "Changes", "Backbone", "Device", "Runs", "Dev macro-F1", "Test macro-F1",
          "Δ test vs reference", "Best baseline", "Δ test vs best baseline", "p (not better)"]
CSV_SCHEMA = {
    "dataset": pl.String, "model": pl.String, "role": pl.String, "changes": pl.String, "window": pl.Int64,
    "backbone": pl.String, "device": pl.String, "runs": pl.Int64, "seeds": pl.String, "folds": pl.String,
    "dev_macro": pl.Float64, "test_macro": pl.Float64, "test_macro_std": pl.Float64,
    "reference": pl.String, "reference_window": pl.Int64, "reference_runs": pl.Int64,
    "difference_reference": pl.Float64,
    "baseline": pl.String, "baseline_window": pl.Int64, "baseline_runs": pl.Int64,
    "baseline_test_macro": pl.Float64, "difference_baseline": pl.Float64,
    "pooled_difference_baseline": pl.Float64, "p_value": pl.Float64,
    "seeds_tested": pl.String, "folds_tested": pl.String,
}


def _numbers(values) -> str:
    return ", ".join(str(v) for v in sorted(set(values)))


def _run_records(metric_paths) -> dict[str, dict]:
    """path -> (device, backbone name or None) from each run's metrics.json."""
    records = {}
    for path in metric_paths:
        m = read_json(path)
        setup = m.get("setup") or {}
        gpu = (setup.get("numerics") or {}).get("gpu")
        device = str(m.get("device", "unknown"))
        records[str(path)] = {"device": f"{device} ({gpu})" if gpu else device,
                              "backbone": (setup.get("backbone") or {}).get("name")}
    return records


def _best_windows(macro: pl.DataFrame) -> dict[tuple[str, str], int]:
    """(dataset, model) -> the window with the best mean dev macro-F1 (ties: the smaller), as
    tables.summarise chooses it."""
    dev = macro.group_by("dataset", "model", "window").agg(pl.col("dev_macro").mean())
    best = (dev.sort("dev_macro", "window", descending=[True, False])
            .group_by("dataset", "model", maintain_order=True).first())
    return {(r["dataset"], r["model"]): r["window"] for r in best.iter_rows(named=True)}


def _by_pair(macro: pl.DataFrame, dataset: str, model: str, window: int) -> dict[tuple[int, int], float]:
    """(fold, seed) -> test macro-F1 (%) of one (dataset, model, window)."""
    chosen = macro.filter((pl.col("dataset") == dataset) & (pl.col("model") == model) & (pl.col("window") == window))
    return {(r["fold"], r["seed"]): r["f1"] for r in chosen.iter_rows(named=True)}


def _signed(value: float | None, shared: int, runs: int) -> str:
    if value is None:
        return NONE
    return f"{value:+.1f}" + ("" if shared == runs else f" (n={shared})")


def chosen_on_dev(runs: pl.DataFrame, choices: dict[str, list[str]]) -> pl.DataFrame:
    """runs plus, for each choice name -> member entries, the runs it picks: per (dataset,
    window, fold, seed) that every member ran, the member run with the best dev macro-F1 (ties:
    the member listed first), its rows relabelled as the choice."""
    picked = [runs]
    for name, members in choices.items():
        order = {m: i for i, m in enumerate(members)}
        ran = runs.filter(pl.col("model").is_in(members) & (pl.col("label") == "macro"))
        ran = ran.with_columns(pl.col("model").replace_strict(order, return_dtype=pl.Int64).alias("member"))
        complete = (ran.sort("dev_macro", "member", descending=[True, False])
                    .group_by("dataset", "window", "fold", "seed", maintain_order=True)
                    .agg(pl.col("path").first(), pl.col("member").n_unique().alias("members"))
                    .filter(pl.col("members") == len(members)))
        paths = complete["path"].to_list()
        picked.append(runs.filter(pl.col("path").is_in(paths)).with_columns(pl.lit(name).alias("model")))
    return pl.concat(picked).sort("dataset", "model", "window", "seed", "fold", "label")


def causes_table(metric_paths: list[str | Path], datasets: list[Dataset], causes: dict,
                 backbones: dict[str, str] | None = None,
                 bootstrap: Bootstrap = Bootstrap()) -> tuple[Table, pl.DataFrame]:
    """The cause-by-cause table and its CSV frame (one row per table row). causes: {"reference":
    model, "baselines": [models], "factors": {model: what it changes}}; backbones: model entry ->
    its config backbone (default minilm); metric_paths: the runs (others' are ignored)."""
    reference, baselines, factors = causes["reference"], list(causes["baselines"]), dict(causes["factors"])
    choices = {name: list(members) for name, members in (causes.get("chosen_on_dev") or {}).items()}
    # a choice made on dev is no config entry: its backbone is its first member's
    backbones = backbones or {}
    backbones = {**{name: backbones.get(members[0], "minilm") for name, members in choices.items()}, **backbones}
    wanted = {reference, *baselines, *factors, *(m for members in choices.values() for m in members)}
    runs = load_runs(metric_paths) if metric_paths else None
    if runs is not None:
        runs = chosen_on_dev(runs.filter(pl.col("model").is_in(sorted(wanted))), choices)
    if runs is None or runs.is_empty():
        runs = pl.DataFrame(schema={"dataset": pl.String, "model": pl.String, "window": pl.Int64, "fold": pl.Int64,
                                    "seed": pl.Int64, "label": pl.String, "f1": pl.Float64,
                                    "dev_macro": pl.Float64, "path": pl.String})
    records = _run_records(runs["path"].unique().sort().to_list())
    macro = runs.filter(pl.col("label") == "macro")
    best_window = _best_windows(macro)

    md_rows, csv_rows, compared = [], [], []
    for d in datasets:
        # the reference at its best dev window (Table 2's), and at each other window a factor
        # runs and the reference ran too: the window a factor is compared at
        ran = set(macro.filter(pl.col("dataset") == d.name).select("model", "window").unique().iter_rows())
        ref_best = best_window.get((d.name, reference))
        factor_windows = sorted({best_window[(d.name, m)] for m in factors if (d.name, m) in best_window}
                                - {ref_best})
        entries = [(reference, "reference", "the committed setting (reference), at its best dev window", ref_best)]
        entries += [(reference, "reference", f"the committed setting (reference) at w{w}, the factors' window", w)
                    for w in factor_windows if (reference, w) in ran]
        entries += [(model, "factor", text, best_window.get((d.name, model))) for model, text in factors.items()]
        for model, role, changes, window in entries:
            mine = {} if window is None else _by_pair(macro, d.name, model, window)
            row = {"dataset": d.name, "model": model, "role": role, "changes": changes, "window": window,
                   "runs": len(mine)}
            if not mine:
                backbone = backbones.get(model, "minilm")
                row.update(backbone=BACKBONE_NAMES.get(backbone, backbone))
                md_rows.append([d.name, model, changes, row["backbone"], NONE, "0", NOT_RUN, NOT_RUN,
                                NONE, NONE, NONE, NONE])
                csv_rows.append(row)
                continue
            paths = macro.filter((pl.col("dataset") == d.name) & (pl.col("model") == model)
                                 & (pl.col("window") == window))["path"].to_list()
            recorded = {records[p]["backbone"] for p in paths if records[p]["backbone"]}
            names = sorted(recorded) or [backbones.get(model, "minilm")]
            devices: dict[str, int] = {}
            for p in paths:
                devices[records[p]["device"]] = devices.get(records[p]["device"], 0) + 1
            values = list(mine.values())
            test = pl.Series(values)
            row.update(
                backbone=", ".join(BACKBONE_NAMES.get(n, n) for n in names),
                device=", ".join(dev if len(devices) == 1 else f"{dev} ({n})" for dev, n in sorted(devices.items())),
                seeds=_numbers(s for _, s in mine), folds=_numbers(f for f, _ in mine),
                dev_macro=macro.filter(pl.col("path").is_in(paths))["dev_macro"].mean(),
                test_macro=test.mean(), test_macro_std=test.std(ddof=1) if len(values) > 1 else 0.0)
            test_cell = f"{row['test_macro']:.1f}" if len(values) == 1 else \
                f"{row['test_macro']:.1f} ± {row['test_macro_std']:.1f}"

            # the reference, at the row's window where it ran it (one factor changed, not the window)
            reference_cell = NONE
            if role == "factor":
                theirs = _by_pair(macro, d.name, reference, window)
                ref_window = window if theirs else best_window.get((d.name, reference))
                if not theirs and ref_window is not None:
                    theirs = _by_pair(macro, d.name, reference, ref_window)
                shared = sorted(set(mine) & set(theirs))
                row.update(reference=reference, reference_window=ref_window, reference_runs=len(shared))
                if shared:
                    row["difference_reference"] = sum(mine[k] - theirs[k] for k in shared) / len(shared)
                reference_cell = _signed(row.get("difference_reference"), len(shared), len(mine)) if theirs \
                    else f"{reference} {NOT_RUN}"

            # the best baseline on the runs it shares with the row: the most shared runs, then
            # the best mean test macro-F1 on them (ties: the order of causes.baselines)
            candidates = []
            for order, baseline in enumerate(baselines):
                b_window = best_window.get((d.name, baseline))
                if b_window is None:
                    continue
                seeds, folds = _shared_runs(runs, d.name, (model, window), (baseline, b_window))
                if not seeds:
                    continue
                theirs = _by_pair(macro, d.name, baseline, b_window)
                block = [(f, s) for s in seeds for f in folds]
                mean = sum(theirs[k] for k in block) / len(block)
                candidates.append((-len(block), -mean, order, baseline, b_window, block, mean, seeds, folds))
            baseline_cells = [NONE, NONE, NONE]
            if candidates:
                _, _, _, baseline, b_window, block, mean, seeds, folds = min(candidates)
                test_result = paired_test(runs, d, (model, window), (baseline, b_window), bootstrap)
                difference = sum(mine[k] for k in block) / len(block) - mean
                row.update(baseline=baseline, baseline_window=b_window, baseline_runs=len(block),
                           baseline_test_macro=mean, difference_baseline=difference,
                           pooled_difference_baseline=100 * test_result["difference"],
                           p_value=test_result["p_value"], seeds_tested=_numbers(seeds), folds_tested=_numbers(folds))
                baseline_cells = [f"{row_label(baseline)[1]} w{b_window} ({mean:.1f})",
                                  _signed(difference, len(block), len(mine)), f"{test_result['p_value']:.3f}"]
                compared.append(f"{d.name}/{model} w{window} vs {baseline} w{b_window}: seeds {_numbers(seeds)}, "
                                f"folds {_numbers(folds)}")
            md_rows.append([d.name, f"{model} w{window}", changes, row["backbone"], row["device"], str(len(mine)),
                            f"{row['dev_macro']:.1f}", test_cell, reference_cell, *baseline_cells])
            csv_rows.append(row)

    notes = [_note(reference, baselines, bootstrap) + _choices_note(choices), _compared_note(compared)]
    table = Table(TITLE, HEADER, md_rows, notes, label_columns=5)
    return table, pl.DataFrame(csv_rows, schema=CSV_SCHEMA)


def _note(reference: str, baselines: list[str], bootstrap: Bootstrap) -> str:
    return (
        f"Rows: per dataset, the reference ({reference}, the committed setting) and each factor entry of the "
        "config's causes section, which changes one thing from it (column 'Changes'), each at its window with "
        "the best mean dev macro-F1 (chosen on dev, never on test, as Table 2 does); the reference again at a "
        "factor's window where that is another. 'Runs': the row's (fold, seed) runs; "
        "dev macro-F1: mean over them; test macro-F1: mean ± standard deviation over them. "
        f"'Δ test vs reference': the row minus {reference} (at the row's window where it ran it, else at its own "
        "best window) in test macro-F1, mean over the (fold, seed) runs both have ('(n=k)': fewer than the "
        f"row's runs). 'Best baseline': of {', '.join(baselines)}, each at its best dev window, the one with the "
        "best mean test macro-F1 (in brackets) on the runs it shares with the row (the largest block of "
        "seeds x folds both ran, as the test needs); 'Δ test vs best baseline': the row minus it on those runs. "
        f"'p (not better)': paired bootstrap of the row against that baseline on the folds' pooled test "
        f"predictions, one row per seed; {bootstrap.describe()}, the same resample for every seed, comparing "
        "macro-F1 averaged over the seeds; p = share of resamples in which the row is not better (ties count "
        "half). 'Device': what the runs ran on (metrics.json, with the GPU's name where recorded; a count "
        "per device where they differ); 'Backbone': the one the runs recorded (metrics.json setup), else the "
        f"config entry's. '{NOT_RUN}': the config's entry has no finished run on that dataset."
    )


def _choices_note(choices: dict[str, list[str]]) -> str:
    return "".join(
        f" '{name}': per (fold, seed) that each of {', '.join(members)} ran, the one of them with the best dev "
        "macro-F1 (ties: the first listed), as a training job's grid chooses; pairs not all of them ran are left out."
        for name, members in choices.items())


def _compared_note(compared: list[str]) -> str:
    if not compared:
        return "Compared runs: none (no row shares a (fold, seed) run with a baseline)."
    return f"Compared runs (the bootstrap's): {'; '.join(compared)}."


def write_causes(metric_paths: list[str | Path], datasets: list[Dataset], causes: dict, out_dir: str | Path,
                 backbones: dict[str, str] | None = None, bootstrap: Bootstrap = Bootstrap()) -> pl.DataFrame:
    """causes.md, .csv, .tex and .html under out_dir; returns the CSV frame."""
    table, csv = causes_table(metric_paths, datasets, causes, backbones, bootstrap)
    write_table(table, csv, out_dir, "causes")
    return csv
