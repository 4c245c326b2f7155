"""DCWE beyond the tables: the diffusion analysis (the paper's Figures 4-5), the held-out-month
extrapolation test, and the choice of another seed's grid point. Hand-computed ranks, walks and
centroids on tiny inputs; the subcommands end to end on a tiny corpus and backbone."""

import json

import numpy as np
import polars as pl
import pytest
import torch

from tempoformer.dcwe import diffusion
from tempoformer.dcwe.diffusion import (DiffusionSettings, analyse, contextual_words, diffusion_scores, figure4,
                                        figure5, layout, rank_score, time_centroids, walk_flight)
from tempoformer.dcwe.extrapolation import split_last_time
from test_dcwe import make_model
from test_dcwe_workflow import tiny_backbone


@pytest.fixture(scope="module")
def tokenizer():
    from tempoformer.semantic_change.model import load_tokenizer

    return load_tokenizer("minilm")


# --------------------------------------------------------------------------- diffusion: by hand


def test_rank_score_is_eq_16():
    vector = np.array([1.0, 0.0])
    centroids = np.array([[1.0, 0.1], [0.0, 1.0], [1.0, 0.5], [-1.0, 0.0]])  # cos: .995, 0, .894, -1
    assert rank_score(vector, centroids, 2, 100) == 99.0        # rank 2: N - 2 + 1
    assert rank_score(vector, centroids, 0, 100) == 100.0       # the nearest: N
    assert rank_score(vector, centroids, 3, 3) == 0.0           # rank 4 > N = 3: not a neighbour
    assert rank_score(vector, centroids, None, 100) == 0.0      # no centroid of the associate


def test_centroids_average_over_units_not_occurrences():
    sums = {(("w",), 0, 0): np.array([4.0, 0.0]), (("w",), 0, 1): np.array([0.0, 2.0]),
            (("v",), 1, 0): np.array([3.0, 3.0])}
    counts = {(("w",), 0, 0): 2, (("w",), 0, 1): 1, (("v",), 1, 0): 3}
    centroids = time_centroids(sums, counts)
    words, rows = centroids[0]
    assert words == [("w",)]
    np.testing.assert_allclose(rows[0], [1.0, 1.0])             # mean of unit means (2, 0) and (0, 2)
    np.testing.assert_allclose(centroids[1][1][0], [1.0, 1.0])


def test_walk_and_flight_by_hand():
    """Path 0 - 1 - 2 and a lone unit 3. t0: 0 reached (nothing before: no share); t1: 1 (next to
    0: walk) and 3 (flight), 2 used the word without r^ > 0; t2: 2 (next to 1: walk), 0 again (not new)."""
    scores = pl.DataFrame({"unit": [0, 1, 3, 2, 2, 0], "time": [0, 1, 1, 1, 2, 2],
                           "r_hat": [5.0, 3.0, 2.0, 0.0, 1.0, 4.0]})
    rows = walk_flight(scores, [(0, 1), (1, 2)], 4).to_dicts()
    assert [(r["units_using"], r["reached"], r["new"], r["walk"], r["flight"], r["walk_share"]) for r in rows] == [
        (1, 1, 1, 0, 1, None), (3, 2, 2, 1, 1, 0.5), (2, 2, 1, 1, 0, 1.0), (0, 0, 0, 0, 0, None)]
    # a directed edge (0, 1) lets a change spread from 0 to 1 only
    directed = walk_flight(pl.DataFrame({"unit": [1, 0], "time": [0, 1], "r_hat": [1.0, 1.0]}), [(0, 1)], 2, True)
    assert directed["walk"].to_list() == [0, 0]


def test_diffusion_scores_by_hand(tokenizer, monkeypatch):
    """network/learning with N = 2. Month 0: learning's centroid (1, 0) (units 0 and 1 agree),
    graph's (0, 1); network by unit 0 at (.9, .1): learning nearest, r^ = 2; by unit 1 at (.1, .9):
    learning second, r^ = 1. Month 1: no learning, r^ = 0 for unit 2."""
    ids = {w: tuple(tokenizer(w, add_special_tokens=False)["input_ids"]) for w in ("network", "learning", "graph")}
    occurrences = {0: [("learning", (1.0, 0.0)), ("graph", (0.0, 1.0)), ("network", (0.9, 0.1))],
                   1: [("learning", (1.0, 0.0)), ("network", (0.1, 0.9))],
                   2: [("network", (1.0, 0.0)), ("graph", (0.0, 1.0))]}

    def fake(model, tok, texts, units, times, max_length, layers, batch_size, device):
        for d in range(len(texts)):
            for word, vector in occurrences[d]:
                yield d, ids[word], np.array(vector)

    monkeypatch.setattr(diffusion, "contextual_words", fake)
    docs = pl.DataFrame({"doc_id": ["a", "b", "c"], "text": ["x", "y", "z"], "unit": [0, 1, 2], "time": [0, 0, 1],
                         "split": ["train", "dev", "test"]})
    settings = DiffusionSettings(pairs=[["network", "learning"]], neighbours=2)
    candidates = [ids[w][0] for w in ("network", "learning", "graph")]
    scores, walks, info = analyse(None, tokenizer, docs, candidates, [(0, 1), (1, 2)], 2, settings, 32)
    assert scores.select("unit", "time", "r_hat", "occurrences", "associate_present").rows() == [
        (0, 0, 2.0, 1, True), (1, 0, 1.0, 1, True), (2, 1, 0.0, 1, False)]
    assert walks.select("time", "reached", "new", "walk", "flight").rows() == [(0, 2, 2, 0, 2), (1, 0, 0, 0, 0)]
    assert info["network/learning"] == {"occurrences": 3, "units": 3, "associate_times": [0]}
    # only the splits asked for are read
    dev_only = analyse(None, tokenizer, docs, candidates, [], 2,
                       DiffusionSettings(pairs=[["network", "learning"]], neighbours=2, splits=["dev"]), 32)[0]
    assert dev_only["unit"].to_list() == [1]


def test_diffusion_settings_are_checked():
    with pytest.raises(ValueError, match="two words"):
        DiffusionSettings(pairs=[["mask"]])
    with pytest.raises(ValueError, match="the same"):
        DiffusionSettings(pairs=[["mask", "Mask"]])
    with pytest.raises(ValueError, match="splits"):
        DiffusionSettings(pairs=[], splits=["holdout"])
    with pytest.raises(ValueError, match="out of range"):
        DiffusionSettings.from_dict({"neighbours": 0})


def test_contextual_words_are_the_mean_of_the_first_layers_and_pieces(tokenizer):
    """Two code paths: the vectors contextual_words yields = a forward pass by hand on e~ + o, the
    mean of layers 1..L of the word's pieces (isolating: iso and ##lating)."""
    model = make_model(tokenizer, mode="full", dropout=0.0).eval()
    text = "lovely isolating music"
    got = {w: v for _, w, v in contextual_words(model, tokenizer, [text], np.array([1]), np.array([1]), 32, layers=2)}
    ids = torch.tensor([[tokenizer.cls_token_id, *tokenizer(text, add_special_tokens=False)["input_ids"],
                         tokenizer.sep_token_id]])
    emb, offsets, _ = model.offsets(ids, torch.ones_like(ids), torch.tensor([1]), torch.tensor([1]))
    with torch.no_grad():
        states = model.bert(inputs_embeds=emb + offsets, attention_mask=torch.ones_like(ids),
                            output_hidden_states=True).hidden_states
    mean = (states[1] + states[2])[0] / 2                       # the tiny backbone's 2 layers
    lovely, iso, lating, music = ids[0, 1:5].tolist()
    np.testing.assert_allclose(got[(lovely,)], mean[1].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[(iso, lating)], mean[2:4].mean(0).numpy(), rtol=1e-5, atol=1e-6)
    assert len(got) == 3
    # a text cut to max_length keeps its first and last pieces: the middle word is not yielded
    cut = {w for _, w, _ in contextual_words(model, tokenizer, [text], np.array([1]), np.array([1]), 4, layers=1)}
    assert cut == {(lovely,), (music,)}


def test_figures_are_written(tmp_path):
    scores = pl.DataFrame({"unit": [0, 1, 2], "time": [0, 0, 1], "r_hat": [2.0, 1.0, 0.0], "word": "network",
                           "associate": "learning"})
    walks = walk_flight(scores.drop("word", "associate"), [(0, 1)], 2).with_columns(
        pl.lit("network").alias("word"), pl.lit("learning").alias("associate"))
    positions = layout(np.random.default_rng(0).normal(size=(3, 5)))
    assert positions.shape == (3, 2)
    np.testing.assert_array_equal(positions, layout(np.random.default_rng(0).normal(size=(3, 5))))
    f4 = figure4(scores, positions, [(0, 1), (1, 2)], ["t0", "t1"], 2, tmp_path / "f4.png", "test")
    f5 = figure5(walks, ["t0", "t1"], tmp_path / "f5.png", "test")
    for path in (f4, f5):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- extrapolation: the split


def test_split_last_time():
    from tempoformer.dcwe.data import make_corpus

    records = [{"doc_id": f"d{i}", "text": "a b c", "unit": 0, "time": t}
               for i, t in enumerate([0, 0, 1, 1, 2, 2, 0, 1, 2, 0, 1, 2] * 3)]
    corpus = make_corpus("toy", records, ["u"], [], ["m1", "m2", "m3"], split_seed=0, path="-")
    kept, held = split_last_time(corpus)
    assert kept.periods == ["m1", "m2"] and set(kept.docs["time"]) == {0, 1}
    assert held.height == 12 and set(held["time"]) == {1}        # read with the last kept component
    assert set(held["doc_id"]) == set(corpus.docs.filter(pl.col("time") == 2)["doc_id"])
    assert set(held["split"]) == {"train", "dev", "test"}       # every document of the held-out time
    one = make_corpus("one", records[:2], ["u"], [], ["m1"], split_seed=0, path="-")
    with pytest.raises(ValueError, match="at least 2 time units"):
        split_last_time(one)


# --------------------------------------------------------------------------- another seed's grid point


def write_run(folder, variant, seed, lr, lambda_a, dev, task="mlm"):
    folder.mkdir(parents=True)
    key = {"mlm": "perplexity", "sentiment": "macro_f1"}[task]
    (folder / "metrics.json").write_text(json.dumps({
        "dataset": "toy", "variant": variant, "seed": seed, "lr": lr, "lambda_a": lambda_a,
        "dev": {key: dev}, "epochs": [], "best_epoch": None}))
    return str(folder / "metrics.json")


def test_selected_point_is_the_best_dev_point(tmp_path):
    from tempoformer.dcwe.cli import selected_point

    runs = [write_run(tmp_path / "a", "dcwe", 0, 3e-5, 0.1, 70.0), write_run(tmp_path / "b", "dcwe", 0, 1e-4, 0.1, 65.0)]
    chosen = selected_point(runs, "mlm")
    assert (chosen["lr"], chosen["lambda_a"], chosen["seed"], chosen["candidates"]) == (1e-4, 0.1, 0, 2)
    f1 = [write_run(tmp_path / "c", "cwe", 0, 3e-5, 0.1, 0.7, "sentiment"),
          write_run(tmp_path / "d", "cwe", 0, 1e-4, 0.1, 0.6, "sentiment")]
    assert selected_point(f1, "sentiment")["lr"] == 3e-5        # higher macro-F1 is better
    with pytest.raises(ValueError, match="several datasets, variants or seeds"):
        selected_point(runs + [write_run(tmp_path / "e", "cwe", 0, 3e-5, 0.1, 60.0)], "mlm")


# --------------------------------------------------------------------------- end to end on a tiny corpus


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory):
    """36 documents by 4 senders in 3 months; the last month's documents use `network` with
    `learning`. The corpus folder (dcwe-data), node2vec vectors and a tiny backbone."""
    from tempoformer.dcwe.cli import run_data, run_node2vec

    root = tmp_path_factory.mktemp("dcwe_tiny")
    words = "garden music summer lovely train river morning city coffee window school".split()
    rows = ["doc_id,unit,time,text"]
    for i in range(36):
        text = " ".join(words[(i + k) % len(words)] for k in range(8))
        if i % 3 == 2:
            text += " network learning"
        elif i % 4 == 0:
            text += " network graph"
        rows.append(f"d{i},u{i % 4},{i % 3},{text}")
    (root / "docs.csv").write_text("\n".join(rows) + "\n")
    (root / "edges.csv").write_text("source,target\nu0,u1\nu1,u2\nu2,u3\n")
    backbone = tiny_backbone(root / "backbone")
    run_data({"format": "csv", "docs": str(root / "docs.csv"), "edges": str(root / "edges.csv")}, "toy",
             root / "data", backbone)
    run_node2vec(root / "data", {"dim": 50, "walks_per_node": 2, "walk_length": 5, "epochs": 1}, 0,
                 root / "node2vec.npy")
    settings = {"backbone": backbone, "max_length": 16,
                "warmup": {"steps": 2, "batch_size": 4, "lr": 1e-3},
                "training": {"epochs": 2, "patience": 1, "batch_size": 8, "lr": 1e-3, "dynamic_lr": 1e-2},
                "evaluation": {"batch_size": 16, "sigma_top": 3}}
    return root, settings


def test_extrapolation_end_to_end(tiny_corpus):
    from tempoformer.dcwe.cli import run_extrapolate, run_warmup
    from tempoformer.dcwe.data import read_corpus
    from tempoformer.dcwe.tables import write_tables

    root, settings = tiny_corpus
    corpus, _ = read_corpus(root / "data")
    info = run_warmup(root / "data", settings, 0, root / "holdout.pt", threads=1, device="cpu", holdout_last=True)
    assert info["holdout_last"] and info["train_log"]["steps"] == 2
    paths = []
    for variant in ("dcwe", "cwe", "static"):
        grid = [write_run(root / "grid" / variant / p, variant, 0, lr, 0.1, dev)
                for p, lr, dev in (("a", 1e-3, 50.0), ("b", 3e-3, 60.0))]
        out = root / "extrapolation" / variant
        result = run_extrapolate(root / "data", root / "holdout.pt", variant, settings, 0, out,
                                 root / "node2vec.npy" if variant == "dcwe" else None, threads=1, device="cpu",
                                 select_from=grid)
        paths.append(str(out / "metrics.json"))
        assert result["lr"] == 1e-3 and result["selected_from"]["dev"] == {"perplexity": 50.0}
        assert result["held_out_time"] == "2" and result["trained_times"] == ["0", "1"]
        assert result["heldout"]["documents"] == corpus.docs.filter(pl.col("time") == 2).height == 12
        assert result["spec"]["n_times"] == 2
        assert result["component_used"] == ("1" if variant == "dcwe" else None)
        assert not (out / "checkpoint.pt").exists()             # removed once the run is done
        losses = pl.read_parquet(out / "losses.parquet")
        assert set(losses["split"]) == {"heldout", "test"}
    corpus_json = root / "data" / "corpus.json"
    write_tables([], [corpus_json], root / "tables", {"toy": None}, "tiny", extrapolation_paths=paths)
    table = (root / "tables" / "dcwe_extrapolation.md").read_text()
    rows = {line.split(" | ")[1]: line for line in table.splitlines() if line.startswith("| toy |")}
    assert set(rows) == {"DCWE", "CWE", "Static (one offset per word)"}
    assert "| toy | DCWE | ours (tiny, 1 seed) | 2 |" in rows["DCWE"]
    assert rows["DCWE"].count("p=") == 2 and rows["Static (one offset per word)"].count("p=") == 1
    assert rows["CWE"].count("p=") == 0


def test_train_and_diffusion_end_to_end(tiny_corpus):
    from tempoformer.dcwe.cli import run_diffusion, run_train, run_warmup
    from tempoformer.dcwe.tables import write_tables

    from tempoformer.dcwe.data import read_corpus

    root, settings = tiny_corpus
    corpus, _ = read_corpus(root / "data")
    run_warmup(root / "data", settings, 0, root / "warmup.pt", threads=1, device="cpu")
    result = run_train(root / "data", root / "warmup.pt", "dcwe", settings, 0, root / "runs" / "dcwe",
                       root / "node2vec.npy", threads=1, device="cpu")
    assert result["epochs_run"] in (1, 2) and result["best_epoch"] is not None and result["sigma_words"] == "whole"
    per_epoch = -(-corpus.split("train").height // 8)
    assert result["train_steps"] == per_epoch * result["epochs_run"]
    figures = [str(root / "figures" / "f4.png"), str(root / "figures" / "f5.png")]
    settings = {**settings, "diffusion": {"pairs": [["network", "learning"]], "neighbours": 5, "layers": 6}}
    info = run_diffusion(root / "data", [str(root / "runs" / "dcwe" / "metrics.json")], settings,
                         root / "diffusion", figures, root / "node2vec.npy", threads=1, device="cpu")
    using = corpus.docs.filter(pl.col("text").str.contains("network"))
    assert info["variant"] == "dcwe" and info["pairs"]["network/learning"]["occurrences"] == using.height
    assert info["pairs"]["network/learning"]["units"] == using["unit"].n_unique()
    assert info["pairs"]["network/learning"]["associate_times"] == [2]
    scores = pl.read_parquet(root / "diffusion" / "diffusion.parquet")
    assert scores["r_hat"].min() >= 0 and scores["r_hat"].max() <= 5
    assert scores.filter(pl.col("time") < 2)["r_hat"].to_list() == [0.0] * scores.filter(pl.col("time") < 2).height
    assert set(scores["unit_name"]) <= {"u0", "u1", "u2", "u3"}
    assert all((root / "figures" / f).read_bytes()[:4] == b"\x89PNG" for f in ("f4.png", "f5.png"))
    write_tables([], [root / "data" / "corpus.json"], root / "tables2", {"toy": None}, "tiny",
                 diffusion_paths=[str(root / "diffusion" / "metrics.json")])
    table = (root / "tables2" / "dcwe_diffusion.md").read_text()
    assert "| toy | DCWE | 0 | network / learning | 2 |" in table
