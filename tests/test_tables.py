import json
import re

import numpy as np
import polars as pl
import pytest

from tempoformer.reporting.render import Table
from tempoformer.reporting.significance import Bootstrap, macro_f1, paired_bootstrap
from tempoformer.reporting.aggregate import aggregate
from tempoformer.reporting.tables import Dataset


def write_run(root, fold, seed, gold, pred, scores, dev=0.5, model="random", window=1, dataset="toy", rows=None):
    d = root / f"{dataset}/{model}/w{window}/fold{fold}/seed{seed}"
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps({
        "dataset": dataset, "model": model, "window": window, "fold": fold, "seed": seed,
        "test": scores, "dev_macro": dev,
    }))
    rows = list(range(100 * fold, 100 * fold + len(gold))) if rows is None else rows  # folds apart
    # a timeline of two posts, as the test posts of a fold come in whole timelines
    pl.DataFrame({"row": rows, "timeline_id": [f"t{r // 2}" for r in rows], "gold": gold, "pred": pred}
                 ).write_parquet(d / "predictions.parquet")
    return d / "metrics.json"


def markdown_row(markdown, first_cells):
    """The cells of the Markdown row that starts with first_cells."""
    start = "| " + " | ".join(first_cells) + " |"
    line = next(ln for ln in markdown.splitlines() if ln.startswith(start))
    return [c.strip() for c in line.strip("|").split(" | ")]


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
    summary = aggregate(paths, [Dataset("toy", ["A", "B"])], tmp_path / "tables")
    cell = {r["label"]: (r["mean"], r["std"]) for r in summary.iter_rows(named=True)}
    # A: 66.7, 0, 100, 0 → 41.7 ± 50.0; B: 66.7, 100, 100, 66.7 → 83.3 ± 19.2
    assert cell["A"][0] == pytest.approx(250 / 6) and cell["A"][1] == pytest.approx(50.0)
    # macro over runs: 66.67, 50, 100, 33.33 → mean 62.5, sample std 28.4638
    assert cell["macro"][0] == pytest.approx(62.5) and cell["macro"][1] == pytest.approx(28.4638, abs=1e-4)
    # pooled seed 0: gold AABBB pred ABBBB → A: 2·1/(2+1)=2/3, B: 2·3/(3+4)=6/7 → macro 0.7619
    # pooled seed 1: gold AABBB pred AABAB → A: tp2 fp1 → 0.8, B: tp2 fn1 → 0.8 → macro 0.8
    m0, m1 = 100 * (2 / 3 + 6 / 7) / 2, 80.0
    assert cell["macro (pooled)"][0] == pytest.approx((m0 + m1) / 2)
    assert cell["macro (pooled)"][1] == pytest.approx(abs(m0 - m1) / 2**0.5)
    table = (tmp_path / "tables" / "table2.md").read_text()
    assert markdown_row(table, ["post", "Random"])[2:] == ["41.7 ± 50.0", "83.3 ± 19.2", "62.5 ± 28.5", "78.1 ± 2.7", "4"]
    assert markdown_row(table, ["stream", "BiLSTM"])[-1] == "0"  # runs behind the row: none
    assert "mean ± standard deviation over all (fold, seed) runs" in table
    csv = pl.read_csv(tmp_path / "tables" / "table2.csv")
    macro = csv.filter((pl.col("model") == "random") & (pl.col("label") == "macro")).row(0, named=True)
    assert macro["ours"] == "62.5 ± 28.5" and macro["runs"] == 4 and macro["mean"] == pytest.approx(62.5)


def test_the_order_of_the_metrics_files_does_not_change_a_byte(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for seed in range(4):  # per seed: 2 folds of 5 posts with random predictions
        for fold in range(2):
            gold, pred = rng.choice(["A", "B"], 5).tolist(), rng.choice(["A", "B"], 5).tolist()
            scores = {"A": rng.random(), "B": rng.random(), "macro": rng.random()}
            paths.append(write_run(tmp_path, fold, seed, gold, pred, scores, dev=rng.random()))
    written = []
    for i, order in enumerate([paths, paths[::-1], list(rng.permutation(paths))]):
        aggregate(order, [Dataset("toy", ["A", "B"])], tmp_path / f"tables{i}")
        written.append({n: (tmp_path / f"tables{i}" / f"table{n}.csv").read_bytes() for n in (2, 3, 4, 6, 11)})
    assert written[0] == written[1] == written[2]


def test_best_window_chosen_on_dev(tmp_path):
    scores = {"A": 0.5, "B": 0.5, "macro": 0.5}
    good_test = {"A": 0.9, "B": 0.9, "macro": 0.9}
    paths = [
        write_run(tmp_path, 0, 0, ["A"], ["A"], scores, dev=0.8, model="ffn_history", window=5),
        write_run(tmp_path, 0, 0, ["A"], ["A"], good_test, dev=0.2, model="ffn_history", window=20),
    ]
    summary = aggregate(paths, [Dataset("toy", ["A", "B"])], tmp_path / "tables")
    assert set(summary.filter("best")["window"]) == {5}
    row = markdown_row((tmp_path / "tables" / "table2.md").read_text(), ["stream", "FFN History"])
    assert row[4] == "50.0"  # macro of window 5, not the better test score of window 20; one run: no ±


def test_paper_numbers_beside_ours_and_not_run_rows(tmp_path):
    lrs = {"Sw": 0.6, "N-Sw": 0.8, "macro": 0.7}
    paths = [
        write_run(tmp_path, 0, 0, ["Sw", "N-Sw"], ["Sw", "N-Sw"], lrs, model="tempoformer", window=20, dataset="lrs"),
        write_run(tmp_path, 0, 0, ["A", "B"], ["A", "B"], {"A": 1.0, "B": 1.0, "macro": 1.0},
                  model="tempoformer", window=20, dataset="toy"),
    ]
    datasets = [Dataset("lrs", ["Sw", "N-Sw"], "LRS"), Dataset("toy", ["A", "B"])]
    out = tmp_path / "tables"
    aggregate(paths, datasets, out, figures_dir=tmp_path / "figures")

    table2 = (out / "table2.md").read_text()
    header = markdown_row(table2, ["Level", "Model"])
    assert header[2:9] == ["lrs Sw", "lrs Sw (paper)", "lrs N-Sw", "lrs N-Sw (paper)", "lrs macro",
                           "lrs macro (paper)", "lrs macro (pooled)"]
    assert "toy A (paper)" not in header and "toy A" in header  # no paper column: ours only
    assert markdown_row(table2, ["stream", "TempoFormer"])[2:9] == [
        "60.0", "62.0", "80.0", "75.9", "70.0", "68.9", "100.0"]
    assert markdown_row(table2, ["stream", "BiLSTM"])[2:9] == [
        "not run", "60.7", "not run", "75.0", "not run", "67.8", "not run"]
    assert markdown_row(table2, ["post", "Llama2-7B-U (10-shot)"])[3] == "52.5"

    table3 = (out / "table3.md").read_text()
    assert markdown_row(table3, ["-Temporal RoPE"])[1:3] == ["not run", "62.0"]
    table6 = (out / "table6.md").read_text()  # the paper's Table 6 is TalkLife only
    assert markdown_row(table6, ["TempoFormer (BERT)"])[1:3] == ["60.0", "–"]
    assert "roberta and tempoformer_roberta: not run with this config" in table6
    assert "roberta-base weights" not in table3  # the note is Table 6's alone
    table11 = (out / "table11.md").read_text()
    assert markdown_row(table11, ["5"])[1:3] == ["not run", "55.0"]
    assert markdown_row(table11, ["5"])[8] == "0" and markdown_row(table11, ["20"])[8] == "1"  # lrs runs
    assert markdown_row(table11, ["20"])[1:3] == ["60.0", "62.0"]
    assert "lrs = the paper's LRS" in table2

    # With a RoBERTa run the note names only the row still missing.
    paths.append(write_run(tmp_path, 0, 0, ["Sw", "N-Sw"], ["Sw", "N-Sw"], lrs, model="roberta", dataset="lrs"))
    aggregate(paths, datasets, tmp_path / "with_roberta")
    note = (tmp_path / "with_roberta" / "table6.md").read_text()
    assert "tempoformer_roberta: not run with this config" in note and "roberta and" not in note

    csv = pl.read_csv(out / "table2.csv")
    row = csv.filter((pl.col("model") == "bilstm") & (pl.col("dataset") == "lrs") & (pl.col("label") == "Sw"))
    assert row["ours"][0] == "not run" and row["paper"][0] == 60.7
    for n in (2, 3, 4, 6, 11):
        assert all((out / f"table{n}.{ext}").stat().st_size for ext in ("md", "csv", "tex", "html"))
    assert (tmp_path / "figures" / "figure3.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_significance_in_table2(tmp_path):
    # 40 test posts over 2 folds; TempoFormer right on all, FFN History (best dev baseline) on half
    gold = ["A", "B"] * 10
    wrong = ["B", "A"] * 5 + ["A", "B"] * 5
    paths = []
    for fold in (0, 1):
        for seed in (0, 1):
            paths.append(write_run(tmp_path, fold, seed, gold, gold, {"A": 1, "B": 1, "macro": 1},
                                   dev=0.9, model="tempoformer", window=5))
            paths.append(write_run(tmp_path, fold, seed, gold, wrong, {"A": .5, "B": .5, "macro": .5},
                                   dev=0.6, model="ffn_history", window=5))
            paths.append(write_run(tmp_path, fold, seed, gold, gold, {"A": 1, "B": 1, "macro": 1},
                                   dev=0.1, model="random", window=1))  # better on test, worse on dev
    aggregate(paths, [Dataset("toy", ["A", "B"])], tmp_path / "tables", bootstrap=Bootstrap(200))
    table = (tmp_path / "tables" / "table2.md").read_text()
    assert re.search(r"toy: TempoFormer w5 vs FFN History w5 \(folds 0, 1; seeds 0, 1\), "
                     r"difference \+50\.0 points, p = 0\.000", table)
    csv = pl.read_csv(tmp_path / "tables" / "table2.csv").filter(pl.col("p_value").is_not_null())
    assert csv.select("model", "label", "compared_with", "p_value").rows() == [
        ("tempoformer", "macro (pooled)", "ffn_history", 0.0)]


def test_significance_on_the_runs_both_models_have(tmp_path):
    # TempoFormer ran fold 0 seed 0 only (a CPU budget); FFN History all 2 folds x 2 seeds. The
    # test compares them on fold 0's posts and seed 0: both right there, so the difference is 0.
    gold = ["A", "B"] * 10
    wrong = ["B", "A"] * 5 + ["A", "B"] * 5
    paths = [write_run(tmp_path, 0, 0, gold, gold, {"A": 1, "B": 1, "macro": 1}, dev=0.9,
                       model="tempoformer", window=5)]
    for fold in (0, 1):
        for seed in (0, 1):
            pred = gold if fold == 0 else wrong
            paths.append(write_run(tmp_path, fold, seed, gold, pred, {"A": 1, "B": 1, "macro": 1},
                                   dev=0.6, model="ffn_history", window=5))
    aggregate(paths, [Dataset("toy", ["A", "B"])], tmp_path / "tables", bootstrap=Bootstrap(50))
    table = (tmp_path / "tables" / "table2.md").read_text()
    assert re.search(r"TempoFormer w5 vs FFN History w5 \(folds 0; seeds 0\), difference \+0\.0 points, "
                     r"p = 0\.500", table)


def test_variants_tested_against_the_full_model(tmp_path):
    # Full TempoFormer right on every post at w20 on folds 0-1 x seeds 0-1; -RoPE MHA right on half
    # (a real drop); RoBERT only on fold 0 seed 0, where it is as good: compared there only.
    gold = ["A", "B"] * 10
    wrong = ["B", "A"] * 5 + ["A", "B"] * 5
    perfect, half = {"A": 1, "B": 1, "macro": 1}, {"A": .5, "B": .5, "macro": .5}
    paths = []
    for fold in (0, 1):
        for seed in (0, 1):
            paths.append(write_run(tmp_path, fold, seed, gold, gold, perfect, dev=0.9, model="tempoformer", window=20))
            paths.append(write_run(tmp_path, fold, seed, gold, wrong, half, dev=0.6,
                                   model="tempoformer_no_rope", window=20))
    paths.append(write_run(tmp_path, 0, 0, gold, gold, perfect, dev=0.9, model="robert", window=20))
    aggregate(paths, [Dataset("toy", ["A", "B"])], tmp_path / "tables", bootstrap=Bootstrap(200))
    table3 = (tmp_path / "tables" / "table3.md").read_text()
    assert re.search(r"toy: -RoPE MHA w20 \(folds 0, 1; seeds 0, 1\), TempoFormer \+50\.0 points, "
                     r"p = 0\.000", table3)
    assert markdown_row(table3, ["-RoPE MHA"])[-1] == "4" and markdown_row(table3, ["-Stream embed."])[-1] == "0"
    table4 = (tmp_path / "tables" / "table4.md").read_text()
    assert re.search(r"toy: RoBERT w20 \(folds 0; seeds 0\), TempoFormer \+0\.0 points, p = 0\.500", table4)
    csv = pl.read_csv(tmp_path / "tables" / "table3.csv").filter(pl.col("p_value").is_not_null())
    assert csv.select("model", "label", "compared_with", "difference", "p_value").rows() == [
        ("tempoformer_no_rope", "macro (pooled)", "tempoformer", -50.0, 0.0)]
    table6 = (tmp_path / "tables" / "table6.md").read_text()
    assert "no TempoFormer variant of this table has runs" in table6


def test_bootstrap_takes_the_largest_block_of_shared_runs(tmp_path):
    # TempoFormer on folds 0-2 x seeds 0-1; RoBERT on folds 0-2 of seed 0 and fold 0 of seed 1 (a
    # seed begun on one fold). Seeds 0-1 share fold 0 only (2 runs); seed 0 alone has 3: tested
    # on folds 0-2 of seed 0, where RoBERT is wrong on fold 2 only.
    gold = ["A", "B"] * 10
    wrong = ["B", "A"] * 10
    perfect, zero = {"A": 1, "B": 1, "macro": 1}, {"A": 0, "B": 0, "macro": 0}
    paths = []
    for fold in (0, 1, 2):
        for seed in (0, 1):
            paths.append(write_run(tmp_path, fold, seed, gold, gold, perfect, dev=0.9, model="tempoformer", window=20))
        paths.append(write_run(tmp_path, fold, 0, gold, wrong if fold == 2 else gold, zero if fold == 2 else perfect,
                               dev=0.6, model="robert", window=20))
    paths.append(write_run(tmp_path, 0, 1, gold, gold, perfect, dev=0.6, model="robert", window=20))
    aggregate(paths, [Dataset("toy", ["A", "B"])], tmp_path / "tables", bootstrap=Bootstrap(200))
    table4 = (tmp_path / "tables" / "table4.md").read_text()
    # pooled over folds 0-2: RoBERT right on 40 of 60 posts, 20 of each class → macro 2/3
    assert re.search(r"toy: RoBERT w20 \(folds 0, 1, 2; seeds 0\), TempoFormer \+33\.3 points, "
                     r"p = 0\.000", table4)


def test_macro_f1_counts_weighted_posts():
    gold, pred = np.array([0, 0, 1, 1, 1]), np.array([0, 1, 1, 1, 0])
    # A: tp1 fp1 fn1 → 0.5; B: tp2 fp1 fn1 → 4/6 → macro 7/12
    assert macro_f1(gold, pred, 2) == pytest.approx(7 / 12)
    # post 0 twice, post 1 not at all ≡ gold AABBB pred AA B B A: A tp2 fp1 → 0.8; B tp2 fn1 → 0.8
    assert macro_f1(gold, pred, 2, np.array([2.0, 0, 1, 1, 1])) == pytest.approx(0.8)
    assert macro_f1(np.array([1, 1]), np.array([1, 1]), 2) == 0.5  # class 0 absent: F1 0


def test_bootstrap_p_values():
    rng = np.random.default_rng(1)
    gold = rng.integers(3, size=300)
    noisy = np.where(rng.random((2, 300)) < 0.5, rng.integers(3, size=(2, 300)), gold)
    good = np.stack([gold, gold])
    assert paired_bootstrap(gold, good, noisy, 3, resamples=300)["p_value"] < 0.01
    assert paired_bootstrap(gold, noisy, good, 3, resamples=300)["p_value"] > 0.99
    same = paired_bootstrap(gold, noisy, noisy, 3, resamples=300)
    assert same["p_value"] == 0.5 and same["difference"] == 0.0
    # seeded: the same call gives the same p-value
    noisier = np.where(rng.random((2, 300)) < 0.55, rng.integers(3, size=(2, 300)), gold)
    assert (paired_bootstrap(gold, noisy, noisier, 3, seed=4)["p_value"]
            == paired_bootstrap(gold, noisy, noisier, 3, seed=4)["p_value"])


def test_latex_is_balanced_and_escaped():
    table = Table("Results: 50% & more_of it", ["Model", "F1 (%)", "p_value"],
                  [["-Gate&Norm", "62.5 ± 1.0", "0.05"], ["a_b #1", "not run", "{x}"]],
                  notes=["100% sure & done_"])
    tex = table.latex("tab:x")
    assert tex.count("\\begin{tabular}") == tex.count("\\end{tabular}") == 1
    assert tex.count("\\begin{table*}") == tex.count("\\end{table*}") == 1
    spec = re.search(r"\\begin\{tabular\}\{(\w+)\}", tex)[1]
    body = tex[tex.index("\\toprule"):tex.index("\\bottomrule")]
    for line in body.splitlines():
        if line.endswith("\\\\"):
            assert len(re.findall(r"(?<!\\)&", line)) == len(spec) - 1, line
    text = tex.split("\n", 1)[1]  # after the "% requires booktabs" comment line
    for char in "%_#&":  # escaped everywhere but the column separators
        assert not re.search(rf"(?<!\\){char}", text.replace(" & ", " ")), char
    assert len(re.findall(r"(?<!\\)\{", text)) == len(re.findall(r"(?<!\\)\}", text))
    assert "62.5 $\\pm$ 1.0" in tex and "-Gate\\&Norm" in tex and "50\\% \\& more\\_of it" in tex


def test_table_rows_must_match_header():
    with pytest.raises(ValueError, match="row 0 has 1 cells"):
        Table("t", ["a", "b"], [["x"]])


def test_bad_metrics_file_is_named(tmp_path):
    bad = tmp_path / "metrics.json"
    bad.write_text(json.dumps({"dataset": "toy", "test": {}}))
    with pytest.raises(ValueError, match=r"metrics\.json: not a run's metrics file"):
        aggregate([bad], [Dataset("toy", ["A", "B"])], tmp_path / "tables")


def test_temporal_attention_tables_in_latex(tmp_path):
    from tempoformer.semantic_change.tables import write_tables

    path = tmp_path / "m.json"
    path.write_text(json.dumps({"dataset": "semeval_eng", "method": "temporal_attention", "seed": 0,
                                "pearson": 0.4, "spearman": 0.3, "n_scored": 36, "n_unscored": 1,
                                "n_targets": 37, "params": 22_700_000, "train_seconds": 1.0, "score_seconds": 2.0}))
    write_tables([path], tmp_path, {"semeval_eng": "Eng"})
    for n in (2, 3, 4):
        md = (tmp_path / f"temporal_attention_table{n}.md").read_text()
        tex = (tmp_path / f"temporal_attention_table{n}.tex").read_text()
        rows = [ln for ln in md.splitlines() if ln.startswith("| ")]
        body = tex[tex.index("\\toprule"):tex.index("\\bottomrule")]
        lines = [ln for ln in body.splitlines() if ln.endswith("\\\\")]
        assert len(lines) == len(rows)  # header and every row, none lost
        columns = len(re.search(r"\\begin\{tabular\}\{(\w+)\}", tex)[1])
        assert all(len(re.findall(r"(?<!\\)&", ln)) == columns - 1 for ln in lines)
    tex2 = (tmp_path / "temporal_attention_table2.tex").read_text()
    assert "0.400 (1 unscored)" in tex2 and "$\\rho$" in tex2
    assert "<td>0.400 (1 unscored)</td>" in (tmp_path / "temporal_attention_table2.html").read_text()


def test_coverage_counts_the_runs_left_and_tests_each_variant(tmp_path):
    # TempoFormer w20: seeds 0 and 1 on folds 0-4, seed 12 on folds 0-1 (12 of the paper's 20
    # runs); -RoPE MHA w20: seed 0 on folds 0-4, right on half the posts where TempoFormer is
    # right on all. LRS paper column: Table 11 prints TempoFormer w20 at 68.9, Table 3 -RoPE MHA 66.0.
    gold = ["A", "B"] * 10
    wrong = ["B", "A"] * 5 + ["A", "B"] * 5
    perfect, half = {"A": 1, "B": 1, "macro": 1}, {"A": .5, "B": .5, "macro": .5}
    paths = []
    for seed, folds in ((0, range(5)), (1, range(5)), (12, range(2))):
        for fold in folds:
            paths.append(write_run(tmp_path, fold, seed, gold, gold, perfect, dev=0.9, model="tempoformer", window=20))
    for fold in range(5):
        paths.append(write_run(tmp_path, fold, 0, gold, wrong, half, dev=0.6, model="tempoformer_no_rope", window=20))
    aggregate(paths, [Dataset("toy", ["A", "B"], "LRS")], tmp_path / "tables", bootstrap=Bootstrap(200))
    md = (tmp_path / "tables" / "coverage.md").read_text()
    assert markdown_row(md, ["toy", "TempoFormer"]) == [
        "toy", "TempoFormer", "yes", "0, 1, 12 (folds 0-1)", "8 (seed 12: folds 2-4; seed 123: all folds)",
        "20", "12", "100.0 ± 0.0", "100.0 ± 0.0", "68.9", "–"]
    assert markdown_row(md, ["toy", "-RoPE MHA"]) == [
        "toy", "-RoPE MHA", "yes", "0", "15 (seeds 1, 12, 123: all folds)", "20", "5", "50.0 ± 0.0",
        "50.0", "66.0", "+50.0 (p = 0.000; seeds 0 x folds 0-4)"]
    assert "Not run: toy -Temporal RoPE, toy -Stream embed., toy -Gate&Norm, toy RoBERT" in md
    csv = pl.read_csv(tmp_path / "tables" / "coverage.csv")
    assert csv.select("model", "missing_runs", "difference").rows() == [
        ("tempoformer", 8, None), ("tempoformer_no_rope", 15, 50.0)]


def test_coverage_spans_and_missing_runs():
    from tempoformer.reporting.coverage import missing_runs, seeds_text, spans

    assert spans([4, 0, 1, 2, 7, 8]) == "0-2, 4, 7-8" and spans([3]) == "3"
    every = {(f, s) for f in range(5) for s in (0, 1, 12, 123)}
    assert missing_runs(every) == (0, "none")
    assert missing_runs(every - {(3, 1), (3, 12), (0, 123)}) == (3, "seeds 1, 12: fold 3; seed 123: fold 0")
    assert seeds_text({(0, 7), (2, 7), (1, 0)}) == "0 (fold 1), 7 (folds 0, 2)"


def test_timeline_bootstrap_keeps_each_timelines_posts_together():
    """Two timelines of 100 posts, labels alternating 0/1. A is right on every post of t1 and
    wrong on 10 posts of t2; B is wrong on 40 posts of t1 and right on all of t2. Over the posts
    A is clearly better (10 errors against 40: drawing posts, p ~ 0). But the gain is all in t1:
    drawing timelines, a resample is {t1, t1} (A better), {t1, t2} (A better) or {t2, t2} (B
    better: A makes the only errors), the last with probability 1/4, so p ~ 0.25."""
    gold = np.tile([0, 1], 100)
    timeline = np.repeat(["t1", "t2"], 100)
    a, b = gold.copy(), gold.copy()
    a[100:110] = 1 - a[100:110]  # A: 10 errors in t2
    b[:40] = 1 - b[:40]  # B: 40 errors in t1
    in_t2 = (timeline == "t2").astype(float)
    assert macro_f1(gold, a, 2, in_t2) < macro_f1(gold, b, 2, in_t2) == 1.0  # {t2, t2}: B better
    assert macro_f1(gold, a, 2) > macro_f1(gold, b, 2)
    posts = paired_bootstrap(gold, a, b, 2, resamples=2000)
    timelines = paired_bootstrap(gold, a, b, 2, resamples=2000, clusters=timeline)
    assert posts["p_value"] < 0.001 and posts["unit"] == "post" and posts["units"] == 200
    assert 0.22 < timelines["p_value"] < 0.28 and timelines["unit"] == "timeline" and timelines["units"] == 2
    assert timelines["difference"] == posts["difference"]  # the observed difference is the same


def test_table2_bootstrap_draws_timelines_by_default_and_posts_on_request(tmp_path):
    """The hand-built case above as two folds' runs: the tables' test is the timeline bootstrap
    unless the post bootstrap is asked for, and the note says which."""
    gold = list(np.tile(["A", "B"], 50))
    rows = {0: list(range(0, 100)), 1: list(range(100, 200))}  # write_run: timeline = row // 2
    ours = {0: gold, 1: [("B" if g == "A" else "A") if i < 10 else g for i, g in enumerate(gold)]}
    theirs = {0: [("B" if g == "A" else "A") if i < 40 else g for i, g in enumerate(gold)], 1: gold}
    paths = []
    for fold in (0, 1):
        paths.append(write_run(tmp_path, fold, 0, gold, ours[fold], {"A": 1, "B": 1, "macro": 1}, dev=0.9,
                               model="tempoformer", window=5, rows=rows[fold]))
        paths.append(write_run(tmp_path, fold, 0, gold, theirs[fold], {"A": 1, "B": 1, "macro": 1}, dev=0.6,
                               model="ffn_history", window=5, rows=rows[fold]))
    p = {}
    for unit in ("timeline", "post"):
        out = tmp_path / unit
        aggregate(paths, [Dataset("toy", ["A", "B"])], out, bootstrap=Bootstrap(500, unit=unit))
        note = (out / "table2.md").read_text()
        assert ("500 resamples of whole test timelines (each keeping all its posts) (seed 0)" in note) == (unit == "timeline")
        assert ("500 resamples of single test posts (seed 0)" in note) == (unit == "post")
        p[unit] = pl.read_csv(out / "table2.csv").filter(pl.col("p_value").is_not_null())["p_value"][0]
    # the same draws as paired_bootstrap given the same timeline ids (100 timelines of 2 posts)
    gold_codes = np.array([0 if g == "A" else 1 for g in gold * 2])
    code = lambda preds: np.array([[0 if x == "A" else 1 for x in preds[0] + preds[1]]])  # noqa: E731
    timelines = np.array([f"t{r // 2}" for r in rows[0] + rows[1]])
    assert p["timeline"] == paired_bootstrap(gold_codes, code(ours), code(theirs), 2, 500, 0, timelines)["p_value"]
    assert p["post"] == paired_bootstrap(gold_codes, code(ours), code(theirs), 2, 500, 0)["p_value"]


def test_rows_name_the_backbone_their_runs_used(tmp_path):
    """A post-level 'bert' entry and TempoFormer run on MiniLM are never labelled BERT."""
    from tempoformer.reporting.tables import backbone_label

    assert backbone_label("BERT", "minilm") == "MiniLM-L6 (the paper's BERT row)"
    assert backbone_label("TempoFormer (BERT)", "minilm") == "TempoFormer (MiniLM-L6)"
    assert backbone_label("TempoFormer (RoBERTa)", "roberta-base") == "TempoFormer (RoBERTa)"
    assert backbone_label("BERT", "bert-base-uncased") == "BERT"
    assert backbone_label("RoBERT", "minilm") == "RoBERT"  # a model's name, not a backbone
    assert backbone_label("BERT", None) == "BERT"
    gold = ["A", "B"] * 10
    paths = [write_run(tmp_path, 0, 0, gold, gold, {"A": 1, "B": 1, "macro": 1}, model=m, window=w)
             for m, w in (("bert", 1), ("tempoformer", 5))]
    aggregate(paths, [Dataset("toy", ["A", "B"])], tmp_path / "tables", bootstrap=Bootstrap(20),
              backbones={"bert": "minilm", "tempoformer": "minilm"})
    table2, table6 = ((tmp_path / "tables" / f"table{n}.md").read_text() for n in (2, 6))
    assert "| post | MiniLM-L6 (the paper's BERT row) |" in table2 and "| post | BERT |" not in table2
    assert "| TempoFormer (MiniLM-L6) |" in table6 and "(BERT) |" not in table6
    assert "Backbones: BERT, TempoFormer: MiniLM-L6." in table2
