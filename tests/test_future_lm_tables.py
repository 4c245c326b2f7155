"""Table 3 of the future LM stage over several seeds, checked by hand."""

import polars as pl
import pytest

from tempoformer.future_lm.tables import paper_numbers, table3


def _run(tmp_path, model, spec, seed, ppl_token, cm, nll):
    folder = tmp_path / model / f"seed{seed}"
    folder.mkdir(parents=True)
    pl.DataFrame({"year": [2021] * 3, "doc_id": [0, 1, 2], "nll": nll, "n_tokens": [10, 10, 10]}).write_parquet(
        folder / "scores.parquet")
    year = {"ppl_token": ppl_token, "ppl_word": ppl_token * 5, "cpl": ppl_token * 10, "cpl_piece": ppl_token * 9}
    return {"model": model, "seed": seed, "spec": spec, "cm": cm, "test_year": 2021, "dev_year": 2020,
            "years": {"2021": year}, "_dir": str(folder)}


def test_table3_over_two_seeds_by_hand(tmp_path):
    base, freq = {"type": "baseline"}, {"type": "frequency", "alpha": 1.0}
    runs = [
        _run(tmp_path, "baseline", base, 0, 100.0, 0.10, [20.0, 30.0, 40.0]),
        _run(tmp_path, "baseline", base, 1, 110.0, 0.20, [22.0, 30.0, 38.0]),
        _run(tmp_path, "frequency", freq, 0, 90.0, 0.30, [19.0, 31.0, 35.0]),
        _run(tmp_path, "frequency", {**freq, "alpha": 0.5}, 1, 96.0, 0.30, [19.0, 29.0, 37.0]),
    ]
    table, csv = table3(runs, paper_numbers(), ["baseline"], ["baseline", "frequency"],
                        {"resamples": 200, "seed": 0})
    rows = {row[1]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["baseline"]["Seeds"] == "2"
    assert rows["baseline"]["PPL/token"] == "105.0 ± 7.1"          # mean and sample sd of 100, 110
    assert rows["baseline"]["CM"] == "0.150 ± 0.071"
    assert rows["baseline"]["Sign test vs Baseline"] == "–"
    assert rows["frequency"]["PPL/token"] == "93.0 ± 4.2"          # 90, 96
    assert rows["frequency"]["CPL"] == "930.0 ± 42.4"
    assert rows["frequency"]["Chosen on dev"] == "α=0.5, α=1"      # each seed chose its own alpha
    # Seed means per abstract: baseline 21, 30, 39; frequency 19, 30, 36: two wins, one tie.
    assert rows["frequency"]["Sign test vs Baseline"] == "p=0.5 (2 better / 0 worse)"
    # The frequency model is never worse on a resample; only an all-tie draw (doc 1 three times)
    # counts half, so p is small but not zero at most.
    p = float(rows["frequency"]["Bootstrap p vs Baseline"])
    assert 0.0 <= p < 0.05
    ppl = csv.filter((pl.col("model") == "frequency") & (pl.col("metric") == "ppl_token")).row(0, named=True)
    assert ppl["mean"] == pytest.approx(93.0) and ppl["sd"] == pytest.approx(4.2426, abs=1e-4)
    assert ppl["n_seeds"] == 2 and ppl["sign_p_vs_baseline"] == pytest.approx(0.5)
    # per seed: 90 / 100 - 1 = -10%, 96 / 110 - 1 = -12.7%
    assert rows["frequency"]["ΔPPL/token vs Baseline, per seed"] == "-11.4% ± 1.9 (lower in 2 of 2)"
