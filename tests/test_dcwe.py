"""DCWE model pieces: priors, GAT, offsets, zero-offset equivalence, walk prior, determinism."""

from copy import deepcopy

import numpy as np
import polars as pl
import pytest
import torch
from torch.nn import functional as F

from tempoformer.dcwe.evaluate import change_scores, document_losses, perplexity, sigma_sim, wilcoxon
from tempoformer.dcwe.gat import GATLayer, GCNLayer, SocialGAT, SocialGCN, SocialMLP, with_self_loops
from tempoformer.dcwe.graph import Node2VecSettings, graph_stats, node2vec
from tempoformer.dcwe.model import DcweModel, DcweSpec, load_model, save_model
from tempoformer.dcwe.train import (DCWETrainSettings, EncodedDocs, collate, encode_docs, prior_terms, train_mlm,
                                    truncate)
from tempoformer.dcwe.vocab import STOPWORDS, dynamic_token_ids
from test_semantic_change import tiny_bert


@pytest.fixture(scope="module")
def tokenizer():
    from tempoformer.semantic_change.model import load_tokenizer

    return load_tokenizer("minilm")


TEXTS = ["the weather today is lovely and warm", "my garden looks lovely in the summer sun",
         "we played music until midnight yesterday", "the music festival was loud and crowded",
         "summer holidays are great for travelling", "travelling by train is slow but lovely"]
GRAPH = [(0, 1), (1, 2)]  # three units on a path


def corpus_docs(tokenizer, n_times=2):
    docs = pl.DataFrame({"doc_id": [f"d{i}" for i in range(len(TEXTS))], "text": TEXTS,
                         "unit": [i % 3 for i in range(len(TEXTS))], "time": [i % n_times for i in range(len(TEXTS))]})
    return encode_docs(tokenizer, docs, 16), docs


def make_model(tokenizer, mode="full", seed=0, offset_init="pytorch", dropout=0.2, bert=None, n_times=2, docs=None):
    docs = docs if docs is not None else corpus_docs(tokenizer, n_times)[1]
    ids = dynamic_token_ids(docs["text"], docs["time"], tokenizer.get_vocab())
    spec = DcweSpec(mode=mode, n_times=n_times, n_units=3, offset_init=offset_init, dropout=dropout,
                    attn_dropout=dropout * 3)
    social = torch.randn(3, 50, generator=torch.Generator().manual_seed(1))
    edges = torch.tensor(GRAPH).T
    return DcweModel(bert if bert is not None else tiny_bert(seed), spec, ids, social,
                     torch.cat([edges, edges.flip(0)], 1), seed)


# --------------------------------------------------------------------------- priors


def test_priors_by_hand_on_three_tokens():
    # one text of 2 real tokens + 1 padding position, D = 2
    offsets = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]])
    walk = torch.tensor([[[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]]])  # o_j - o_j-1
    attention = torch.tensor([[1, 1, 0]])
    anchor, walk_term = prior_terms(offsets, walk, attention, "paper")
    assert anchor.item() == pytest.approx((1 + 4) / 2)       # 1/K sum_k ||o||^2, K = 2 real tokens
    assert walk_term.item() == pytest.approx((1 + 1) / 2)
    anchor, walk_term = prior_terms(offsets, walk, attention, "authors")
    assert anchor.item() == pytest.approx((1 + 4 + 0) / 3)   # mean over all B x L positions
    assert walk_term.item() == pytest.approx((1 + 1 + 0) / 3)
    settings = DCWETrainSettings(lambda_a=0.1)
    assert settings.lambda_w == pytest.approx(100.0)           # lambda_w = 1000 lambda_a


def test_walk_at_t0_is_an_option(tokenizer):
    model = make_model(tokenizer, mode="time_only").train()
    ids = torch.tensor([tokenizer.convert_tokens_to_ids(["[CLS]", "lovely", "music", "[SEP]"])])
    one, zero = torch.ones(1, dtype=torch.long), torch.zeros(1, dtype=torch.long)
    _, _, walk = model.offsets(ids, torch.ones_like(ids), zero, zero, "skip")
    assert walk.abs().sum() == 0                              # the paper: no walk term at t = 0
    _, _, walk = model.offsets(ids, torch.ones_like(ids), zero, zero, "authors")
    assert walk.abs().sum() > 0                               # FFN_0 against itself under two dropout draws
    _, offsets, walk = model.offsets(ids, torch.ones_like(ids), one, zero, "skip")
    assert walk.abs().sum() > 0


def test_walk_prior_gradient_pulls_consecutive_times_together(tokenizer):
    model = make_model(tokenizer, mode="time_only", dropout=0.0)
    model.train()
    ids = torch.tensor([tokenizer.convert_tokens_to_ids(["[CLS]", "lovely", "music", "garden", "[SEP]"])])
    attention, units, t1 = torch.ones_like(ids), torch.zeros(1, dtype=torch.long), torch.ones(1, dtype=torch.long)

    def gap():
        _, o1, _ = model.offsets(ids, attention, t1, units)
        _, o0, _ = model.offsets(ids, attention, t1 - 1, units)
        return (o1 - o0).norm().item()

    before = gap()
    assert before > 0
    _, _, walk = model.offsets(ids, attention, t1, units, "skip")
    _, walk_term = prior_terms(walk, walk, attention)
    model.zero_grad()
    walk_term.backward()
    assert model.ffn[0].outer.weight.grad.abs().sum() > 0 and model.ffn[1].outer.weight.grad.abs().sum() > 0
    with torch.no_grad():
        for p in model.ffn.parameters():
            p -= 0.05 * p.grad
    assert gap() < before


# --------------------------------------------------------------------------- GAT


def test_gat_matches_a_dense_computation_on_four_nodes():
    torch.manual_seed(0)
    layer = GATLayer(3, 2, heads=4).eval()
    x = torch.randn(4, 3)
    edges = torch.tensor([[0, 1, 2, 3, 1], [1, 2, 0, 2, 1]])  # j -> i, with one self-loop already present
    out = layer(x, with_self_loops(edges, 4))
    adj = torch.eye(4, dtype=torch.bool)
    adj[edges[1], edges[0]] = True                                # adj[i, j]: j sends to i
    z = (x @ layer.lin.weight.T).view(4, 4, 2)                    # (node, head, F)
    expected = torch.zeros(4, 2)
    for h in range(4):
        src = z[:, h] @ layer.att_src[h]                          # (node,)
        dst = z[:, h] @ layer.att_dst[h]
        scores = F.leaky_relu(dst[:, None] + src[None, :], 0.2).masked_fill(~adj, float("-inf"))
        expected += torch.softmax(scores, 1) @ z[:, h]
    expected = expected / 4 + layer.bias
    torch.testing.assert_close(out, expected)
    gat = SocialGAT(50, 4)
    assert sum(p.numel() for p in gat.parameters()) == 20_900    # the paper's count per time unit


def test_gcn_matches_a_dense_computation_on_four_nodes():
    torch.manual_seed(0)
    layer = GCNLayer(3, 2)
    with torch.no_grad():
        layer.bias.copy_(torch.tensor([0.5, -1.0]))
    x = torch.randn(4, 3)
    edges = torch.tensor([[0, 1, 2, 3, 1], [1, 2, 0, 2, 1]])  # j -> i, with one self-loop already present
    out = layer(x, with_self_loops(edges, 4))
    a_hat = torch.eye(4)
    a_hat[edges[1], edges[0]] = 1.0                               # a_hat[i, j]: j sends to i, plus I
    degree = a_hat.sum(1)                                         # in-degree with the self-loop
    assert degree.tolist() == [2.0, 2.0, 3.0, 1.0]                # 0 <- 2; 1 <- 0; 2 <- 1, 3; 3 <- none
    norm = torch.diag(degree.rsqrt())
    expected = norm @ a_hat @ norm @ x @ layer.lin.weight.T + layer.bias
    torch.testing.assert_close(out, expected)
    # node 3 receives only its self-loop: x_3 W / 1 + b
    torch.testing.assert_close(out[3], x[3] @ layer.lin.weight.T + layer.bias)
    gcn = SocialGCN(50).eval()
    assert sum(p.numel() for p in gcn.parameters()) == 2 * (50 * 50 + 50)
    x50, loops = torch.randn(4, 50), with_self_loops(edges, 4)
    torch.testing.assert_close(gcn(x50, loops), torch.tanh(gcn.layers[1](torch.tanh(gcn.layers[0](x50, loops)), loops)))


def test_gnn_options_of_the_social_component(tokenizer):
    outputs = {}
    for gnn in ("gat", "gcn", "none"):
        docs = corpus_docs(tokenizer)[1]
        ids = dynamic_token_ids(docs["text"], docs["time"], tokenizer.get_vocab())
        spec = DcweSpec(mode="full", n_times=2, n_units=3, gnn=gnn, offset_init="pytorch")
        edges = torch.tensor(GRAPH).T
        model = DcweModel(tiny_bert(0), spec, ids, torch.randn(3, 50, generator=torch.Generator().manual_seed(1)),
                          torch.cat([edges, edges.flip(0)], 1), seed=0).eval()
        kind = {"gat": SocialGAT, "gcn": SocialGCN, "none": SocialMLP}[gnn]
        assert len(model.gnn) == 2 and all(isinstance(g, kind) for g in model.gnn)
        outputs[gnn] = model.social_vectors(1)
    assert not torch.allclose(outputs["gat"], outputs["gcn"])
    # none: each unit's vector alone, the graph plays no part
    torch.testing.assert_close(model.social_vectors(1), model.gnn[1](model.social_input))
    assert sum(p.numel() for p in model.gnn[0].parameters()) == 5_100
    with pytest.raises(ValueError, match="gnn must be one of"):
        DcweSpec(mode="full", n_times=2, gnn="gin")


# --------------------------------------------------------------------------- offsets


def test_vocabulary_filter(tokenizer):
    vocab = tokenizer.get_vocab()
    ids = dynamic_token_ids(["the lovely garden 42 isolating a", "lovely music the"], [0, 1], vocab)
    words = set(tokenizer.convert_ids_to_tokens(ids))
    assert {"lovely", "garden", "music"} <= words
    assert not words & (STOPWORDS | {"42", "isolating", "a"})   # stopword, digits, multi-piece, single char
    assert all(i >= 2100 for i in ids)
    assert len(STOPWORDS) == 179


def test_offsets_of_filtered_out_tokens_are_exactly_zero(tokenizer):
    model = make_model(tokenizer).train()
    docs, _ = corpus_docs(tokenizer)
    ids, attention = collate([docs.ids[0], docs.ids[1]], tokenizer.pad_token_id)
    _, offsets, _ = model.offsets(ids, attention, torch.tensor([0, 1]), torch.tensor([0, 2]), "skip")
    dynamic = model.dynamic[ids] & attention.bool()
    assert dynamic.any() and (~dynamic).any()
    assert torch.all(offsets[~dynamic] == 0)                      # exactly 0, not small
    assert torch.all(offsets[dynamic].norm(dim=-1) > 0)


def test_zero_offsets_give_the_cwe_loss_on_the_same_masks(tokenizer):
    bert = tiny_bert(3)
    cwe = DcweModel(deepcopy(bert), DcweSpec(mode="cwe", n_times=2), [], seed=0)
    dcwe = make_model(tokenizer, offset_init="zero", bert=deepcopy(bert))
    dcwe.mlm.load_state_dict(cwe.mlm.state_dict())
    docs, _ = corpus_docs(tokenizer)
    a = document_losses(cwe, docs, tokenizer, seed=5)
    b = document_losses(dcwe, docs, tokenizer, seed=5)
    assert a["n_masked"].to_list() == b["n_masked"].to_list()
    np.testing.assert_array_equal(a["loss_sum"].to_numpy(), b["loss_sum"].to_numpy())
    assert wilcoxon(a, b)["p"] == 1.0
    c = document_losses(make_model(tokenizer, bert=deepcopy(bert)), docs, tokenizer, seed=5)
    assert not np.array_equal(a["loss_sum"].to_numpy(), c["loss_sum"].to_numpy())  # real offsets change it
    assert perplexity(a) == pytest.approx(np.exp(a["loss_sum"].sum() / a["n_masked"].sum()))


def test_parameter_counts_per_time_unit(tokenizer):
    from tempoformer.dcwe.model import count_parameters

    full = make_model(tokenizer, bert=tiny_bert(0))  # hidden 16: FFN (66 -> 16 -> 16) + GAT 20,900
    assert count_parameters(full, full.dynamic_parameter_names()) == 2 * (66 * 16 + 16 + 16 * 16 + 16 + 20_900)
    ta = make_model(tokenizer, mode="social_only")
    assert len(ta.ffn) == 1 and len(ta.gnn) == 1
    sa = make_model(tokenizer, mode="time_only")
    assert len(sa.ffn) == 2 and len(sa.gnn) == 0


# --------------------------------------------------------------------------- determinism


def test_node2vec_is_deterministic_for_a_seed():
    settings = Node2VecSettings(dim=8, walks_per_node=3, walk_length=10, epochs=2, batch_size=64)
    edges = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)]
    a, b = node2vec(5, edges, settings, seed=4), node2vec(5, edges, settings, seed=4)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (5, 8)
    assert not np.array_equal(a, node2vec(5, edges, settings, seed=5))
    stats = graph_stats(5, edges)
    assert stats["largest_component"] == 4 and stats["mean_degree"] == 2.0
    assert stats["mean_shortest_path"] == pytest.approx(14 / 12)  # 1-3 is 2 steps, the other 5 pairs 1


def test_training_is_deterministic_for_a_seed(tokenizer, tmp_path):
    docs, frame = corpus_docs(tokenizer)
    settings = DCWETrainSettings(steps=2, batch_size=3, lr=1e-3, dynamic_lr=1e-2)
    runs = []
    for _ in range(2):
        model = make_model(tokenizer, offset_init="zero", bert=tiny_bert(0))
        log = train_mlm(model, docs, tokenizer, settings, seed=7)
        runs.append((log["loss"], model.state_dict()))
    assert runs[0][0] == runs[1][0] and runs[0][0][0] > 0
    assert all(torch.equal(v, runs[1][1][k]) for k, v in runs[0][1].items())
    assert runs[0][1]["ffn.1.outer.weight"].abs().sum() > 0       # the offsets trained
    save_model(model, tmp_path / "m.pt")
    again, _ = load_model(tmp_path / "m.pt")
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in model.state_dict().items())


def test_sigma_sim_and_change_scores(tokenizer):
    model = make_model(tokenizer, mode="time_only", dropout=0.0).eval()
    docs, frame = corpus_docs(tokenizer)
    top = sigma_sim(model, docs, tokenizer, top=3, min_contexts=2, periods=["a", "b"], units=["x", "y", "z"])
    assert top and top[0]["sigma"] >= top[-1]["sigma"] and top[0]["above"]["sim"] >= top[0]["below"]["sim"]
    scores = change_scores(model, tokenizer, {"lovely_jj": "lovely", "isolating": "isolating", "the": "the"},
                           frame, 2, {"lovely_jj": 0.5, "isolating": 0.1, "the": 0.0})
    by = {r["target"]: r for r in scores.iter_rows(named=True)}
    assert by["lovely_jj"]["score"] > 0 and by["lovely_jj"]["walk_length"] > 0
    assert by["isolating"]["problem"] == "2 word pieces, none in the dynamic vocabulary"   # iso, ##lating
    assert by["the"]["problem"] == "not in the dynamic vocabulary"
    assert by["lovely_jj"]["pieces"] == 1 and by["isolating"]["pieces"] == 2


def test_truncation_keeps_first_and_last_pieces():
    assert truncate(list(range(10)), 4) == [0, 1, 8, 9]
    assert truncate(list(range(10)), 5) == [0, 1, 2, 8, 9]
    assert truncate([1, 2], 5) == [1, 2]
    assert isinstance(EncodedDocs([], [], np.array([]), np.array([]), []).ids, list)


# --------------------------------------------------------------------------- grid search


def test_per_epoch_selection_keeps_the_best_epoch(tokenizer):
    docs, _ = corpus_docs(tokenizer)
    by_epoch = DCWETrainSettings(epochs=3, batch_size=4, lr=1e-3, dynamic_lr=1e-2)  # 6 documents: 2 steps an epoch
    assert by_epoch.total_steps(len(docs)) == 6 and by_epoch.steps_per_epoch(7) == 2
    model = make_model(tokenizer, offset_init="zero", bert=tiny_bert(0))
    snapshots, dev = {}, {1: 2.0, 2: 1.0, 3: 1.5}     # lower is better: epoch 2

    def evaluate(epoch):
        snapshots[epoch] = {k: v.clone() for k, v in model.state_dict().items()}
        return dev[epoch]

    log = train_mlm(model, docs, tokenizer, by_epoch, seed=2, evaluate=evaluate)
    assert log["steps"] == 6 and [e["epoch"] for e in log["epochs"]] == [1, 2, 3] and log["best_epoch"] == 2
    assert [e["dev"] for e in log["epochs"]] == [2.0, 1.0, 1.5]
    assert all(torch.equal(v, snapshots[2][k]) for k, v in model.state_dict().items())      # epoch 2's weights back
    assert not all(torch.equal(v, snapshots[3][k]) for k, v in model.state_dict().items())
    # evaluating draws nothing: the same steps as a run of 6 steps without it
    plain = make_model(tokenizer, offset_init="zero", bert=tiny_bert(0))
    again = train_mlm(plain, docs, tokenizer, DCWETrainSettings(steps=6, batch_size=4, lr=1e-3, dynamic_lr=1e-2), seed=2)
    assert again["loss"] == log["loss"] and again["best_epoch"] is None and again["epochs"] == []
    assert all(torch.equal(v, snapshots[3][k]) for k, v in plain.state_dict().items())


def grid_run(variant, lr, lambda_a, devs, seconds=60.0, seed=0, dataset="toy", key="perplexity"):
    return {"dataset": dataset, "variant": variant, "seed": seed, "lr": lr, "lambda_a": lambda_a,
            "epochs": [{"epoch": i + 1, "dev": d} for i, d in enumerate(devs)],
            "best_epoch": 1 + (int(np.argmax(devs)) if key == "macro_f1" else int(np.argmin(devs))),
            "dev": {key: max(devs) if key == "macro_f1" else min(devs)}, "train_steps": 10, "seconds": seconds}


def test_grid_statistics_and_the_selected_point():
    from tempoformer.dcwe.tables import grid_table, paper_numbers, select_runs

    runs = [grid_run("dcwe", 1e-5, 0.01, [9.0, 8.0]), grid_run("dcwe", 1e-5, 0.1, [8.5, 7.5]),
            grid_run("dcwe", 3e-5, 0.01, [7.0, 7.2]), grid_run("dcwe", 3e-5, 0.1, [8.0, 8.1]),
            grid_run("cwe", 1e-5, 0.1, [9.5, 9.0], 30.0), grid_run("cwe", 3e-5, 0.1, [8.8, 9.9], 30.0)]
    chosen = {r["variant"]: r for r in select_runs(runs, "mlm")}
    assert (chosen["dcwe"]["lr"], chosen["dcwe"]["lambda_a"]) == (3e-5, 0.01)   # dev 7.0 at epoch 1
    assert chosen["cwe"]["lr"] == 3e-5
    sentiment = [grid_run("dcwe", 1e-5, 0.1, [0.6, 0.7], key="macro_f1"),
                 grid_run("dcwe", 3e-5, 0.1, [0.65, 0.5], key="macro_f1")]
    assert select_runs(sentiment, "sentiment")[0]["lr"] == 1e-5                    # higher F1 is better
    table, csv = grid_table(runs, sentiment, paper_numbers(), "tiny")
    ours = {(r["task"], r["model"]): r for r in csv.filter(pl.col("source").str.starts_with("ours")).to_dicts()}
    dcwe = ours[("MLM (dev perplexity)", "DCWE")]
    values = [9.0, 8.0, 8.5, 7.5, 7.0, 7.2, 8.0, 8.1]
    assert dcwe["trials"] == "8" and dcwe["mu"] == f"{np.mean(values):.2f}" and dcwe["sigma"] == f"{np.std(values):.2f}"
    assert (dcwe["n_e"], dcwe["lr"], dcwe["lambda_a"], dcwe["tau"]) == ("1", "3e-05", "0.01", "4.0")
    cwe = ours[("MLM (dev perplexity)", "CWE")]
    assert (cwe["trials"], cwe["n_e"], cwe["lr"], cwe["lambda_a"], cwe["tau"]) == ("4", "1", "3e-05", "–", "1.0")
    assert ours[("sentiment (dev F1)", "DCWE")]["mu"] == f"{np.mean([0.6, 0.7, 0.65, 0.5]):.3f}"
    paper = csv.filter((pl.col("table") == "6") & (pl.col("dataset") == "Ciao") & (pl.col("model") == "DCWE")).row(
        0, named=True)
    assert (paper["trials"], paper["mu"], paper["tau"]) == ("28", "6.794", "11831")


# --------------------------------------------------------------------------- the static control


def test_static_control_is_one_vector_per_word(tokenizer):
    """`static`: o = v_k, the same for every time, unit and document; zero elsewhere; no walk."""
    from tempoformer.dcwe.model import count_parameters

    model = make_model(tokenizer, mode="static", offset_init="pytorch").eval()
    n_dyn = int(model.dynamic.sum())
    assert model.dynamic_parameter_names() == {"static"}
    assert count_parameters(model, model.dynamic_parameter_names()) == n_dyn * 16   # |V_dyn| x D
    ids = torch.tensor([tokenizer.convert_tokens_to_ids(["[CLS]", "lovely", "the", "music", "[SEP]"])] * 3)
    emb, offsets, walk = model.offsets(ids, torch.ones_like(ids), torch.tensor([0, 1, 1]), torch.tensor([0, 2, 1]),
                                       "skip")
    assert walk is None                                            # no time: no walk prior
    lovely = tokenizer.convert_tokens_to_ids("lovely")
    row = model.static_row[lovely]
    for b in range(3):                                             # every time and unit: the same vector
        torch.testing.assert_close(offsets[b, 1], model.static[row])
        assert torch.all(offsets[b, 2] == 0) and torch.all(offsets[b, 0] == 0)   # "the", [CLS]
    assert not torch.equal(offsets[0, 1], offsets[0, 3])           # lovely and music: their own vectors


def test_static_pytorch_init_starts_where_sa_first_component_starts(tokenizer):
    static = make_model(tokenizer, mode="static", offset_init="pytorch", dropout=0.0, bert=tiny_bert(0)).eval()
    sa = make_model(tokenizer, mode="time_only", offset_init="pytorch", dropout=0.0, bert=tiny_bert(0)).eval()
    ids = torch.tensor([tokenizer.convert_tokens_to_ids(["[CLS]", "lovely", "music", "garden", "[SEP]"])])
    zero = torch.zeros(1, dtype=torch.long)
    _, a, _ = static.offsets(ids, torch.ones_like(ids), zero, zero)
    _, b, _ = sa.offsets(ids, torch.ones_like(ids), zero, zero)
    torch.testing.assert_close(a, b)                               # v_k = FFN_0(e~_k) of the same init
    assert a.abs().sum() > 0
    zeroed = make_model(tokenizer, mode="static", offset_init="zero")
    assert torch.all(zeroed.static == 0)


def test_static_trains_at_dynamic_lr_only_the_words_it_reads(tokenizer):
    docs, frame = corpus_docs(tokenizer)
    model = make_model(tokenizer, mode="static", offset_init="zero", bert=tiny_bert(0))
    seen = {t for ids in docs.ids[:3] for t in ids}
    unseen = [i for i in model.dynamic.nonzero().flatten().tolist() if i not in seen]
    assert unseen
    settings = DCWETrainSettings(steps=1, batch_size=3, lr=1e-9, dynamic_lr=1e-2, lambda_a=0.1)
    train_mlm(model, EncodedDocs(docs.doc_ids[:3], docs.ids[:3], docs.times[:3], docs.units[:3], docs.texts[:3]),
              tokenizer, settings, seed=0)
    moved = model.static.abs().sum(-1)
    assert torch.all(moved[model.static_row[torch.tensor(unseen)]] == 0)     # words never read: still 0
    read = moved[model.static_row[torch.tensor([i for i in seen if model.dynamic[i]])]].detach()
    # Adam's first step moves each coordinate with a gradient by exactly its lr: 16 x dynamic_lr 1e-2
    # per row (not lr = 1e-9); a word read only where it was replaced by [MASK] has no gradient
    assert (read > 0).sum() >= len(read) // 2
    torch.testing.assert_close(read[read > 0], torch.full_like(read[read > 0], 16 * 1e-2))


# --------------------------------------------------------------------------- training until dev stops improving


def test_patience_stops_after_epochs_without_a_better_dev_value(tokenizer):
    docs, _ = corpus_docs(tokenizer)                 # 6 documents, batches of 4: 2 steps an epoch
    settings = DCWETrainSettings(epochs=6, patience=2, batch_size=4, lr=1e-3, dynamic_lr=1e-2)
    model = make_model(tokenizer, offset_init="zero", bert=tiny_bert(0))
    snapshots, dev = {}, {1: 3.0, 2: 2.0, 3: 2.5, 4: 2.0, 5: 1.0, 6: 0.5}   # 2.0 again at 4 is no gain

    def evaluate(epoch):
        snapshots[epoch] = {k: v.clone() for k, v in model.state_dict().items()}
        return dev[epoch]

    log = train_mlm(model, docs, tokenizer, settings, seed=1, evaluate=evaluate)
    assert [e["epoch"] for e in log["epochs"]] == [1, 2, 3, 4]  # epochs 3 and 4 without gain: stop
    assert log["best_epoch"] == 2 and log["stopped_early"] and log["steps"] == 8 and log["max_steps"] == 12
    assert len(log["loss"]) == 8
    assert all(torch.equal(v, snapshots[2][k]) for k, v in model.state_dict().items())
    with pytest.raises(ValueError, match="patience needs epochs"):
        DCWETrainSettings(steps=5, patience=2)


class Interrupted(RuntimeError):
    pass


def test_a_run_resumes_after_its_last_epoch_and_ends_as_an_uninterrupted_one(tokenizer, tmp_path):
    docs, _ = corpus_docs(tokenizer)
    settings = DCWETrainSettings(epochs=3, batch_size=4, lr=1e-3, dynamic_lr=1e-2)
    dev = {1: 2.0, 2: 1.0, 3: 1.5}

    def run(checkpoint, stop_at=None, key=None):
        model = make_model(tokenizer, offset_init="zero", bert=tiny_bert(0))
        seen = []

        def evaluate(epoch):
            seen.append(epoch)
            if epoch == stop_at:
                raise Interrupted(epoch)
            return dev[epoch]

        log = train_mlm(model, docs, tokenizer, settings, seed=3, evaluate=evaluate, checkpoint=checkpoint,
                        key=key or {"run": "a"})
        return model, log, seen

    plain, plain_log, _ = run(None)
    checkpoint = tmp_path / "checkpoint.pt"
    with pytest.raises(Interrupted):
        run(checkpoint, stop_at=3)                    # killed during epoch 3's evaluation: epoch 2 saved
    assert checkpoint.is_file()
    resumed, log, seen = run(checkpoint)
    assert seen == [3]                                # only the epoch that was lost runs again
    assert log["loss"] == plain_log["loss"] and log["epochs"][-1]["dev"] == 1.5 and log["best_epoch"] == 2
    assert [e["epoch"] for e in log["epochs"]] == [1, 2, 3]
    assert all(torch.equal(v, plain.state_dict()[k]) for k, v in resumed.state_dict().items())
    # a checkpoint of another run (other key) is not resumed: the run starts from its first step
    _, other, seen = run(checkpoint, key={"run": "b"})
    assert seen == [1, 2, 3] and other["loss"] == plain_log["loss"]
    # a damaged checkpoint is set aside and the run starts from its first step
    checkpoint.write_bytes(b"not a checkpoint at all")
    _, again, seen = run(checkpoint)
    assert seen == [1, 2, 3] and again["loss"] == plain_log["loss"]
    assert (tmp_path / "checkpoint.pt.damaged").is_file()


# --------------------------------------------------------------------------- sigma_sim over whole words


class TableOffsets(torch.nn.Module):
    """A stand-in model with 2-d embeddings and offsets given per (token, time): for hand-computed sigma_sim."""

    def __init__(self, vocab_size: int, embeddings: dict, offsets: dict):
        super().__init__()
        self.word_embeddings = torch.nn.Embedding(vocab_size, 2)
        with torch.no_grad():
            self.word_embeddings.weight.zero_()
            for token, vector in embeddings.items():
                self.word_embeddings.weight[token] = torch.tensor(vector)
        dynamic = torch.zeros(vocab_size, dtype=torch.bool)
        dynamic[[t for t, _ in offsets]] = True
        self.register_buffer("dynamic", dynamic)
        self.table = offsets

    def offsets(self, ids, attention, times, units, walk_at_t0=None):
        emb = self.word_embeddings(ids)
        out = torch.zeros_like(emb)
        for b in range(ids.shape[0]):
            for p in range(ids.shape[1]):
                key = (int(ids[b, p]), int(times[b]))
                if attention[b, p] and key in self.table:
                    out[b, p] = torch.tensor(self.table[key])
        return emb, out, None


def test_sigma_sim_of_a_two_piece_word_by_hand(tokenizer):
    """isolating = iso + ##lating; e~_iso = (1, 0), e~_lating = (0, 1); iso's offset is (0, 0) in
    month 0 and (0, 1) in month 1, ##lating has none.
    iso alone: sim 1 and cos((1,0), (1,1)) = 0.70711 -> sigma (population) 0.146447.
    isolating: e~ = (.5, .5); e = (.5, .5) then (.5, 1): sim 1 and 0.75 / (0.70711 * 1.11803) =
    0.948683 -> sigma 0.025658, neither iso's nor ##lating's (0: no offset)."""
    iso, lating = tokenizer.convert_tokens_to_ids(["iso", "##lating"])
    assert tokenizer("isolating", add_special_tokens=False)["input_ids"] == [iso, lating]
    model = TableOffsets(len(tokenizer), {iso: (1.0, 0.0), lating: (0.0, 1.0)},
                         {(iso, 0): (0.0, 0.0), (iso, 1): (0.0, 1.0)})
    texts = ["stop self isolating", "how isolating it is"]
    frame = pl.DataFrame({"doc_id": ["a", "b"], "text": texts, "unit": [0, 0], "time": [0, 1]})
    docs = encode_docs(tokenizer, frame, 16)
    whole = sigma_sim(model, docs, tokenizer, top=5, min_contexts=2)
    assert [w["word"] for w in whole] == ["isolating"] and whole[0]["pieces"] == 2
    assert whole[0]["sigma"] == pytest.approx((1 - 0.75 / (np.sqrt(0.5) * np.sqrt(1.25))) / 2, abs=1e-6)
    assert whole[0]["sigma"] == pytest.approx(0.025658, abs=1e-6)
    assert whole[0]["below"]["time"] == 1 and whole[0]["above"]["time"] == 0
    pieces = sigma_sim(model, docs, tokenizer, top=5, min_contexts=2, words="pieces")
    assert [w["word"] for w in pieces] == ["iso"]
    assert pieces[0]["sigma"] == pytest.approx((1 - np.sqrt(0.5)) / 2, abs=1e-6)     # 0.146447
    with pytest.raises(ValueError, match="sigma_words must be one of"):
        sigma_sim(model, docs, tokenizer, words="letters")


def test_word_vectors_average_the_pieces_of_a_real_model(tokenizer):
    """Two code paths: a word's vectors = the mean of its pieces' (dynamic_embeddings per piece)."""
    from tempoformer.dcwe.evaluate import dynamic_embeddings, text_words, word_vectors

    model = make_model(tokenizer, mode="full", dropout=0.0).eval()
    words = text_words(tokenizer, ["lovely music, isolating"])[0]
    assert [len(w) for w in words] == [1, 1, 1, 2]                  # lovely | music | , | iso ##lating
    pieces = [tokenizer.convert_tokens_to_ids("lovely"), tokenizer.convert_tokens_to_ids("music")]
    units, times = torch.tensor([2]), torch.tensor([1])
    base, dyn = word_vectors(model, [pieces], units, times)
    one_base, one_dyn = dynamic_embeddings(model, torch.tensor(pieces), units.repeat(2), times.repeat(2))
    torch.testing.assert_close(base[0], one_base.mean(0))
    torch.testing.assert_close(dyn[0], one_dyn.mean(0))
    assert not torch.allclose(base, dyn)                           # lovely and music have offsets
