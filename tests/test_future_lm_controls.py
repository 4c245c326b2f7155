"""The future LM stage's controls (issue 69): the static-bias model, the unigram oracle's log ratio
against the training years, significance against two baselines, Baseline-n's start point, and the
options that name the paper's readings."""

import math

import numpy as np
import polars as pl
import pytest
import torch

from tempoformer.future_lm.biases import BiasSpec, TemporalLM, YearFeatures
from tempoformer.future_lm.evaluate import Doc
from tempoformer.future_lm.frequency import smoothed_log_frequency
from tempoformer.future_lm.lm import CausalLM, LMConfig
from tempoformer.future_lm.model_types import alpha_applies, check_model_entry, resolve_baselines
from tempoformer.future_lm.tables import paper_numbers, table3
from tempoformer.future_lm.tokens import Vocab
from tempoformer.future_lm.train import FitSettings, fit, start_checkpoint
from tempoformer.future_lm.unigram import evaluate_predictors, fixed_bias, training_log_f

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def zero_lm(vocab_size: int) -> CausalLM:
    """A causal LM whose logits are exactly 0 (zero embeddings, tied output): softmax uniform, so
    what a bias does to the probabilities can be computed by hand."""
    lm = CausalLM(LMConfig(vocab_size=vocab_size, d_model=8, n_layers=1, n_heads=2, d_ff=16, context=16,
                           dropout=0.0))
    with torch.no_grad():
        lm.output_weight.zero_()
    assert lm.output_weight.abs().sum() == 0
    return lm


def plain_features(vocab_size: int, years, counts) -> YearFeatures:
    freq = {"years": np.asarray(years), "log_f": smoothed_log_frequency(np.asarray(counts)),
            "counts": np.asarray(counts), "no_bias": np.asarray([PAD, UNK, BOS]), "smoothing": np.asarray(1.0)}
    return YearFeatures(freq, None, last_train_year=max(years))


def doc(name, year, ids):
    n = len(ids)
    return Doc(name, year, list(ids), np.zeros(n, bool), np.zeros(n, bool), n, 0)


# ------------------------------------------------------------------ static bias


def test_static_bias_learns_a_time_invariant_unigram_shift():
    # Every abstract of every year is "7 7 7 8" (+ EOS): targets 7 x3, 8 x1, EOS x1, the same
    # shift in each year. On a base LM whose logits are 0 (frozen: lr 0), the best static bias
    # gives the targets' log ratios: b_7 - b_8 = b_7 - b_EOS = log 3, b_8 = b_EOS.
    V = 10
    torch.manual_seed(0)
    model = TemporalLM(zero_lm(V), BiasSpec("static_bias"), plain_features(V, [2017, 2018], np.ones((2, V))))
    vocab = Vocab(list(range(V)), True, PAD, UNK, BOS, EOS)
    train = [doc(f"t{i}", 2017 + i % 2, [7, 7, 7, 8]) for i in range(8)]
    dev = [doc("d", 2019, [7, 7, 7, 8])]
    state, record = fit(model, train, dev, vocab,
                        FitSettings(epochs=60, patience=60, batch_size=4, lr=0.0, lr_new=0.3), seed=0)
    model.load_state_dict(state)
    b = model.static.detach()
    assert b[7] - b[8] == pytest.approx(math.log(3), abs=0.01)
    assert b[7] - b[EOS] == pytest.approx(math.log(3), abs=0.01)
    assert b[8] == pytest.approx(float(b[EOS]), abs=1e-3)
    assert b[:3].abs().max() == 0                        # no bias on PAD, UNK, BOS: never moved
    # uniform over 10 entries (ppl 10) -> close to the targets' own entropy, exp(-0.6 ln 0.6 - 0.4 ln 0.2) = 2.59
    assert record["epochs"][0]["dev_ppl"] == pytest.approx(10.0, rel=1e-5)
    assert record["best_dev_ppl"] < 2.8
    assert model.lm.output_weight.abs().sum() == 0       # the base LM did not move: the bias did it all
    # no time: the same logits for any year, the training years or later
    ids = torch.tensor([[BOS, 7, 7]])
    with torch.no_grad():
        logits = [model.logits(ids, y)[0] for y in (2017, 2019, 2030)]
    torch.testing.assert_close(logits[0], logits[1], rtol=0, atol=0)
    torch.testing.assert_close(logits[0], logits[2], rtol=0, atol=0)


def test_static_bias_starts_as_the_base_lm_and_counts_as_new_parameters():
    V = 12
    torch.manual_seed(0)
    base = CausalLM(LMConfig(vocab_size=V, d_model=8, n_layers=1, n_heads=2, d_ff=16, context=16, dropout=0.0))
    model = TemporalLM(base, BiasSpec("static_bias"), plain_features(V, [2017], np.ones((1, V)))).eval()
    ids = torch.randint(4, V, (2, 5))
    with torch.no_grad():
        torch.testing.assert_close(model.logits(ids, 2018)[0], base(ids), rtol=0, atol=0)
    new = model.new_parameters()
    assert len(new) == 1 and new[0] is model.static and new[0].shape == (V,)  # trained at lr_new, as the others


# ------------------------------------------------------------------ unigram log ratio


def test_log_ratio_oracle_on_a_three_word_vocabulary_by_hand():
    # entries: PAD, UNK, BOS, EOS (3), and the words 4, 5, 6; counts of 2018, 2019 (training) and 2020
    counts = np.array([[0, 0, 0, 2, 6, 2, 0],
                       [0, 1, 0, 2, 4, 2, 2],
                       [0, 0, 0, 2, 1, 1, 6]])
    V = counts.shape[1]
    freq = {"years": np.array([2018, 2019, 2020]), "log_f": smoothed_log_frequency(counts), "counts": counts,
            "no_bias": np.array([PAD, UNK, BOS]), "smoothing": np.asarray(1.0)}
    # training years pooled: [0, 1, 0, 4, 10, 4, 2], N = 21; add-one over 7 entries: (c + 1) / 28
    train = np.log(np.array([1, 2, 1, 5, 11, 5, 3]) / 28)
    np.testing.assert_allclose(training_log_f(freq, (2018, 2019)), train, rtol=1e-12)
    # 2020: N = 10, (c + 1) / 17
    oracle = np.log(np.array([1, 1, 1, 3, 2, 2, 7]) / 17)
    beta = 0.5
    expected = beta * (oracle - train)
    expected[[PAD, UNK, BOS]] = 0.0
    got = fixed_bias(freq["log_f"][2], beta, "training_years", train, freq["no_bias"])
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # word 6 rose (3/28 -> 7/17): raised; word 4 fell (11/28 -> 2/17): lowered
    assert got[6] == pytest.approx(0.5 * math.log((7 / 17) / (3 / 28))) and got[6] > 0 > got[4]
    # the absolute form (reference none): β (log f - mean), centred, the same entries pinned at 0
    absolute = beta * (oracle - oracle.mean())
    absolute[[PAD, UNK, BOS]] = 0.0
    np.testing.assert_allclose(fixed_bias(freq["log_f"][2], beta, "none", None, freq["no_bias"]), absolute, rtol=1e-12)

    # Through evaluate_predictors on an LM with logits 0: p = softmax(bias), so the dev year's
    # perplexity is exp(-mean log softmax(b)[target]) over its targets.
    torch.manual_seed(0)
    model = TemporalLM(zero_lm(V), BiasSpec("baseline"))
    vocab = Vocab(list(range(V)), True, PAD, UNK, BOS, EOS)
    dev = [doc("a", 2020, [6, 6, 4]), doc("b", 2020, [5, 6])]
    targets = [6, 6, 4, EOS, 5, 6, EOS]
    for reference, bias in (("training_years", expected), ("none", absolute)):
        out = evaluate_predictors(model, freq, {"dev": dev}, vocab, 1, (2018, 2019), False, [0.0, beta],
                                  reference=reference)
        log_p = bias - np.log(np.exp(bias).sum())
        ppl = math.exp(-np.mean(log_p[targets]))
        assert out["oracle"]["lm_ppl_by_beta"]["dev"][str(beta)] == pytest.approx(ppl, rel=1e-5), reference
        assert out["oracle"]["lm_ppl_by_beta"]["dev"]["0.0"] == pytest.approx(V, rel=1e-5)  # uniform
    with pytest.raises(ValueError, match="reference"):
        evaluate_predictors(model, freq, {"dev": dev}, vocab, 1, (2018, 2019), False, [0.0], reference="absolute")
    with pytest.raises(ValueError, match="training year"):
        training_log_f(freq, (2000, 2001))
    with pytest.raises(ValueError, match="counts"):
        training_log_f({"years": freq["years"], "log_f": freq["log_f"]}, (2018, 2019))


# ------------------------------------------------------------------ two baselines


def _run(tmp_path, model, spec, seed, ppl_token, nll):
    folder = tmp_path / model / f"seed{seed}"
    folder.mkdir(parents=True)
    pl.DataFrame({"year": [2021] * len(nll), "doc_id": list(range(len(nll))), "nll": nll,
                  "n_tokens": [10] * len(nll)}).write_parquet(folder / "scores.parquet")
    year = {"ppl_token": ppl_token, "ppl_word": ppl_token, "cpl": ppl_token, "cpl_piece": ppl_token}
    return {"model": model, "seed": seed, "spec": spec, "cm": 0.1, "test_year": 2021, "dev_year": 2020,
            "years": {"2021": year}, "_dir": str(folder)}


def test_every_model_is_tested_against_both_baselines_by_hand(tmp_path):
    base, recent = {"type": "baseline"}, {"type": "baseline_n", "n": 2}
    freq = {"type": "frequency", "alpha": 1.0}
    runs = [_run(tmp_path, "baseline", base, 0, 100.0, [30.0, 30.0, 30.0, 30.0]),
            _run(tmp_path, "baseline", base, 1, 110.0, [30.0, 30.0, 30.0, 30.0]),
            _run(tmp_path, "baseline_n", recent, 0, 95.0, [20.0, 20.0, 20.0, 38.0]),
            _run(tmp_path, "baseline_n", recent, 1, 99.0, [20.0, 20.0, 20.0, 38.0]),
            _run(tmp_path, "frequency", freq, 0, 90.0, [25.0, 25.0, 25.0, 25.0]),
            _run(tmp_path, "frequency", freq, 1, 100.0, [25.0, 25.0, 25.0, 25.0])]
    table, csv = table3(runs, paper_numbers(), ["baseline", "baseline_n"], ["baseline", "baseline_n", "frequency"],
                        {"resamples": 200, "seed": 0})
    rows = {row[1]: dict(zip(table.header, row)) for row in table.rows}
    f = rows["frequency"]
    # vs Baseline: lower on all 4 abstracts: two-sided binomial p = 2 / 2^4
    assert f["Sign test vs Baseline"] == "p=0.125 (4 better / 0 worse)"
    assert float(f["Bootstrap p vs Baseline"]) == 0.0       # lower on every abstract: never worse on a resample
    # vs Baseline-n: lower on 1 (38 -> 25), higher on 3 (20 -> 25): p = 2 (1 + 4) / 16
    assert f["Sign test vs Baseline-n"] == "p=0.625 (1 better / 3 worse)"
    # totals 100 vs 80 + 18 w_3 (w_3: draws of abstract 3 among 4): not lower unless w_3 >= 2,
    # P(w_3 <= 1) = (3/4)^4 + 4 (1/4) (3/4)^3 = 0.738
    assert 0.6 < float(f["Bootstrap p vs Baseline-n"]) < 0.87
    # per seed: 90/100 - 1 = -10%, 100/110 - 1 = -9.09%: mean -9.5, sd 0.64; vs Baseline-n -5.26%, +1.01%
    assert f["ΔPPL/token vs Baseline, per seed"] == "-9.5% ± 0.6 (lower in 2 of 2)"
    assert f["ΔPPL/token vs Baseline-n, per seed"] == "-2.1% ± 4.4 (lower in 1 of 2)"
    assert rows["baseline"]["Sign test vs Baseline"] == "–"
    assert rows["baseline"]["Sign test vs Baseline-n"] == "p=0.625 (1 better / 3 worse)"
    assert rows["baseline_n"]["Sign test vs Baseline-n"] == "–"
    ppl = csv.filter((pl.col("model") == "frequency") & (pl.col("metric") == "ppl_token")).row(0, named=True)
    assert ppl["sign_p_vs_baseline"] == pytest.approx(0.125) and ppl["sign_p_vs_baseline_n"] == pytest.approx(0.625)
    assert (ppl["sign_better_vs_baseline_n"], ppl["sign_worse_vs_baseline_n"]) == (1, 3)
    assert ppl["delta_ppl_pct_vs_baseline"] == pytest.approx(np.mean([-10.0, 100 * (100 / 110 - 1)]))
    assert ppl["seeds_lower_vs_baseline_n"] == 1
    assert "Baseline, Baseline-n" in " ".join(table.notes)
    # a baseline that did not run is left out of the columns, not an error
    only, _ = table3([r for r in runs if r["model"] != "baseline_n"], paper_numbers(), ["baseline", "baseline_n"],
                     None, {"resamples": 50, "seed": 0})
    assert not any("Baseline-n" in h for h in only.header)


def test_baselines_setting_resolves_and_is_validated():
    models = {"baseline": {}, "baseline_n": {}, "frequency": {}}
    assert resolve_baselines({}, models) == ["baseline", "baseline_n"]
    assert resolve_baselines({}, {"baseline": {}}) == ["baseline"]
    assert resolve_baselines({"baseline": "baseline"}, models) == ["baseline"]          # the older single key
    assert resolve_baselines({"baselines": ["baseline_n", "baseline"]}, models) == ["baseline_n", "baseline"]
    with pytest.raises(ValueError, match="not both"):
        resolve_baselines({"baseline": "baseline", "baselines": ["baseline"]}, models)
    with pytest.raises(ValueError, match="distinct"):
        resolve_baselines({"baselines": ["baseline", "baseline"]}, models)
    with pytest.raises(ValueError, match="non-empty"):
        resolve_baselines({"baselines": []}, models)
    with pytest.raises(ValueError, match="no entry under future_lm.models"):
        resolve_baselines({"baselines": ["baseline", "recent"]}, models)


# ------------------------------------------------------------------ Baseline-n's start


def test_baseline_n_start_resolves_the_right_checkpoint():
    recent = {"2": "r/pretrained_recent2.pt", 3: "r/pretrained_recent3.pt"}
    n2, n3 = BiasSpec("baseline_n", n=2), BiasSpec("baseline_n", n=3)
    assert n2.start == "base"                                       # the paper's reading is the default
    assert start_checkpoint(n2, "r/pretrained.pt", recent, scratch=True) == "r/pretrained_recent2.pt"
    assert start_checkpoint(n3, "r/pretrained.pt", recent, scratch=True) == "r/pretrained_recent3.pt"
    pretrained = BiasSpec("baseline_n", n=2, start="pretrained")
    assert start_checkpoint(pretrained, "r/pretrained.pt", recent, scratch=True) == "r/pretrained.pt"
    # a pretrained base model: pretrain trains nothing, pretrained.pt is the base model itself
    assert start_checkpoint(n2, "r/pretrained.pt", None, scratch=False) == "r/pretrained.pt"
    for spec in (BiasSpec("baseline"), BiasSpec("frequency"), BiasSpec("static_bias")):
        assert start_checkpoint(spec, "r/pretrained.pt", recent, scratch=True) == "r/pretrained.pt"
    with pytest.raises(ValueError, match=r"n=4 .*--recent-years 4"):
        start_checkpoint(BiasSpec("baseline_n", n=4), "r/pretrained.pt", recent, scratch=True)


def test_pretraining_on_the_recent_years_only(tmp_path, monkeypatch):
    # run_pretrain --recent-years n trains on the last n training years and says so in its info
    from tempoformer.future_lm import cli

    seen = {}

    def fake_fit(model, train_docs, dev_docs, vocab, settings, seed, device, label):
        seen["years"], seen["label"] = sorted({d.year for d in train_docs}), label
        return model.state_dict(), {"best_dev_ppl": 1.0}

    docs = {"train": [doc(f"{y}", y, [4, 5]) for y in (2015, 2016, 2017, 2018, 2019)], "dev": [doc("d", 2020, [4])]}

    class Splits:
        train = (2015, 2019)

    monkeypatch.setattr(cli, "_split_docs", lambda tokens, counts: (None, Splits, docs))
    monkeypatch.setattr("tempoformer.future_lm.tokens.read_vocab",
                        lambda path: Vocab(list(range(8)), True, PAD, UNK, BOS, EOS))
    monkeypatch.setattr("tempoformer.future_lm.train.fit", fake_fit)
    settings = {"base_model": "scratch", "lm": {"d_model": 8, "n_layers": 1, "n_heads": 2, "d_ff": 16, "context": 8}}
    info = cli.run_pretrain("t", "v", "c", str(tmp_path / "recent2.pt"), settings, seed=0, threads=1, device="cpu",
                            recent_years=2)
    assert seen["years"] == [2018, 2019] and "last 2 training years" in seen["label"]
    assert info["recent_years"] == 2 and info["train_docs"] == 2
    info = cli.run_pretrain("t", "v", "c", str(tmp_path / "all.pt"), settings, seed=0, threads=1, device="cpu")
    assert seen["years"] == [2015, 2016, 2017, 2018, 2019] and info["recent_years"] is None
    with pytest.raises(ValueError, match="only a scratch LM"):
        cli.run_pretrain("t", "v", "c", str(tmp_path / "x.pt"), {"base_model": "gpt2"}, recent_years=2)


# ------------------------------------------------------------------ the named options


def test_alpha_scope_context2_is_the_papers_eq_10():
    assert alpha_applies("context2") and not alpha_applies("frequency") and not alpha_applies("static_bias")
    assert alpha_applies("frequency_nolstm")  # its α is its only weight, under either scope
    assert all(alpha_applies(t, "all") for t in ("static_bias", "frequency_nolstm", "frequency", "context", "context2"))
    assert not alpha_applies("baseline", "all")
    BiasSpec("context2", alpha=1e-3)                                  # Eq. 10's α: any value
    BiasSpec("context2", alpha=1.0, alpha_learned=True)
    BiasSpec("frequency", alpha=0.1, alpha_scope="all")               # this code's first reading
    BiasSpec("frequency_nolstm", alpha=0.1, alpha_learned=True)        # its feature's weight
    for kind in ("static_bias", "frequency", "context"):
        with pytest.raises(ValueError, match="alpha_scope: all"):
            BiasSpec(kind, alpha=0.1)
        with pytest.raises(ValueError, match=r"\(learned\)"):
            BiasSpec(kind, alpha_learned=True)
    with pytest.raises(ValueError, match="future_lm.models.f: a frequency model with alpha 1, 0.1"):
        check_model_entry({"type": "frequency", "alpha": [1.0, 0.1]}, "future_lm.models.f")


def test_context_options_change_the_lstm_input():
    V, D = 9, 5
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 3, size=(3, V))
    freq = {"years": np.array([2017, 2018, 2019]), "log_f": smoothed_log_frequency(counts), "counts": counts,
            "no_bias": np.array([PAD, UNK, BOS])}
    ctx = {"years": np.array([2017, 2018, 2019]), "vectors": rng.normal(size=(3, V, D)).astype(np.float16),
           "counts": counts}
    f = YearFeatures(freq, ctx, last_train_year=2019)
    plain, flagged = f.context_history(2019), f.context_history(2019, presence_flag=True)
    assert plain.shape == (V, 2, D) and flagged.shape == (V, 2, D + 1)
    np.testing.assert_array_equal(flagged[..., -1].numpy(), (counts[:2].T > 0).astype(np.float32))
    torch.testing.assert_close(flagged[..., :D], plain)
    lm = CausalLM(LMConfig(vocab_size=V, d_model=8, n_layers=1, n_heads=2, d_ff=16, context=8, dropout=0.0))
    paper = TemporalLM(lm, BiasSpec("context"), f).history_net          # the LSTM over V_iw directly
    assert paper.proj is None and paper.lstm.input_size == D
    ours = TemporalLM(lm, BiasSpec("context", context_proj=4, presence_flag=True), f).history_net
    assert ours.proj.in_features == D + 1 and ours.lstm.input_size == 4


@pytest.mark.parametrize("spec, match", [
    (dict(type="context", alpha_scope="frequency"), "alpha_scope"),
    (dict(type="baseline_n", n=2, start="scratch"), "start"),
    (dict(type="frequency", start="pretrained"), "Baseline-n's option"),
    (dict(type="context", context_proj=0), "context_proj"),
    (dict(type="static"), "type"),
])
def test_bad_option_values_are_refused_by_name(spec, match):
    with pytest.raises(ValueError, match=match):
        BiasSpec.from_dict(spec)
    with pytest.raises(ValueError, match="reference"):
        fixed_bias(np.zeros(3), 1.0, "absolute", None, [])
