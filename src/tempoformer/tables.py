"""Aggregate finished runs into the paper's Table 2 layout (Markdown and CSV).

Each cell is test F1 in %, mean ± standard deviation over every (fold, seed) run. "pooled"
is macro-F1 over the five folds' test predictions pooled per seed, then mean ± std over seeds.
Where a stream model ran with several windows, the window with the best mean dev macro-F1
is reported (chosen on dev, never on test), as the paper reports the best window.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl

from .metrics import f1_scores

MODEL_ORDER = {
    "random": ("post", "Random"),
    "bert": ("post", "BERT"),
    "roberta": ("post", "RoBERTa"),
    "ffn_history": ("stream", "FFN History"),
    "swnu": ("stream", "SWNU"),
    "seqsignet": ("stream", "Seq-Sig-Net"),
    "bilstm": ("stream", "BiLSTM"),
    "tempoformer": ("stream", "TempoFormer"),
    "tempoformer_no_temporal_rope": ("stream", "-Temporal RoPE"),
    "tempoformer_no_rope": ("stream", "-RoPE MHA"),
    "tempoformer_no_stream_embeddings": ("stream", "-Stream embed."),
    "tempoformer_no_gate_norm": ("stream", "-Gate&Norm"),
    "robert": ("stream", "RoBERT"),
    "rotempoformer": ("stream", "RoTempoFormer"),
}


def load_runs(metric_paths: list[str | Path]) -> pl.DataFrame:
    """One row per (run, class) with that class's test F1; class 'macro' is the macro-F1."""
    rows = []
    for path in metric_paths:
        m = json.loads(Path(path).read_text())
        for label, f1 in m["test"].items():
            rows.append({
                "dataset": m["dataset"], "model": m["model"], "window": m["window"],
                "fold": m["fold"], "seed": m["seed"], "label": label, "f1": 100 * f1,
                "dev_macro": 100 * m["dev_macro"], "path": str(path),
            })
    if not rows:
        raise ValueError("no metrics files to aggregate")
    return pl.DataFrame(rows)


def pooled_macro(runs: pl.DataFrame, labels: dict[str, list[str]]) -> pl.DataFrame:
    """Macro-F1 of the folds' test predictions pooled per (dataset, model, window, seed)."""
    out = []
    keys = runs.select("dataset", "model", "window", "seed", "path").unique()
    for (dataset, model, window, seed), group in keys.group_by(
        "dataset", "model", "window", "seed", maintain_order=True
    ):
        preds = pl.concat(
            [pl.read_parquet(Path(p).with_name("predictions.parquet"), columns=["gold", "pred"])
             for p in group["path"].sort()]
        )
        index = {label: i for i, label in enumerate(labels[dataset])}
        gold = preds["gold"].replace_strict(index).to_numpy()
        pred = preds["pred"].replace_strict(index).to_numpy()
        macro = f1_scores(gold, pred, labels[dataset])["macro"]
        out.append({"dataset": dataset, "model": model, "window": window, "seed": seed,
                    "pooled_macro": 100 * macro})
    return pl.DataFrame(out)


def summarise(runs: pl.DataFrame, labels: dict[str, list[str]]) -> pl.DataFrame:
    """Long table: dataset, model, window, label, mean, std, runs (+ pooled rows)."""
    stats = runs.group_by("dataset", "model", "window", "label").agg(
        pl.col("f1").mean().alias("mean"),
        pl.col("f1").std(ddof=1).fill_null(0.0).alias("std"),
        pl.len().alias("runs"),
        pl.col("dev_macro").mean().alias("dev_macro"),
    )
    pooled = pooled_macro(runs, labels).group_by("dataset", "model", "window").agg(
        pl.lit("macro (pooled)").alias("label"),
        pl.col("pooled_macro").mean().alias("mean"),
        pl.col("pooled_macro").std(ddof=1).fill_null(0.0).alias("std"),
        pl.len().alias("runs"),
    )
    dev = stats.filter(pl.col("label") == "macro").select("dataset", "model", "window", "dev_macro")
    pooled = pooled.join(dev, on=["dataset", "model", "window"])
    summary = pl.concat([stats, pooled.select(stats.columns)])
    # Best window per (dataset, model) by mean dev macro-F1.
    best = (dev.sort("dev_macro", "window", descending=[True, False])
            .group_by("dataset", "model", maintain_order=True).first()
            .select("dataset", "model", "window"))
    return summary.join(best, on=["dataset", "model", "window"]).sort("dataset", "model", "label")


def table2(summary: pl.DataFrame, labels: dict[str, list[str]]) -> tuple[str, pl.DataFrame]:
    datasets = sorted(labels)
    columns = [(d, label) for d in datasets for label in [*labels[d], "macro", "macro (pooled)"]]
    cells = {(r["dataset"], r["model"], r["label"]): f"{r['mean']:.1f} ± {r['std']:.1f}"
             for r in summary.iter_rows(named=True)}
    windows = {(r["dataset"], r["model"]): r["window"] for r in summary.iter_rows(named=True)}
    models = sorted(set(summary["model"]), key=lambda m: list(MODEL_ORDER).index(m)
                    if m in MODEL_ORDER else len(MODEL_ORDER))
    header = ["Level", "Model"] + [f"{d} {label}" for d, label in columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    csv_rows = []
    for model in models:
        level, name = MODEL_ORDER.get(model, ("stream", model))
        values = [cells.get((d, model, label), "not run") for d, label in columns]
        lines.append("| " + " | ".join([level, name, *values]) + " |")
        for (d, label), value in zip(columns, values):
            csv_rows.append({"level": level, "model": name, "dataset": d, "label": label,
                             "window": windows.get((d, model)), "f1": value})
    runs = summary.filter(pl.col("label") == "macro").select("dataset", "model", "window", "runs")
    notes = [
        "",
        "Test F1 (%), mean ± standard deviation over all (fold, seed) runs; `macro (pooled)` is",
        "macro-F1 over the five folds' pooled test predictions, mean ± std over seeds.",
        "Stream models: window with the best mean dev macro-F1. Runs per cell: "
        + ", ".join(f"{r['dataset']}/{r['model']} w{r['window']}: {r['runs']}"
                    for r in runs.sort("dataset", "model").iter_rows(named=True)) + ".",
    ]
    return "\n".join(lines + notes) + "\n", pl.DataFrame(csv_rows)


def aggregate(metric_paths: list[str | Path], labels: dict[str, list[str]], out_dir: str | Path):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summarise(load_runs(metric_paths), labels)
    markdown, csv = table2(summary, labels)
    write_text_atomic(out_dir / "table2.md", "# Table 2: change detection, test F1 (%)\n\n" + markdown)
    write_text_atomic(out_dir / "table2.csv", csv.write_csv())
    return summary


def write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
