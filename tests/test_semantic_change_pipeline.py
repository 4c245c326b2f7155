"""Embedded graded-change corpus, Algorithm 1 end to end, post-pretraining, save/load, tables, CLI."""

import json
from copy import deepcopy

import numpy as np
import polars as pl
import pytest
import torch

from tempoformer.cli import main
from tempoformer.semantic_change.cli import METHODS, register
from tempoformer.semantic_change.data import build_corpus, load_dataset
from tempoformer.semantic_change.encoding import WordPieceEncoder
from tempoformer.semantic_change.model import TemporalSpec, build_model, load_model, save_model
from tempoformer.semantic_change.pretrain import MLMPretrainSettings, post_pretrain
from tempoformer.semantic_change.scoring import ScoreSettings, change_scores, correlations, sample_occurrences
from tempoformer.semantic_change.synthetic import build_synthetic, write_release
from tempoformer.semantic_change.tables import write_tables
from test_semantic_change import tiny_bert


@pytest.fixture(scope="module")
def tokenizer():
    from tempoformer.semantic_change.model import load_tokenizer

    return load_tokenizer("minilm")


FAKE = ([["i", "like", "my", "dog", "a", "lot"]] * 12 + [["my", "cat", "is", "very", "old", "now"]] * 12
        + [["we", "went", "to", "the", "old", "school", str(i)] for i in range(12)]
        + [["nothing", "special", "here", "at", "all", str(i)] for i in range(12)]
        + [["just", "filler", "words", "in", "here", str(i)] for i in range(12)])


def test_synthetic_corpus_is_graded_and_deterministic(tmp_path):
    kwargs = dict(n_per_period=4, n_filler=3, pairs=[("dog", "school"), ("cat", "nothing")], levels=[0.5, 0.0],
                  sentences=FAKE)
    a, b = build_synthetic(seed=3, **kwargs), build_synthetic(seed=3, **kwargs)
    assert a.sentences == b.sentences and a.graded == b.graded
    assert sorted(a.graded.values()) == [0.0, 0.5]
    changed = next(t for t, p in a.graded.items() if p == 0.5)
    donor = a.donors[changed]
    first, second = ([s.split() for s in period] for period in a.sentences)
    assert len(first) == len(second) == 2 * 4 + 3
    # Half of the changed target's period-2 sentences are donor contexts with the donor replaced.
    donor_contexts = {tuple(changed if w == donor else w for w in s) for s in FAKE if donor in s}
    assert sum(tuple(s) in donor_contexts for s in second) == 2  # round(0.5 * 4) moved
    assert not any(tuple(s) in donor_contexts for s in first)
    assert all(donor not in s for s in second)
    write_release(a, tmp_path / "x")
    write_release(b, tmp_path / "y")
    for name in ("corpus1/lemma/chitchat1.txt.gz", "corpus2/lemma/chitchat2.txt.gz", "truth/graded.txt"):
        assert (tmp_path / "x" / name).read_bytes() == (tmp_path / "y" / name).read_bytes()
    corpus = load_dataset({"format": "synthetic", "path": str(tmp_path / "x")}, "syn")
    assert corpus.periods == ["t1", "t2"] and corpus.graded == a.graded
    assert [len(p) for p in corpus.occurrences[changed]] == [4, 4]
    with pytest.raises(ValueError, match="lower n_per_period"):
        build_synthetic(seed=0, n_per_period=40, n_filler=1, pairs=[("dog", "school")], levels=[1.0], sentences=FAKE)


@pytest.fixture(scope="module")
def chitchat_graded(tmp_path_factory):
    path = tmp_path_factory.mktemp("graded")
    write_release(build_synthetic(seed=0, n_per_period=30, n_filler=20), path)
    return load_dataset({"format": "synthetic", "path": str(path)}, "chitchat_graded")


@pytest.mark.slow
def test_scores_rank_changed_targets_above_stable_ones(chitchat_graded, tokenizer):
    """Plain averaging of the pretrained MiniLM recovers the known graded change (seed 0)."""
    model, tok, _ = build_model("minilm", TemporalSpec(periods=chitchat_graded.periods), tokenizer=deepcopy(tokenizer))
    settings = ScoreSettings(n_sentences=30, last_layers=1, batch_size=64, max_length=32, sample_seed=0)
    scores = change_scores(model, WordPieceEncoder(tok), chitchat_graded, settings)
    result = correlations(scores)
    assert result["n_scored"] == 10 and result["n_unscored"] == 0
    assert result["spearman"] > 0.5 and result["pearson"] > 0.5
    changed = scores.filter(pl.col("graded") > 0.5)["score"].mean()
    stable = scores.filter(pl.col("graded") == 0)["score"].mean()
    assert changed > 3 * stable
    assert scores.sort("score")["graded"][-1] >= 0.8


def small_corpus():
    sentences = [[("the", "plane", "flew", "high"), ("a", "tree", "grew"), ("the", "tree", "and", "the", "plane")],
                 [("the", "plane", "landed"), ("a", "quiet", "day"), ("the", "plane", "is", "late")]]
    from tempoformer.semantic_change import data

    occurrences = {}
    for target in ("plane", "tree"):
        occurrences[target] = [[(i, tuple(j for j, w in enumerate(s) if w == target))
                                for i, s in enumerate(period) if target in s] for period in sentences]
    return data.DiachronicCorpus(name="small", periods=["1810", "1960"], sentences=sentences,
                                 targets=["plane", "tree"], words={"plane": "plane", "tree": "tree"},
                                 occurrences=occurrences, graded={"plane": 0.9, "tree": 0.1})


def test_unscorable_targets_are_counted_and_sampling_is_seeded(tokenizer):
    corpus = small_corpus()
    model, tok, _ = build_model("minilm", TemporalSpec(periods=corpus.periods, time="attention"),
                                bert=tiny_bert(), tokenizer=deepcopy(tokenizer))
    scores = change_scores(model, WordPieceEncoder(tok), corpus, ScoreSettings(n_sentences=5))
    row = scores.filter(pl.col("target") == "tree").row(0, named=True)
    assert row["score"] is None and row["problem"] == "no sentence in period 1960"
    result = correlations(scores)
    assert result["n_unscored"] == 1 and result["n_scored"] == 1 and result["spearman"] is None
    # A target's sample depends on the seed and on nothing else.
    big = build_corpus.__globals__["DiachronicCorpus"](
        name="b", periods=["1", "2"], sentences=[[("x",)] * 50] * 2, targets=["x", "y"], words={"x": "x", "y": "y"},
        occurrences={"x": [[(i, (0,)) for i in range(50)]] * 2, "y": [[(i, (0,)) for i in range(50)]] * 2})
    one = sample_occurrences(big, "x", 10, seed=1)
    assert one == sample_occurrences(big, "x", 10, seed=1) and one != sample_occurrences(big, "x", 10, seed=2)
    assert one != sample_occurrences(big, "y", 10, seed=1)


def test_post_pretraining_then_save_and_load(tmp_path, tokenizer):
    corpus = small_corpus()
    spec = TemporalSpec(periods=corpus.periods, time="attention", prepend=True)
    model, tok, time_ids = build_model("minilm", spec, seed=0, bert=tiny_bert(), tokenizer=deepcopy(tokenizer))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    log = post_pretrain(model, WordPieceEncoder(tok, 16, time_ids), corpus,
                        MLMPretrainSettings(steps=3, batch_size=4, max_length=16), seed=0)
    assert len(log["losses"]) == 3 and all(np.isfinite(log["losses"]))
    assert not torch.equal(before["time_proj.0.weight"], model.time_proj[0].weight)
    assert not torch.equal(before["layers.0.attention.self.query.weight"], model.layers[0].attention.self.query.weight)
    # Same seed, same training.
    again, tok2, ids2 = build_model("minilm", spec, seed=0, bert=tiny_bert(), tokenizer=deepcopy(tokenizer))
    log2 = post_pretrain(again, WordPieceEncoder(tok2, 16, ids2), corpus,
                         MLMPretrainSettings(steps=3, batch_size=4, max_length=16), seed=0)
    assert log2["losses"] == log["losses"]
    save_model(model, tmp_path / "model.pt", {"note": "test"})
    loaded, tok3, ids3, info = load_model(tmp_path / "model.pt")
    assert info == {"note": "test"} and ids3 == time_ids and loaded.spec == spec
    settings = ScoreSettings(n_sentences=5)
    a = change_scores(model, WordPieceEncoder(tok, 128, time_ids), corpus, settings)
    b = change_scores(loaded, WordPieceEncoder(tok3, 128, ids3), corpus, settings)
    assert a.equals(b)


def test_tables_put_the_paper_beside_ours(tmp_path):
    paths = []
    for method, seed, r, rho in [("temporal_attention", 0, 0.4, 0.3), ("temporal_attention", 1, 0.6, 0.5),
                                 ("prepend", 0, 0.2, 0.1), ("plain", 0, 0.5, 0.2)]:
        path = tmp_path / f"{method}{seed}.json"
        path.write_text(json.dumps({"dataset": "semeval_eng", "method": method, "seed": seed, "pearson": r,
                                    "spearman": rho, "n_scored": 36, "n_unscored": 1, "n_targets": 37,
                                    "params": 22_700_000, "train_seconds": 1.0, "score_seconds": 2.0}))
        paths.append(path)
    written = write_tables(paths, tmp_path / "tables", {"semeval_eng": "Eng"})
    table2 = written["table2_md"].read_text()
    row = next(line for line in table2.splitlines() if line.startswith("| Temporal Attention"))
    assert "| 0.620 | 0.500 ± 0.141 (1 unscored) | 0.520 | 0.400 ± 0.141 (1 unscored) |" in row
    assert "| Schlechtweg et al. (2019) | 0.512 | – | 0.321 | – | 0.458 | 0.372 |" in table2  # Latin: paper only
    assert "not run" in next(line for line in table2.splitlines() if "[scaled_exp]" in line)
    csv = pl.read_csv(written["table3_csv"])
    assert set(csv["source"]) == {"paper", "ours"}
    both = csv.filter((pl.col("method") == "Both") & (pl.col("source") == "paper") & (pl.col("dataset") == "SemEval-Eng"))
    assert both["r"][0] == 0.655 and both["rho"][0] == 0.548
    table4 = written["table4_md"].read_text()
    assert "| Temp. Att. tiny | paper | SemEval-Eng | 4.45M | 0.703 | 0.627 |" in table4
    assert "| Temp. Att. MiniLM-L6 | ours | semeval_eng | 22.70M |" in table4


def test_cli_subcommands_and_errors(tmp_path, capsys):
    import argparse

    sub = argparse.ArgumentParser().add_subparsers()
    register(sub)
    assert {"semantic-change-synthetic", "semantic-change-train", "semantic-change-score",
            "semantic-change-tables"} <= set(sub.choices)
    assert set(METHODS) == {"plain", "plain_mlm", "temporal_attention", "scaled_linear", "scaled_exp",
                            "scaled_doc", "prepend", "prepend_attention"}
    release = tmp_path / "r"
    (release / "corpus1").mkdir(parents=True)
    (release / "targets.txt").write_text("plane_nn\n")
    (release / "truth").mkdir()
    (release / "truth" / "graded.txt").write_text("plane_nn\tvery\n")
    code = main(["semantic-change-score", "--data", json.dumps({"release": str(release)}), "--name", "x",
                 "--method", "plain", "--seed", "0", "--out-dir", str(tmp_path / "out")])
    assert code == 1
    assert "graded.txt: record line 1: value 'very' of 'plane_nn' is not a number" in capsys.readouterr().err
    code = main(["semantic-change-score", "--data", json.dumps({"release": str(release)}), "--name", "x",
                 "--method", "temporal_attention", "--seed", "0", "--out-dir", str(tmp_path / "out")])
    assert code == 1
