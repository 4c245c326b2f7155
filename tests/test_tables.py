import json

import polars as pl

from tempoformer.tables import aggregate


def write_run(root, fold, seed, gold, pred, scores, dev=0.5, model="random", window=1):
    d = root / f"{model}/w{window}/fold{fold}/seed{seed}"
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps({
        "dataset": "toy", "model": model, "window": window, "fold": fold, "seed": seed,
        "test": scores, "dev_macro": dev,
    }))
    pl.DataFrame({"gold": gold, "pred": pred}).write_parquet(d / "predictions.parquet")
    return d / "metrics.json"


def test_aggregate_hand_computed(tmp_path):
    # fold 0: gold A A B, pred A B B → F1 A 2/3, B 2/3; fold 1: gold B B, pred B B → A 0, B 1
    f0 = {"A": 2 / 3, "B": 2 / 3, "macro": 2 / 3}
    f1 = {"A": 0.0, "B": 1.0, "macro": 0.5}
    paths = [
        write_run(tmp_path, 0, 0, ["A", "A", "B"], ["A", "B", "B"], f0),
        write_run(tmp_path, 1, 0, ["B", "B"], ["B", "B"], f1),
        write_run(tmp_path, 0, 1, ["A", "A", "B"], ["A", "A", "B"], {"A": 1.0, "B": 1.0, "macro": 1.0}),
        write_run(tmp_path, 1, 1, ["B", "B"], ["A", "B"], {"A": 0.0, "B": 2 / 3, "macro": 1 / 3}),
    ]
    summary = aggregate(paths, {"toy": ["A", "B"]}, tmp_path / "tables")
    cell = {r["label"]: (r["mean"], r["std"]) for r in summary.iter_rows(named=True)}
    # A: 66.7, 0, 100, 0 → 41.7 ± 50.0; B: 66.7, 100, 100, 66.7 → 83.3 ± 19.2
    # macro over runs: 66.67, 50, 100, 33.33 → mean 62.5, sample std 28.4638
    assert abs(cell["macro"][0] - 62.5) < 1e-6 and abs(cell["macro"][1] - 28.4638) < 1e-3
    # pooled seed 0: gold AABBB pred ABBBB → A: 2·1/(2+1)=2/3, B: 2·3/(3+4)=6/7 → macro 0.7619
    # pooled seed 1: gold AABBB pred AABAB → A: tp2 fp1 → 0.8, B: tp2 fn1 → 0.8 → macro 0.8
    m0, m1 = 100 * (2 / 3 + 6 / 7) / 2, 80.0
    assert abs(cell["macro (pooled)"][0] - (m0 + m1) / 2) < 1e-6
    assert abs(cell["macro (pooled)"][1] - abs(m0 - m1) / 2**0.5) < 1e-6
    table = (tmp_path / "tables" / "table2.md").read_text()
    assert "| post | Random | 41.7 ± 50.0 | 83.3 ± 19.2 | 62.5 ± 28.5 |" in table
    csv = pl.read_csv(tmp_path / "tables" / "table2.csv")
    assert csv.filter(pl.col("label") == "macro")["f1"][0] == "62.5 ± 28.5"


def test_best_window_chosen_on_dev(tmp_path):
    scores = {"A": 0.5, "B": 0.5, "macro": 0.5}
    good_test = {"A": 0.9, "B": 0.9, "macro": 0.9}
    paths = [
        write_run(tmp_path, 0, 0, ["A"], ["A"], scores, dev=0.8, model="ffn_history", window=5),
        write_run(tmp_path, 0, 0, ["A"], ["A"], good_test, dev=0.2, model="ffn_history", window=20),
    ]
    summary = aggregate(paths, {"toy": ["A", "B"]}, tmp_path / "tables")
    assert set(summary["window"]) == {5}
