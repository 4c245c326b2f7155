"""Tables 2, 3 and 4 of Rosin & Radinsky 2022 (Markdown, CSV, LaTeX and HTML for the report), the
paper's numbers beside ours.

Our numbers come from the metrics.json of each (dataset, method, seed) run; over several seeds a
cell is mean ± sd. Each of our datasets may name the paper's column it reproduces (`Eng`, `Lat`,
`Ger`): its cells then sit next to the paper's. Targets that could not be scored are shown in the
cell ("(2 unscored)"). The paper's figures are data: paper_numbers.csv.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import polars as pl

from ..artefacts import read_json
from ..reporting.render import Table

PAPER_CSV = Path(__file__).with_name("paper_numbers.csv")
LANGUAGE_NAMES = {"Eng": "SemEval-Eng", "Lat": "SemEval-Lat", "Ger": "SemEval-Ger"}

# Our methods with no row of their own in the paper, shown below the paper's rows.
OURS_ONLY = {
    2: [("Plain averaging, pretrained (no post-pretraining)", "plain")],
    3: [],
}
METHOD_NAMES = {
    "plain": "Plain averaging (pretrained)", "plain_mlm": "Plain averaging (post-pretrained)",
    "temporal_attention": "Temp. Att.", "prepend": "Rosin et al. (2022) time-token prepend",
    "prepend_attention": "Temp. Att. + prepend", "scaled_linear": "Scaled Linear Attention",
    "scaled_exp": "Scaled Exp. Attention", "scaled_doc": "Scaled by Doc Attention",
}


def paper_numbers() -> pl.DataFrame:
    return pl.read_csv(PAPER_CSV, comment_prefix="#", schema_overrides={"params": pl.String, "ours": pl.String})


def load_metrics(paths: Sequence[str | os.PathLike]) -> pl.DataFrame:
    rows = []
    for path in paths:
        m = read_json(path)
        rows.append({k: m.get(k) for k in ("dataset", "method", "seed", "pearson", "spearman", "n_scored",
                                          "n_unscored", "n_targets", "params", "train_seconds",
                                          "score_seconds")})
    schema = {"dataset": pl.String, "method": pl.String, "seed": pl.Int64, "pearson": pl.Float64,
              "spearman": pl.Float64, "n_scored": pl.Int64, "n_unscored": pl.Int64, "n_targets": pl.Int64,
              "params": pl.Int64, "train_seconds": pl.Float64, "score_seconds": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def summarise(metrics: pl.DataFrame) -> dict[tuple[str, str], dict]:
    """(dataset, method) -> mean/sd of r and rho over seeds, unscored count, params."""
    out = {}
    for (dataset, method), group in metrics.group_by(["dataset", "method"], maintain_order=True):
        entry = {"n_seeds": group.height, "n_unscored": int(group["n_unscored"].max() or 0),
                 "n_scored": int(group["n_scored"].min() or 0), "params": group["params"][0]}
        for key in ("pearson", "spearman"):
            values = [v for v in group[key].to_list() if v is not None]
            entry[key] = float(np.mean(values)) if values else None
            entry[f"{key}_sd"] = float(np.std(values, ddof=1)) if len(values) > 1 else None
        out[(dataset, method)] = entry
    return out


def _cell(entry: dict | None, key: str) -> str:
    if entry is None:
        return "not run"
    if entry[key] is None:
        return "n/a"
    text = f"{entry[key]:.3f}"
    if entry.get(f"{key}_sd") is not None:
        text += f" ± {entry[f'{key}_sd']:.3f}"
    if entry.get("n_unscored"):
        text += f" ({entry['n_unscored']} unscored)"
    return text


def _paper(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _method_rows(table: int, paper: pl.DataFrame) -> list[tuple[str, str | None]]:
    """(row label, our method or None) in the paper's order, then ours-only rows."""
    rows, seen = [], set()
    for row in paper.filter(pl.col("table") == table).iter_rows(named=True):
        if row["method"] not in seen:
            seen.add(row["method"])
            rows.append((row["method"], row["ours"]))
    return rows + OURS_ONLY.get(table, [])


def comparison_table(table: int, summary: dict, datasets: Mapping[str, str | None],
                     paper: pl.DataFrame) -> tuple[str, list[dict]]:
    """Tables 2 and 3: one row per method; per dataset our r, ρ beside the paper's column."""
    languages = [lang for lang in ("Eng", "Lat", "Ger")
                 if not paper.filter((pl.col("table") == table) & (pl.col("language") == lang)).is_empty()]
    mapped = {lang: [name for name, l in datasets.items() if l == lang] for lang in languages}
    unmapped = [name for name, lang in datasets.items() if not lang]
    header = ["Method"]
    for lang in languages:  # the paper's column order; our datasets beside the column they reproduce
        header += [f"{LANGUAGE_NAMES[lang]} r (paper)", *(f"{name} r (ours)" for name in mapped[lang]),
                   f"{LANGUAGE_NAMES[lang]} ρ (paper)", *(f"{name} ρ (ours)" for name in mapped[lang])]
    for name in unmapped:
        header += [f"{name} r (ours)", f"{name} ρ (ours)"]
    md_rows, csv_rows = [], []
    for label, method in _method_rows(table, paper):
        cells = [label if method is None else f"{label} [{method}]"]
        numbers = {row["language"]: row for row in paper.filter(
            (pl.col("table") == table) & (pl.col("method") == label)).iter_rows(named=True)}
        for lang, row in numbers.items():
            csv_rows.append({"table": table, "method": label, "ours": method, "source": "paper",
                             "dataset": LANGUAGE_NAMES[lang], "params": row["params"], "r": row["r"],
                             "rho": row["rho"], "r_sd": None, "rho_sd": None, "n_seeds": None,
                             "n_scored": None, "n_unscored": None})
        ours = {}
        for name in datasets:
            entry = summary.get((name, method)) if method else None
            ours[name] = (_cell(entry, "pearson"), _cell(entry, "spearman")) if method else ("–", "–")
            if entry is not None:
                csv_rows.append({"table": table, "method": label, "ours": method, "source": "ours",
                                 "dataset": name, "params": None if entry["params"] is None else str(entry["params"]),
                                 "r": entry["pearson"], "rho": entry["spearman"], "r_sd": entry["pearson_sd"],
                                 "rho_sd": entry["spearman_sd"], "n_seeds": entry["n_seeds"],
                                 "n_scored": entry["n_scored"], "n_unscored": entry["n_unscored"]})
        for lang in languages:
            row = numbers.get(lang, {})
            cells += [_paper(row.get("r")), *(ours[name][0] for name in mapped[lang]),
                      _paper(row.get("rho")), *(ours[name][1] for name in mapped[lang])]
        for name in unmapped:
            cells += list(ours[name])
        md_rows.append(cells)
    return _markdown(header, md_rows), csv_rows


def size_table(summary: dict, datasets: Mapping[str, str | None], paper: pl.DataFrame,
               backbone_label: str) -> tuple[str, list[dict]]:
    """Table 4: parameters and r, ρ; the paper's English rows, then ours per dataset."""
    header = ["Method", "Source", "Dataset", "Params", "r", "ρ"]
    md_rows, csv_rows = [], []
    for row in paper.filter(pl.col("table") == 4).iter_rows(named=True):
        md_rows.append([row["method"], "paper", LANGUAGE_NAMES[row["language"]], row["params"] or "–",
                        _paper(row["r"]), _paper(row["rho"])])
        csv_rows.append({"table": 4, "method": row["method"], "ours": row["ours"], "source": "paper",
                         "dataset": LANGUAGE_NAMES[row["language"]], "params": row["params"], "r": row["r"],
                         "rho": row["rho"], "r_sd": None, "rho_sd": None, "n_seeds": None,
                         "n_scored": None, "n_unscored": None})
    for method, label in (("prepend", "Rosin et al. (2022)"), ("temporal_attention", "Temp. Att.")):
        for name in datasets:
            entry = summary.get((name, method))
            if entry is None:
                continue
            params = f"{entry['params'] / 1e6:.2f}M" if entry["params"] else "–"
            md_rows.append([f"{label} {backbone_label}", "ours", name, params,
                            _cell(entry, "pearson"), _cell(entry, "spearman")])
            csv_rows.append({"table": 4, "method": f"{label} {backbone_label}", "ours": method, "source": "ours",
                             "dataset": name, "params": params, "r": entry["pearson"], "rho": entry["spearman"],
                             "r_sd": entry["pearson_sd"], "rho_sd": entry["spearman_sd"],
                             "n_seeds": entry["n_seeds"], "n_scored": entry["n_scored"],
                             "n_unscored": entry["n_unscored"]})
    return _markdown(header, md_rows), csv_rows


def write_tables(metric_paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike,
                 datasets: Mapping[str, str | None], backbone_label: str = "MiniLM-L6") -> dict[str, Path]:
    """temporal_attention_table{2,3,4}.{md,csv,tex,html} under out_dir; datasets: {our dataset: paper column or None}."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    metrics = load_metrics(metric_paths)
    summary = summarise(metrics)
    paper = paper_numbers()
    for name, lang in datasets.items():
        if lang is not None and lang not in LANGUAGE_NAMES:
            raise ValueError(f"dataset {name}: paper column must be one of {sorted(LANGUAGE_NAMES)} or null")
    titles = {
        2: "Rosin & Radinsky (2022) Table 2: semantic change detection, Pearson r and Spearman ρ against the graded truth",
        3: "Rosin & Radinsky (2022) Table 3: time-token prepend vs temporal attention vs both",
        4: "Rosin & Radinsky (2022) Table 4: model size (paper: SemEval-English)",
    }
    written = {}
    for table in (2, 3, 4):
        if table == 4:
            md, rows = size_table(summary, datasets, paper, backbone_label)
        else:
            md, rows = comparison_table(table, summary, datasets, paper)
        # No wall times here: they change from run to run, and the tables of a run must be
        # byte-identical to a rerun's (each run's metrics.json and benchmark file keep them).
        note = ("\nOurs: [method] in brackets; mean ± sd over seeds when more than one; "
                "'not run': method not in the config; '–': not reported.\n")
        md_path, csv_path = (out / f"temporal_attention_table{table}.{ext}" for ext in ("md", "csv"))
        md_path.write_text(f"# {titles[table]}\n\n{md}{note}")
        # the same table for LaTeX and for the Snakemake report
        rendered = Table.from_markdown(titles[table], md, [n for n in note.split("\n") if n.strip()],
                                       label_columns=4 if table == 4 else 1)
        stem = out / f"temporal_attention_table{table}"
        stem.with_suffix(".tex").write_text(rendered.latex(f"tab:{stem.name}"))
        stem.with_suffix(".html").write_text(rendered.html())
        pl.DataFrame(rows, schema={
            "table": pl.Int64, "method": pl.String, "ours": pl.String, "source": pl.String, "dataset": pl.String,
            "params": pl.String, "r": pl.Float64, "rho": pl.Float64, "r_sd": pl.Float64, "rho_sd": pl.Float64,
            "n_seeds": pl.Int64, "n_scored": pl.Int64, "n_unscored": pl.Int64}).write_csv(csv_path)
        written[f"table{table}_md"], written[f"table{table}_csv"] = md_path, csv_path
    return written
