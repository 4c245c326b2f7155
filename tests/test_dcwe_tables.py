"""DCWE tables from finished runs (no training): the best dev point goes into Tables 2 and 5,
Wilcoxon on paired per-document losses, exact McNemar on paired predictions, the grid table."""

import json

import numpy as np
import polars as pl
import pytest

from tempoformer.dcwe.tables import NAMES, write_tables

STATS = {"dataset": "toy", "documents": 10, "mean_words": 5.0, "mean_pieces": 7.0, "units": 3, "edges": 2,
         "mean_degree": 1.33, "mean_shortest_path": 1.33, "density": 0.67, "times": 2, "first_time": "0",
         "last_time": "1"}


def mlm_run(root, variant, lr, dev_ppl, losses, seed=0, epochs=()):
    folder = root / (f"{variant}_{lr}" if seed == 0 else f"{variant}_{lr}_seed{seed}")
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({
        "dataset": "toy", "variant": variant, "seed": seed, "lr": lr, "lambda_a": 0.1,
        "epochs": [{"epoch": i + 1, "dev": d} for i, d in enumerate(epochs)],
        "best_epoch": 1 + int(np.argmin(epochs)) if epochs else None, "train_steps": 20, "seconds": 30.0,
        "dev": {"perplexity": dev_ppl}, "test": {"perplexity": dev_ppl + 1}, "sigma_sim": [], "change": None}))
    frames = [pl.DataFrame({"doc_id": [f"d{i}" for i in range(len(losses))], "loss_sum": losses,
                            "n_masked": [2] * len(losses), "split": split}) for split in ("dev", "test")]
    pl.concat(frames).write_parquet(folder / "losses.parquet")
    return str(folder / "metrics.json")


def sentiment_run(root, variant, dev_f1, pred, gold, seed=0):
    folder = root / f"sentiment_{variant}"
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({
        "dataset": "toy", "task": "sentiment", "variant": variant, "seed": seed, "lr": 3e-5, "lambda_a": 0.1,
        "epochs": [{"epoch": 1, "dev": dev_f1 - 0.1}, {"epoch": 2, "dev": dev_f1}], "best_epoch": 2,
        "train_steps": 8, "seconds": 12.0, "train_positive": 7, "train_documents": 10,
        "dev": {"macro_f1": dev_f1}, "test": {"macro_f1": dev_f1 - 0.05}}))
    pl.concat([pl.DataFrame({"doc_id": [f"d{i}" for i in range(len(gold))], "split": split, "label": gold,
                             "prob": [0.5] * len(gold), "pred": pred}) for split in ("dev", "test")]
              ).write_parquet(folder / "predictions.parquet")
    return str(folder / "metrics.json")


def test_tables_from_runs(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"stats": STATS}))
    dcwe_losses = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    cwe_losses = [1.5, 2.75, 3.1, 4.9, 5.2, 7.3]
    metrics = [mlm_run(runs, "dcwe", 1e-5, 9.0, [9.0] * 6),         # the worse grid point: not shown
               mlm_run(runs, "dcwe", 3e-5, 8.0, dcwe_losses),
               mlm_run(runs, "cwe", 3e-5, 8.5, cwe_losses)]
    gold = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    sentiment = [sentiment_run(runs, "dcwe", 0.7, [1, 1, 1, 1, 1, 0, 0, 0, 1, 1], gold),
                 sentiment_run(runs, "cwe", 0.6, [0, 0, 0, 0, 1, 1, 0, 0, 1, 1], gold)]
    out = tmp_path / "tables"
    write_tables(metrics, [corpus], out, {"toy": "Reddit"}, "tiny", [], sentiment)
    table2 = pl.read_csv(out / "dcwe_table2.csv", infer_schema=False).filter(pl.col("source") == "ours")
    assert table2.select("model", "dev").rows() == [("dcwe", "8.000"), ("cwe", "8.500")]
    from scipy.stats import wilcoxon

    p = wilcoxon(np.array(dcwe_losses) / 2, np.array(cwe_losses) / 2).pvalue
    markdown = (out / "dcwe_table2.md").read_text()
    assert f"| toy | DCWE | ours (tiny, 1 seed); paper column Reddit | 8.000 | 9.000 | p={p:.3g} (DCWE lower)" in markdown
    table5 = (out / "dcwe_table5.md").read_text()
    # only DCWE right on 4 documents, only CWE on 1: exact p = 2 P(Bin(5, 1/2) <= 1) = 0.375
    assert "| toy | DCWE | ours (tiny, 1 seed); paper column Reddit | 0.700 | 0.650 | p=0.375 (4 vs 1) | p=0.375 (4 vs 1) |" \
        in table5
    assert "| toy | majority class (positive) | ours (the training split's majority; 70% of its documents positive) " \
           "| 0.375 | 0.375 |" in table5                          # 6 of 10 positive: F1 0.75 and 0
    grid = pl.read_csv(out / "dcwe_grid.csv", infer_schema=False).filter(pl.col("source").str.starts_with("ours"))
    dcwe = grid.filter((pl.col("model") == "DCWE") & (pl.col("task").str.starts_with("MLM"))).row(0, named=True)
    assert (dcwe["trials"], dcwe["mu"], dcwe["lr"], dcwe["n_e"], dcwe["tau"]) == ("2", "8.50", "3e-05", "20 steps", "1.0")
    sent = grid.filter((pl.col("model") == "DCWE") & (pl.col("task").str.starts_with("sentiment"))).row(0, named=True)
    assert (sent["trials"], sent["mu"], sent["sigma"], sent["n_e"]) == ("2", "0.650", "0.050", "2")
    # a rerun writes the same bytes
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    write_tables(metrics, [corpus], out, {"toy": "Reddit"}, "tiny", [], sentiment)
    assert before == {f.name: f.read_bytes() for f in out.iterdir()}


def test_predictions_that_do_not_pair_are_refused(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"stats": STATS}))
    sentiment = [sentiment_run(runs, "dcwe", 0.7, [1, 0, 1], [1, 0, 0]),
                 sentiment_run(runs, "cwe", 0.6, [1, 0], [1, 0])]
    with pytest.raises(ValueError, match="predictions do not pair: 3 and 2 documents"):
        write_tables([], [corpus], tmp_path / "tables", {"toy": None}, "tiny", [], sentiment)


def test_three_seeds_mean_sd_per_seed_wilcoxon_and_the_static_control(tmp_path):
    """Tables 2 and 3 over seeds 0-2: mean ± sample sd of the perplexities, one Wilcoxon per seed
    (DCWE vs CWE; DCWE vs static on the static row), the kept epoch / epochs run per seed."""
    from scipy.stats import wilcoxon

    runs = tmp_path / "runs"
    runs.mkdir()
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"stats": STATS}))
    rng = np.random.default_rng(0)
    losses = {}
    metrics = []
    for seed, (dcwe, cwe, static) in enumerate([(8.0, 8.5, 8.4), (8.2, 8.4, 8.1), (8.4, 8.9, 8.6)]):
        for variant, dev in (("dcwe", dcwe), ("cwe", cwe), ("static", static), ("sa", dcwe + 0.1)):
            values = list(np.round(rng.uniform(1, 9, 12), 3))
            losses[(variant, seed)] = values
            metrics.append(mlm_run(runs, variant, 3e-5, dev, values, seed, epochs=[dev + 1, dev, dev + 0.5, dev + 0.6]))
    out = tmp_path / "tables"
    write_tables(metrics, [corpus], out, {"toy": None}, "tiny")
    table2 = pl.read_csv(out / "dcwe_table2.csv", infer_schema=False).filter(pl.col("source") == "ours")
    assert table2.select("model", "dev", "seeds").rows() == [
        ("dcwe", f"{np.mean([8.0, 8.2, 8.4]):.3f} ± {np.std([8.0, 8.2, 8.4], ddof=1):.3f}", "3"),
        ("static", f"{np.mean([8.4, 8.1, 8.6]):.3f} ± {np.std([8.4, 8.1, 8.6], ddof=1):.3f}", "3"),
        ("cwe", f"{np.mean([8.5, 8.4, 8.9]):.3f} ± {np.std([8.5, 8.4, 8.9], ddof=1):.3f}", "3")]
    markdown = (out / "dcwe_table2.md").read_text()
    rows = {line.split(" | ")[1]: line for line in markdown.splitlines() if line.startswith("| toy |")}
    for other, name in (("cwe", "DCWE"), ("static", "Static (one offset per word)")):
        cells = []
        for seed in range(3):
            test = wilcoxon(np.array(losses[("dcwe", seed)]) / 2, np.array(losses[(other, seed)]) / 2)
            lower = "DCWE" if np.mean(losses[("dcwe", seed)]) < np.mean(losses[(other, seed)]) else \
                NAMES[other].split()[0]
            cells.append(f"p={test.pvalue:.3g}{'*' if test.pvalue < 0.01 else ''} ({lower} lower)")
        assert "; ".join(cells) in rows[name], (name, cells)
    assert rows["Static (one offset per word)"].count("DCWE vs static: ") == 2     # dev and test
    assert rows["DCWE"].endswith("| 2/4; 2/4; 2/4 |")             # best epoch 2 of 4 run, per seed
    table3 = pl.read_csv(out / "dcwe_table3.csv", infer_schema=False).filter(pl.col("source") == "ours")
    assert table3["model"].to_list() == ["dcwe", "sa", "static", "cwe"]


def test_dev_at_equal_epochs_compares_runs_that_stopped_at_different_epochs(tmp_path):
    """Early stopping ends runs at different epochs: dcwe_equal_epochs gives each model's dev
    perplexity after the last epoch every model ran on that seed, beside the kept epoch's, and
    the ranks under both (hand-computed)."""
    from tempoformer.dcwe.training_length import write_equal_epochs_table

    runs = tmp_path / "runs"
    runs.mkdir()
    curves = {("dcwe", 0): [10.0, 9.0, 8.1, 8.7, 8.8], ("cwe", 0): [11.0, 9.5, 8.4, 8.6, 8.3, 8.5, 8.6],
              ("dcwe", 1): [10.0, 9.0, 9.1, 9.2], ("cwe", 1): [10.5, 9.4, 9.0, 8.9, 9.3, 9.4]}
    metrics = [mlm_run(runs, variant, 3e-5, min(curve), [1.0, 2.0, 3.0], seed, epochs=curve)
               for (variant, seed), curve in curves.items()]
    metrics.append(mlm_run(runs, "cwe", 1e-5, 9.9, [1.0, 2.0, 3.0], 0, epochs=[9.9, 9.95]))  # the worse grid point
    write_equal_epochs_table(metrics, tmp_path / "tables", "tiny")
    table = pl.read_csv(tmp_path / "tables" / "dcwe_equal_epochs.csv", infer_schema=False)
    # kept: DCWE 8.1 (epoch 3 of 5) and 9.0 (2 of 4), CWE 8.3 (5 of 7) and 8.9 (4 of 6): DCWE ahead;
    # after the epochs both ran (5 on seed 0, 4 on seed 1): DCWE 8.8 and 9.2, CWE 8.3 and 8.9: CWE ahead
    assert table.rows() == [
        ("toy", "dcwe", "2", "8.550 ± 0.636", "3/5; 2/4", "9.000 ± 0.283", "5; 4", "1", "2"),
        ("toy", "cwe", "2", "8.600 ± 0.424", "5/7; 4/6", "8.600 ± 0.424", "5; 4", "2", "1")]
    # runs by steps train the same steps: both columns are the final value
    steps = [mlm_run(tmp_path, variant, 3e-5, dev, [1.0], 0) for variant, dev in (("dcwe", 8.0), ("static", 7.5))]
    write_equal_epochs_table(steps, tmp_path / "steps", "tiny")
    table = pl.read_csv(tmp_path / "steps" / "dcwe_equal_epochs.csv", infer_schema=False)
    assert table.select("model", "dev_kept", "dev_equal", "equal_epoch", "rank_equal").rows() == [
        ("dcwe", "8.000", "8.000", "20 steps", "2"), ("static", "7.500", "7.500", "20 steps", "1")]
