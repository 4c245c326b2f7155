"""Tables and figures of the future language modeling stage (md, csv, tex, html; png).

- future_lm_table1: Table 1 (abstracts, sentences and tokens per abstract by split), ours beside
  the paper's; future_lm_years: the per-year counts behind it and Figure 3 (raw, dropped by each
  filter reason, kept, used after the cap), beside the authors' per-year file lines.
- future_lm_table3: the automatic metrics of §4.4 on the test year per model, mean ± sd over
  seeds, with, against each entry of `baselines` (Baseline and Baseline-n), the sign test and the
  paired bootstrap over test abstracts and the per-seed perplexity difference (significance.py);
  the paper's columns are empty because its numbers are not in our copy (paper_numbers.csv says so).
- future_lm_beyond: beyond the paper: perplexity on every evaluated year (dev, test, and the
  further future years such as 2022, two years after training) and its difference from each
  baseline, and the fixed frequency biases of unigram.py (last year, linear trend, the next-year
  oracle) alone and on the first baseline.
- Figures: future_lm_figure3.png (abstracts per year), future_lm_figure1b.png (frequency by year
  of chosen words), future_lm_ppl_by_year.png (perplexity per year and model).

No wall times in the tables: two runs write byte-identical tables (the metrics files keep them).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from ..artefacts import read_json, read_parquet
from ..atomic import write_with
from ..reporting.render import Table, write_table
from .model_types import BIASED, MODEL_TYPES, NEEDS_CONTEXT, alpha_applies, resolve_baselines

PAPER_CSV = Path(__file__).with_name("paper_numbers.csv")
TYPE_NAMES = {"baseline": "Baseline", "baseline_n": "Baseline-n", "static_bias": "Static bias (control)",
              "frequency_nolstm": "Frequency-NoLSTM", "frequency": "Frequency", "context": "Context",
              "context2": "Context²"}
# The paper's reading of each model option and the types it matters for: a run with another value
# (an authors' switch, or an option of this code) is labelled with it, "Context (context_proj=64)",
# and has no paper row.
PAPER_READING = {"output_layer": ("tied", MODEL_TYPES), "context_bias": ("scalar", ("context",)),
                 "gate": ("per_word", ("context2",)), "length_factor": (False, ("context2",)),
                 "scaling": ("none", ("frequency_nolstm", "frequency")),
                 "nolstm_bias": ("previous_year", ("frequency_nolstm",)),
                 "alpha_scope": ("context2", tuple(t for t in BIASED if t != "context2")),
                 "context_proj": (None, NEEDS_CONTEXT), "presence_flag": (False, NEEDS_CONTEXT),
                 "start": ("base", ("baseline_n",))}
SPLIT_LABELS = {"train": "Train", "dev": "Dev", "test": "Test", "future": "Future"}


def paper_numbers() -> pl.DataFrame:
    return pl.read_csv(PAPER_CSV, comment_prefix="#", schema_overrides={"value": pl.Float64, "row": pl.String})


def _fmt(x, digits: int = 1) -> str:
    return "–" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:,.{digits}f}"


def _mean_sd(values, digits: int = 1) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    text = _fmt(float(np.mean(values)), digits)
    if len(values) > 1:
        text += f" ± {_fmt(float(np.std(values, ddof=1)), digits)}"
    return text


# ------------------------------------------------------------------ Table 1 and the years


def split_stats(counts: dict) -> dict[str, dict]:
    """Per split: abstracts after the filter, sentences and tokens per abstract, used abstracts."""
    out: dict[str, dict] = {}
    for year, e in sorted(counts["years"].items()):
        split = e["split"]
        if split not in SPLIT_LABELS:
            continue
        s = out.setdefault(split, {"abstracts": 0, "sentences": 0, "tokens": 0, "used": 0, "years": []})
        s["abstracts"] += e["stats"]["abstracts"]
        s["sentences"] += e["stats"]["sentences"]
        s["tokens"] += e["stats"]["tokens"]
        s["used"] += e.get("used", 0)
        s["years"].append(int(year))
    return out


def table1(counts: dict, paper: pl.DataFrame, dataset: str) -> tuple[Table, pl.DataFrame]:
    stats = split_stats(counts)
    p = {(r["row"], r["column"]): r["value"] for r in paper.filter(pl.col("table") == "1").iter_rows(named=True)}
    splits = [s for s in ("train", "dev", "test", "future") if s in stats]

    def years(s):
        ys = stats[s]["years"]
        return str(ys[0]) if len(ys) == 1 else f"{ys[0]}-{ys[-1]}"

    header = ["Statistic"]
    for s in splits:
        header.append(f"{SPLIT_LABELS[s]} {years(s)} (ours)")
        if s != "future":
            header.append(f"{SPLIT_LABELS[s]} (paper)")
    rows, csv = [], []
    for key, label, digits in (("abstracts", "# of abstracts (after the filter)", 0),
                               ("sentences", "avg. # of sentences per abstract", 1),
                               ("tokens", "avg. # of tokens per abstract", 1)):
        row = [label]
        for s in splits:
            st = stats[s]
            ours = st["abstracts"] if key == "abstracts" else st[key] / max(st["abstracts"], 1)
            row.append(_fmt(ours, digits))
            csv.append({"statistic": key, "split": s, "years": years(s), "source": "ours", "value": float(ours)})
            if s != "future":
                row.append(_fmt(p.get((key, s)), digits))
                csv.append({"statistic": key, "split": s, "years": years(s), "source": "paper",
                            "value": p.get((key, s))})
        rows.append(row)
    row = ["# of abstracts used in this run (after the cap)"]
    for s in splits:
        row.append(_fmt(stats[s]["used"], 0))
        csv.append({"statistic": "used", "split": s, "years": years(s), "source": "ours", "value": float(stats[s]["used"])})
        if s != "future":
            row.append("–")
    rows.append(row)
    notes = [
        f"Dataset {dataset}. Ours: the abstracts of each split's years after the authors' string filter "
        "(shared task / SemEval / 10 words or fewer; data.py), before the per-split cap of the run.",
        "Sentences: a regular-expression splitter; tokens: a regular-expression approximation of NLTK's "
        "word_tokenize (it and sent_tokenize need NLTK's punkt_tab data, not available offline), so per-abstract "
        "figures are close to, not the same measure as, the paper's.",
        "The paper's train years 2003-2019 include PDF-extracted abstracts where the Anthology has none "
        "(before 2016 a minority of papers have abstracts in the XML): a train count far below 37,816 is expected "
        "from the Anthology XML alone (shared/data/acl_abstracts/SOURCE.md).",
    ]
    return Table("Li & Flanigan (2024) Table 1: data split statistics", header, rows, notes), \
        pl.DataFrame(csv, schema={"statistic": pl.String, "split": pl.String, "years": pl.String,
                                  "source": pl.String, "value": pl.Float64})


def years_table(counts: dict, paper: pl.DataFrame) -> tuple[Table, pl.DataFrame]:
    authors = {int(r["row"]): r["value"] for r in paper.filter(pl.col("table") == "authors_lines").iter_rows(named=True)}
    header = ["Year", "Split", "Raw", "Shared task", "SemEval title/id", "Short", "Non-English", "Blank lines",
              "Kept", "Used", "Authors' files (lines)"]
    rows, csv = [], []
    for year, e in sorted(counts["years"].items(), key=lambda kv: int(kv[0])):
        y = int(year)
        values = [e["raw"], e["dropped_shared_task"], e["dropped_semeval_title"], e["dropped_short"],
                  e["dropped_non_english"], e.get("blank_lines", 0), e["kept"], e.get("used", 0)]
        rows.append([year, e["split"], *(_fmt(v, 0) for v in values), _fmt(authors.get(y), 0)])
        csv.append({"year": y, "split": e["split"], "raw": e["raw"], "dropped_shared_task": e["dropped_shared_task"],
                    "dropped_semeval_title": e["dropped_semeval_title"], "dropped_short": e["dropped_short"],
                    "dropped_non_english": e["dropped_non_english"], "blank_lines": e.get("blank_lines", 0),
                    "kept": e["kept"], "used": e.get("used", 0), "authors_lines": authors.get(y)})
    notes = ["Every abstract read is counted: raw = dropped by the first filter reason that applies + kept; "
             "kept - used = left out by the run's per-split cap (a seeded sample, a compute budget).",
             "Authors' files: lines of their per-year training files (2018 derived from the paper's total; "
             "2020 and 2021 the paper's dev and test counts)."]
    return Table("Abstracts per year (the data of Figure 3)", header, rows, notes, label_columns=2), pl.DataFrame(csv)


# ------------------------------------------------------------------ metrics across models


def load_runs(metric_paths) -> list[dict]:
    runs = []
    for path in metric_paths:
        m = read_json(path)
        m["_dir"] = str(Path(path).parent)
        runs.append(m)
    return runs


def departures(spec: dict) -> list[str]:
    """"key=value" of each option of `spec` that is not the paper's reading (PAPER_READING)."""
    return [f"{k}={spec[k]}" for k, (paper, types) in PAPER_READING.items()
            if spec["type"] in types and spec.get(k, paper) != paper]


def model_label(run: dict) -> str:
    spec = run["spec"]
    label = TYPE_NAMES[spec["type"]]
    if switched := departures(spec):
        label += " (" + ", ".join(switched) + ")"
    if run.get("evaluated_scaling", spec.get("scaling", "none")) != spec.get("scaling", "none"):
        label += f" [evaluated with scaling={run['evaluated_scaling']}]"
    return label


def paper_row(run: dict) -> str | None:
    spec = run["spec"]
    if spec["type"] == "static_bias" or departures(spec):
        return None  # a control of ours, or not the paper's model
    if spec["type"] == "baseline_n":
        return f"Baseline-{spec['n']}" if spec.get("n") in (2, 3) else None
    return TYPE_NAMES[spec["type"]]


def chosen_on_dev(spec: dict) -> str:
    if spec["type"] == "baseline_n":
        return f"n={spec['n']}"
    if alpha_applies(spec["type"], spec.get("alpha_scope", "all")):  # a spec before alpha_scope: α on all
        return f"α={spec['alpha']:g}"
    return "–"


def baseline_labels(groups: dict, baselines: list[str]) -> dict[str, str]:
    """{entry: its label in column headers} of the baselines that ran: the model's label, or the
    config entry's name where two baselines would share a label."""
    present = [b for b in baselines if b in groups]
    labels = {b: model_label(groups[b][0]) for b in present}
    if len(set(labels.values())) < len(labels):
        labels = {b: b for b in present}
    return labels


def _by_model(runs: list[dict], order: list[str] | None) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for r in sorted(runs, key=lambda r: (r["model"], r["seed"])):
        groups.setdefault(r["model"], []).append(r)
    names = [n for n in (order or []) if n in groups] + sorted(n for n in groups if n not in (order or []))
    return {n: groups[n] for n in names}


def per_abstract(runs: list[dict], year: int) -> pl.DataFrame:
    """Per abstract of `year`: NLL and tokens, the mean over the runs (seeds) of one model."""
    frames = [read_parquet(Path(r["_dir"]) / "scores.parquet").filter(pl.col("year") == year) for r in runs]
    return (pl.concat(frames).group_by("doc_id").agg(pl.col("nll").mean(), pl.col("n_tokens").first())
            .sort("doc_id"))


def table3(runs: list[dict], paper: pl.DataFrame, baselines: list[str], order, bootstrap: dict
           ) -> tuple[Table, pl.DataFrame]:
    from .significance import bootstrap_ppl, seed_deltas, sign_test

    groups = _by_model(runs, order)
    p = {(r["row"], r["column"]): r["value"] for r in paper.filter(pl.col("table") == "3").iter_rows(named=True)}
    test_year = runs[0]["test_year"]
    labels = baseline_labels(groups, baselines)
    bases = {b: per_abstract(groups[b], test_year) for b in labels}

    def test_ppl(group):
        return {r["seed"]: r["years"][str(test_year)]["ppl_token"] for r in group}

    chunked = any("chunked" in r["years"][str(test_year)] for r in runs)
    header = ["Model", "Config entry", "Seeds", "Chosen on dev", "PPL/token", "PPL/word", "CPL", "CPL per piece",
              *(["PPL/token, authors' chunks"] if chunked else []), "CM",
              *(c for b in labels.values() for c in (f"Sign test vs {b}", f"Bootstrap p vs {b}",
                                                     f"ΔPPL/token vs {b}, per seed")),
              "PPL (paper)", "CPL (paper)", "CM (paper)"]
    rows, csv = [], []
    for name, group in groups.items():
        years = [r["years"][str(test_year)] for r in group]
        chosen = sorted({chosen_on_dev(r["spec"]) for r in group})
        tests, cells_vs = {}, []
        for b, base in bases.items():
            if name == b:
                cells_vs += ["–", "–", "–"]
                continue
            mine = per_abstract(group, test_year).join(base, on="doc_id", suffix="_base")
            s = sign_test((mine["nll"] / mine["n_tokens"]).to_numpy(), (mine["nll_base"] / mine["n_tokens"]).to_numpy())
            boot = bootstrap_ppl(mine["nll"].to_numpy(), mine["nll_base"].to_numpy(), mine["n_tokens"].to_numpy(),
                                 int(bootstrap.get("resamples", 1000)), int(bootstrap.get("seed", 0)))
            d = seed_deltas(test_ppl(group), test_ppl(groups[b]))
            tests[b] = (s, boot, d)
            spread = "–" if d["mean"] is None else (
                f"{d['mean']:+.1f}%" + (f" ± {d['sd']:.1f}" if d["sd"] is not None else "")
                + f" (lower in {d['lower']} of {len(d['seeds'])})")
            cells_vs += [f"p={s['p_value']:.3g} ({s['wins']} better / {s['losses']} worse)", f"{boot['p_value']:.3g}",
                         spread]
        prow = paper_row(group[0])
        cells = {"ppl_token": [y["ppl_token"] for y in years], "ppl_word": [y["ppl_word"] for y in years],
                 "cpl": [y["cpl"] for y in years], "cpl_piece": [y["cpl_piece"] for y in years],
                 "cm": [r["cm"] for r in group]}
        if chunked:
            for key, field in (("ppl_chunked", "ppl"), ("ppl_chunked_authors", "ppl_authors"),
                               ("cpl_piece_chunked", "cpl_piece")):
                cells[key] = [(y.get("chunked") or {}).get(field) for y in years]
        rows.append([model_label(group[0]), name, str(len(group)), ", ".join(chosen),
                     _mean_sd(cells["ppl_token"]), _mean_sd(cells["ppl_word"]), _mean_sd(cells["cpl"]),
                     _mean_sd(cells["cpl_piece"]), *([_mean_sd(cells["ppl_chunked"])] if chunked else []),
                     _mean_sd(cells["cm"], 3), *cells_vs,
                     *(_fmt(p.get((prow, k))) if prow else "–" for k in ("ppl", "cpl", "cm"))])
        versus = {}
        for b in labels:
            s, boot, d = tests.get(b, (None, None, None))
            versus.update({f"sign_p_vs_{b}": s and s["p_value"], f"sign_better_vs_{b}": s and s["wins"],
                           f"sign_worse_vs_{b}": s and s["losses"], f"bootstrap_p_vs_{b}": boot and boot["p_value"],
                           f"delta_ppl_pct_vs_{b}": d and d["mean"], f"delta_ppl_pct_sd_vs_{b}": d and d["sd"],
                           f"seeds_lower_vs_{b}": d and d["lower"]})
        for key, values in cells.items():
            csv.append({"model": name, "label": model_label(group[0]), "metric": key, "source": "ours",
                        "mean": float(np.mean([v for v in values if v is not None])) if any(v is not None for v in values) else None,
                        "sd": float(np.std(values, ddof=1)) if len(values) > 1 and None not in values else None,
                        "n_seeds": len(group), **versus})
    first = runs[0]
    notes = [
        f"Test year {test_year} (dev {first['dev_year']}); our numbers are the mean ± sd over seeds; the model and "
        "its α (or n) chosen on dev perplexity. PPL per token counts our WordPiece pieces + EOS; PPL per word divides "
        "the same total NLL by whitespace words + 1 (comparable across tokenizers, ours vs GPT-2). CPL: content words "
        "(more than 4 characters, not in the authors' stopword list) decided per word; CPL per piece: the authors' "
        "per-piece reading.",
        *(["PPL/token, authors' chunks (evaluation.chunked): the test abstracts joined into one stream and scored "
           "in non-overlapping chunks of the model's context that cross abstracts (compute_perplexity.py:360-366), "
           "exp(total NLL / predictions); the CSV also has their reported figure (a chunk's mean NLL multiplied by "
           "its length, :385) and their per-piece content perplexity over the chunks. Ours score each abstract "
           "alone."] if chunked else []),
        "CM: content METEOR, max over the test abstracts, mean over the generated abstracts; METEOR with exact and "
        "stem matches only (NLTK's Porter stemmer; NLTK's meteor_score with a WordNet that has no synonyms): no "
        "WordNet data offline, so CM is comparable across our models, not with the paper's.",
        f"Against each baseline ({', '.join(labels.values()) or 'none ran'}; the config's `baselines`): sign test: "
        "exact two-sided binomial test over test abstracts of per-abstract log-perplexity (seed means), ties left "
        "out; bootstrap p: share of resamples of the test abstracts in which the model's perplexity is not lower "
        "than the baseline's; ΔPPL/token per seed: 100 (PPL_model / PPL_baseline - 1) % for each seed both ran, "
        "mean ± sd over the seeds and on how many the model is lower (the spread the pooled tests do not show).",
        "Static bias (control): the base LM plus one learned bias per vocabulary entry, the same for every year "
        "(biases.py): what a learned output bias gains without time; a temporal model that does not beat it has not "
        "shown that time helps.",
        "Paper columns: the paper's Table 3 numbers are not in our copy of the paper (only §3.2-§4.4 are); they are left "
        "empty, to be entered from the PDF in src/tempoformer/future_lm/paper_numbers.csv. Even then our numbers are not "
        "comparable with them: a small Transformer trained here on the Anthology XML abstracts plays GPT-2, with another "
        "tokenizer and far less text.",
    ]
    schema = {"model": pl.String, "label": pl.String, "metric": pl.String, "source": pl.String, "mean": pl.Float64,
              "sd": pl.Float64, "n_seeds": pl.Int64}
    for b in labels:
        schema.update({f"sign_p_vs_{b}": pl.Float64, f"sign_better_vs_{b}": pl.Int64, f"sign_worse_vs_{b}": pl.Int64,
                       f"bootstrap_p_vs_{b}": pl.Float64, f"delta_ppl_pct_vs_{b}": pl.Float64,
                       f"delta_ppl_pct_sd_vs_{b}": pl.Float64, f"seeds_lower_vs_{b}": pl.Int64})
    return Table("Li & Flanigan (2024) Table 3: automatic metrics on the test year", header, rows, notes,
                 label_columns=4), pl.DataFrame(csv, schema=schema)


def beyond_table(runs: list[dict], unigram: list[dict], baselines: list[str], order) -> tuple[Table, pl.DataFrame]:
    groups = _by_model(runs, order)
    years = sorted({int(y) for r in runs for y in r["years"]})
    split_of = {int(y): v["split"] for y, v in runs[0]["years"].items()}
    labels = baseline_labels(groups, baselines)
    later = [y for y in years if split_of[y] != "dev"]
    header = ["Model", "Config entry", *(f"{y} ({split_of[y]}) PPL/token" for y in years),
              *(f"{y} Δ vs {label}" for label in labels.values() for y in later)]
    base = {b: {y: float(np.mean([r["years"][str(y)]["ppl_token"] for r in groups[b]])) for y in years}
            for b in labels}

    def deltas(means: dict) -> list[str]:
        return [f"{100 * (means[y] / base[b][y] - 1):+.1f}%" if means.get(y) is not None else "–"
                for b in labels for y in later]

    rows, csv = [], []
    for name, group in groups.items():
        means = {y: float(np.mean([r["years"][str(y)]["ppl_token"] for r in group])) for y in years}
        sds = {y: [r["years"][str(y)]["ppl_token"] for r in group] for y in years}
        rows.append([model_label(group[0]), name, *(_mean_sd(sds[y]) for y in years), *deltas(means)])
        csv += [{"row": name, "kind": "model", "year": y, "ppl_token": means[y], "beta": None, "reference": None}
                for y in years]
    label_of = {"last_year": "last year's log f", "linear_trend": "linear trend of log f",
                "oracle": "ORACLE: the year's own log f (uses the future)"}
    if unigram:
        split_years = unigram[0]["years"]
        year_key = {int(v): k for k, v in split_years.items()}
        references = sorted({u.get("reference", "none") for u in unigram})  # a file before `reference`: absolute
        if len(references) > 1:
            raise ValueError(f"the unigram files mix references {references}; rerun them with one")
        reference = references[0]
        on = unigram[0].get("base", "Baseline")
        on = model_label(groups[on][0]) if on in groups else on
        for predictor in ("last_year", "linear_trend", "oracle"):
            for kind in ("unigram_ppl", "lm_ppl"):
                values = {y: [u["predictors"][predictor][kind].get(year_key[y]) for u in unigram] for y in years
                          if y in year_key}
                betas = sorted({u["predictors"][predictor]["beta"] for u in unigram})
                chosen = f"β={', '.join(f'{b:g}' for b in betas)} on dev"
                if kind == "unigram_ppl":
                    label = f"Unigram only: {label_of[predictor]}"
                elif reference == "training_years":
                    label = f"{on} + β·(log f_pred - log f_train), f_pred: {label_of[predictor]} ({chosen})"
                else:
                    label = f"{on} + β·(log f_pred - mean), absolute, f_pred: {label_of[predictor]} ({chosen})"
                means = {y: float(np.mean(v)) for y, v in values.items()}
                rows.append([label, f"unigram ({predictor})",
                             *(_mean_sd(values[y]) if y in values else "–" for y in years),
                             *(deltas(means) if kind == "lm_ppl" else ["–"] * (len(labels) * len(later)))])
                csv += [{"row": f"{kind}:{predictor}", "kind": kind, "year": y,
                         "ppl_token": means.get(y), "beta": betas[0] if kind == "lm_ppl" else None,
                         "reference": reference if kind == "lm_ppl" else None} for y in years]
    notes = [
        "Beyond the paper. Perplexity per token on every evaluated year: the dev year, the test year, and further "
        "years (predicted from the strictly earlier years; no model was trained on them or chose anything on them); "
        f"Δ: the difference from each baseline's seed mean ({', '.join(labels.values()) or 'none ran'}).",
        "Unigram rows (unigram.py): a fixed bias from log frequencies (f_pred: last year's, or each entry's "
        "least-squares trend extrapolated to the year), scored alone as a unigram model and added to the first "
        "baseline's logits with β chosen on dev (seed means over its seeds). "
        + ("The bias is the log ratio β·(log f_pred - log f_train) against the training years' pooled frequencies, "
           "which the baseline has already learned (unigram.reference: training_years). "
           if unigram and reference == "training_years" else
           "The bias is the absolute, centred log f_pred (unigram.reference: none): it counts again the unigram "
           "prior the baseline has already learned. " if unigram else "")
        + "The ORACLE uses the year's own frequencies: it bounds what a unigram-shaped temporal bias could gain; it "
        "is not a model.",
        "UNK (pieces outside the training vocabulary) gets no temporal bias in any model; the unigram-only rows do "
        "predict it from history frequencies, which penalises them where training years have few UNKs.",
    ]
    schema = {"row": pl.String, "kind": pl.String, "year": pl.Int64, "ppl_token": pl.Float64, "beta": pl.Float64,
              "reference": pl.String}
    return Table("Future language modeling beyond the paper: later years and fixed frequency biases", header, rows,
                 notes, label_columns=2), pl.DataFrame(csv, schema=schema)


# ------------------------------------------------------------------ figures


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path):
    plt = _plt()
    write_with(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png", metadata={"Software": None}))
    plt.close(fig)


def figure3(counts: dict, paper: pl.DataFrame, path) -> None:
    plt = _plt()
    authors = {int(r["row"]): r["value"] for r in paper.filter(pl.col("table") == "authors_lines").iter_rows(named=True)}
    years = sorted(int(y) for y in counts["years"])
    kept = [counts["years"][str(y)]["kept"] for y in years]
    used = [counts["years"][str(y)].get("used", 0) for y in years]
    raw = [counts["years"][str(y)]["raw"] for y in years]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ax.bar(years, raw, color="0.85", label="read (before the filter)")
    ax.bar(years, kept, color="C0", label="kept by the filter")
    ax.plot(years, used, "k.-", label="used in this run (after the cap)")
    ay = [y for y in sorted(authors) if years[0] <= y <= years[-1]]
    if ay:
        ax.plot(ay, [authors[y] for y in ay], "s--", color="C3", label="paper / authors' files")
    ax.set_yscale("log")  # a sample run's counts and the paper's on one plot
    ax.set(xlabel="year", ylabel="# of abstracts (log scale)", title="Figure 3: # of abstracts by year")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, path)


def word_frequency_by_year(corpus: pl.DataFrame, terms: list[str]) -> dict[str, dict[int, float]]:
    """Occurrences per 10,000 words of words starting with each term (lower-cased), by year."""
    from .data import words

    out = {t: {} for t in terms}
    for year in sorted(corpus["year"].unique().to_list()):
        tokens = [w.lower() for text in corpus.filter(pl.col("year") == year)["text"].to_list() for w in words(text)]
        n = max(len(tokens), 1)
        for t in terms:
            out[t][int(year)] = 1e4 * sum(w.startswith(t) for w in tokens) / n
    return out


def figure1b(corpus: pl.DataFrame, terms: list[str], path) -> dict:
    plt = _plt()
    freq = word_frequency_by_year(corpus, terms)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for t, series in freq.items():
        ys = sorted(series)
        ax.plot(ys, [series[y] for y in ys], "o-", label=f"{t}*")
    ax.set(xlabel="year", ylabel="per 10,000 words", title="Figure 1b: frequency by year of example words")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
    return freq


def figure_ppl_by_year(runs: list[dict], order, path) -> None:
    plt = _plt()
    groups = _by_model(runs, order)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, group in groups.items():
        years = sorted(int(y) for y in group[0]["years"])
        values = [[r["years"][str(y)]["ppl_word"] for r in group] for y in years]
        ax.errorbar(years, [np.mean(v) for v in values],
                    yerr=[np.std(v, ddof=1) if len(v) > 1 else 0 for v in values], marker="o", capsize=3,
                    label=name)
    ax.set(xlabel="year (dev, test, further)", ylabel="perplexity per word", title="Perplexity by year")
    ax.set_xticks(sorted({int(y) for r in runs for y in r["years"]}))
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, path)


def write_all(counts_path, corpus_path, metric_paths, unigram_paths, out_dir, figures_dir, settings: dict) -> dict:
    counts = read_json(counts_path)
    corpus = read_parquet(corpus_path)
    paper = paper_numbers()
    runs = load_runs(metric_paths)
    unigram = [read_json(p) for p in unigram_paths]
    dataset = settings.get("dataset", "")
    order = settings.get("model_order")
    baselines = resolve_baselines(settings)
    out, figs = Path(out_dir), Path(figures_dir)
    written = {}
    t1, c1 = table1(counts, paper, dataset)
    written["table1"] = write_table(t1, c1, out, "future_lm_table1")
    ty, cy = years_table(counts, paper)
    written["years"] = write_table(ty, cy, out, "future_lm_years")
    t3, c3 = table3(runs, paper, baselines, order, settings.get("bootstrap") or {})
    written["table3"] = write_table(t3, c3, out, "future_lm_table3")
    tb, cb = beyond_table(runs, unigram, baselines, order)
    written["beyond"] = write_table(tb, cb, out, "future_lm_beyond")
    figure3(counts, paper, figs / "future_lm_figure3.png")
    figure1b(corpus, list(settings.get("figure1b_words") or ["neural", "pretrain"]), figs / "future_lm_figure1b.png")
    figure_ppl_by_year(runs, order, figs / "future_lm_ppl_by_year.png")
    return {k: [str(p) for p in v] for k, v in written.items()}
