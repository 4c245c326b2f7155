"""The paper's dataset tables with its rows beside ours: Table 1 (statistics) and Table 5 (diversity).

A dataset whose config names a `paper_column` is followed by the paper's row for that dataset.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ..artefacts import read_json
from ..data.posts import read_posts
from . import paper_numbers
from .dataset_stats import CSV_COLUMNS, MARKDOWN_HEADER, dataset_statistics, table1
from .render import Table, write_table


def _check_columns(paper_columns: dict[str, str | None]) -> None:
    for name, column in paper_columns.items():
        if column is not None and column not in paper_numbers.PAPER_COLUMNS:
            raise ValueError(f"dataset {name}: paper_column {column!r} is not one of "
                             f"{list(paper_numbers.PAPER_COLUMNS)} or null")


def _paper_rows_note(table: int, paper_columns: dict[str, str | None]) -> str:
    if not any(paper_columns.values()):
        return "No dataset of this config reproduces one of the paper's, so no paper rows are shown."
    return (f"Rows '(paper)': the paper's Table {table} ({paper_numbers.CITATION}) for the dataset "
            "of the row above.")


def _table1_cells(row: dict) -> list[str]:
    def mean_median(mean, median):
        return "-" if mean == "-" and median == "-" else f"{mean} ({median})"

    return [row["dataset"], f"{int(row['data_points']):,}", f"{int(row['timelines']):,}",
            mean_median(row["timeline_len_mean"], row["timeline_len_median"]),
            mean_median(row["gap_mean"], row["gap_median"]),
            mean_median(row["minority_events_per_timeline_mean"], row["minority_events_per_timeline_median"])]


def write_table1(posts_paths: dict[str, str], minority: dict[str, list[str]],
                 paper_columns: dict[str, str | None], out_dir) -> Table:
    """table1.{md,tex,html,csv}: our datasets' statistics, each followed by the paper's row."""
    _check_columns(paper_columns)
    stats = {name: dataset_statistics(read_posts(path), minority[name]) for name, path in posts_paths.items()}
    _, ours = table1(stats)
    paper = paper_numbers.dataset_rows(1)
    rows, csv_rows = [], []
    for row in ours.iter_rows(named=True):
        rows.append(_table1_cells(row))
        csv_rows.append({"source": "ours", **{c: str(row[c]) for c in CSV_COLUMNS}})
        column = paper_columns.get(row["dataset"])
        if column:
            theirs = {**paper[column], "dataset": f"{column} (paper)"}
            rows.append(_table1_cells(theirs))
            csv_rows.append({"source": "paper", **{c: str(theirs[c]) for c in CSV_COLUMNS}})
    notes = [
        "Minority events: posts of the minority class(es): " + "; ".join(
            f"{name}: {', '.join(labels)}" for name, labels in minority.items() if name in posts_paths)
        + ". Times are between consecutive posts of a timeline; '-' where the data has no timestamps.",
        _paper_rows_note(1, paper_columns),
    ]
    table = Table("Table 1: dataset statistics", list(MARKDOWN_HEADER), rows, notes)
    write_table(table, pl.DataFrame(csv_rows), out_dir, "table1")
    return table


def write_table5(diversity_paths: dict[str, str], paper_columns: dict[str, str | None], out_dir) -> Table:
    """table5.{md,tex,html,csv} from each dataset's diversity.json (diversity.py)."""
    _check_columns(paper_columns)
    paper = paper_numbers.dataset_rows(5)
    header = ["Dataset", "BERTScore ↓", "Cosine sim. ↓", "Outlier ↑"]
    rows, csv_rows, settings = [], [], []
    for name, path in diversity_paths.items():
        result = read_json(path)
        missing = {"bertscore", "cosine", "outlier", "settings"} - set(result)
        if missing:
            raise ValueError(f"{path}: not a diversity file, missing {sorted(missing)}")
        outlier = result["outlier"]
        rows.append([name, f"{result['bertscore']:.3f}", f"{result['cosine']:.3f}",
                     f"{outlier['mean']:.3f} ± {outlier['std']:.3f}"])
        csv_rows.append({"source": "ours", "dataset": name, "bertscore": result["bertscore"],
                         "cosine": result["cosine"], "outlier": outlier["mean"], "outlier_std": outlier["std"]})
        s = result["settings"]
        pairs = "all" if s["all_pairs"] else f"{s['pairs']} sampled (seed {s['seed']})"
        settings.append(f"{name}: {pairs} of {s['posts']} posts"
                        + (f", {s['posts_without_text']} empty posts left out" if s["posts_without_text"] else ""))
        column = paper_columns.get(name)
        if column:
            theirs = paper[column]
            rows.append([f"{column} (paper)", f"{theirs['BERTScore']:.3f}", f"{theirs['CosineSim']:.3f}",
                         f"{theirs['Outlier']:.3f}"])
            csv_rows.append({"source": "paper", "dataset": column, "bertscore": theirs["BERTScore"],
                             "cosine": theirs["CosineSim"], "outlier": theirs["Outlier"], "outlier_std": None})
    first = read_json(next(iter(diversity_paths.values())))["settings"]
    notes = [
        f"BERTScore: F1 between pairs of posts of the dataset, token vectors of hidden layer "
        f"{first['layer']} of the backbone ({first['backbone']}; minilm = all-MiniLM-L6-v2, 6 layers), "
        f"at most {first['max_tokens']} word pieces per post, greedy cosine matching, no idf "
        "weighting, no baseline rescaling, mean over the pairs. Pairs: " + "; ".join(settings) + ".",
        "Cosine sim.: cosine of the SBERT (all-MiniLM-L6-v2) embeddings, mean over all pairs of "
        "distinct posts (exact). Outlier: mean Euclidean distance of each fold's test posts' SBERT "
        "embeddings to the mean of that fold's training posts, mean ± standard deviation over the "
        "folds (the folds do not depend on the training seed).",
        "Lower BERTScore and cosine and a higher outlier score mean a more diverse dataset. "
        + _paper_rows_note(5, paper_columns),
    ]
    table = Table("Table 5: dataset diversity", header, rows, notes)
    write_table(table, pl.DataFrame(csv_rows, schema={
        "source": pl.String, "dataset": pl.String, "bertscore": pl.Float64, "cosine": pl.Float64,
        "outlier": pl.Float64, "outlier_std": pl.Float64}), out_dir, "table5")
    return table
