"""DCWE's sentiment task (paper Table 5): the chitchat rating split, labels in the readers, the
classifier, macro-F1 and the exact McNemar test."""

import json
import math
from copy import deepcopy

import numpy as np
import polars as pl
import pytest
import torch
from torch.nn import functional as F

from tempoformer.cli import main
from tempoformer.dcwe.data import chitchat_rating_corpus, make_corpus, read_csv_corpus, read_release, save_corpus
from tempoformer.dcwe.model import DcweModel, DcweSpec
from tempoformer.dcwe.metrics import classify, mcnemar, paired_predictions, scores
from tempoformer.dcwe.sentiment import SentimentModel, predict, split_settings, train_sentiment
from tempoformer.dcwe.train import DCWETrainSettings, encode_docs
from tempoformer.errors import InputError
from test_dcwe import GRAPH, TEXTS, make_model
from test_dcwe_data import write_csv
from test_semantic_change import tiny_bert


@pytest.fixture(scope="module")
def tokenizer():
    from tempoformer.semantic_change.model import load_tokenizer

    return load_tokenizer("minilm")


# --------------------------------------------------------------------------- data


def test_the_chitchat_rating_split_matches_the_spec():
    """../shared/specs/dcwe.md §5: 1,789 vs 246 rated two-sender conversations, 8,036 documents of 294 words."""
    corpus = chitchat_rating_corpus()
    counts = corpus.notes["counts"]
    assert (counts["positive conversations"], counts["negative conversations"]) == (1789, 246)
    assert counts["unrated two-sender conversations"] == 313
    assert counts["two-sender conversations rated between 4 and 6"] == 1670
    assert corpus.notes["two_sender_documents"] == 8036
    assert round(corpus.notes["two_sender_mean_words"]) == 294
    # 2 x 2,035 documents, 176 under 10 words
    assert counts["documents under 10 words"] == 176 and corpus.docs.height == 3894
    assert corpus.docs["label"].sum() == 3497
    assert corpus.periods == ["2018-04", "2018-05", "2018-09", "2018-10", "2018-11"]
    # both sides of a conversation fall in one split
    conversation = corpus.docs["doc_id"].str.split(":").list.first()
    per_conversation = corpus.docs.with_columns(conversation=conversation).group_by("conversation").agg(
        pl.col("split").n_unique().alias("splits"), pl.col("label").n_unique().alias("labels"))
    assert per_conversation["splits"].max() == 1 and per_conversation["labels"].max() == 1
    shares = corpus.docs.group_by("split").len().sort("split")["len"].to_list()  # dev, test, train
    assert shares[2] / corpus.docs.height == pytest.approx(0.7, abs=0.01)


def rated(a, b, texts, upbeat, month="05"):
    conv = {"messages": [[{"text": t, "timestamp": f"2018-{month}-0{i % 9 + 1}T00:00:00Z", "sender": s}]
                         for i, (s, t) in enumerate(zip([a, b] * len(texts), texts))]}
    if upbeat != "unrated":
        conv["ratings"] = {"upbeat": upbeat, "witty": 5}
    return conv


def test_chitchat_rating_on_a_small_file(tmp_path):
    long = "word " * 9
    data = {"c1": rated("x", "y", [long + "a", long + "b", "short"], 8),
            "c2": rated("y", "z", [long + "c", "too short"], 2, "09"),       # z's side has 2 words: left out
            "c3": rated("x", "z", [long + "d", long + "e"], 5),              # rated 5: dropped
            "c4": rated("x", "w", [long + "f", long + "g"], "unrated"),
            "c5": {"messages": [[{"text": long + "h", "timestamp": "2018-05-01T00:00:00Z", "sender": "v"}]],
                   "ratings": {"upbeat": 10}}}                             # one sender
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps(data))
    corpus = chitchat_rating_corpus(path)
    assert corpus.docs["doc_id"].to_list() == ["c1:x", "c1:y", "c2:y"]
    assert corpus.docs["label"].to_list() == [1, 1, 0]
    assert corpus.docs["text"][0] == long + "a short"     # x's utterances in c1, in order
    assert corpus.units == ["x", "y"] and corpus.periods == ["2018-05", "2018-09"]
    assert corpus.edges == [(0, 1)]          # x-y; y-z, x-z and x-w name senders without a document
    counts = corpus.notes["counts"]
    assert counts["unrated two-sender conversations"] == 1 and counts["conversations without exactly two senders"] == 1
    with pytest.raises(InputError, match="no labelled document"):
        chitchat_rating_corpus(path, cap=0)
    assert chitchat_rating_corpus(path, positive=9).docs["doc_id"].to_list() == ["c2:y"]   # 8 now in between
    data["c3"]["ratings"]["upbeat"] = "great"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="conversation c3: rating 'upbeat' is 'great', not a number"):
        chitchat_rating_corpus(path)


def test_labels_in_the_csv_and_authors_readers(tmp_path):
    docs = write_csv(tmp_path / "docs.csv", ["unit", "time", "text", "label"],
                     [("a", 0, "one two", 1), ("b", 1, "three four", "0.0")])
    assert read_csv_corpus(docs).docs["label"].to_list() == [1, 0]
    bad = write_csv(tmp_path / "bad.csv", ["unit", "time", "text", "label"], [("a", 0, "one two", 1), ("b", 1, "x", 3)])
    with pytest.raises(InputError, match=r"bad.csv: record line 3: label '3' is not 0 or 1"):
        read_csv_corpus(bad)
    import pickle

    header = ["user", "time", "year", "month", "day", "text", "rating"]
    for split, rows in {"train": [("u1", "t", 2010, 3, 1, "fine", 5), ("u2", "t", 2011, 5, 2, "bad", 2)],
                        "dev": [("u1", "t", 2011, 1, 1, "meh", 3)], "test": [("u2", "t", 2010, 1, 1, "ok", 4)]}.items():
        write_csv(tmp_path / f"ciao_{split}.csv", header, rows)
    (tmp_path / "ciao_users.p").write_bytes(pickle.dumps(["u1", "u2"]))
    (tmp_path / "ciao_edges.p").write_bytes(pickle.dumps({("u1", "u2")}))
    # no label column: the authors' rating_to_label (1-2 -> 0, 4-5 -> 1; 3 has none)
    assert read_release(tmp_path, "ciao", allow_pickle=True).docs["label"].to_list() == [1, 0, None, 1]
    write_csv(tmp_path / "ciao_test.csv", header, [("u2", "t", 2010, 1, 1, "ok", 7)])
    with pytest.raises(InputError, match="ciao_test.csv: record line 2: rating '7' is outside 1-5"):
        read_release(tmp_path, "ciao", allow_pickle=True)


def test_a_document_without_a_label_stops_the_sentiment_job(tmp_path):
    records = [{"doc_id": f"d{i}", "text": "some words here", "unit": 0, "time": 0, "split": s,
                "label": None if i == 2 else i % 2} for i, s in enumerate(["train", "train", "dev", "test"])]
    save_corpus(make_corpus("toy", records, ["u"], [], ["0"]), tmp_path / "corpus")
    code = main(["dcwe-sentiment", "--corpus", str(tmp_path / "corpus"), "--variant", "cwe", "--seed", "0",
                 "--out-dir", str(tmp_path / "out")])
    assert code == 1 and not (tmp_path / "out").exists()
    from tempoformer.dcwe.cli import run_sentiment

    with pytest.raises(InputError, match=r"docs.parquet: record document d2: sentiment label None is not 0 or 1"):
        run_sentiment(tmp_path / "corpus", "cwe", {}, 0, tmp_path / "out")


# --------------------------------------------------------------------------- metrics


def test_mcnemar_by_hand_and_against_scipy():
    gold = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0])
    a = np.array([1, 1, 1, 1, 1, 0, 0, 0, 1, 1])   # right: 0-4, 6, 7
    b = np.array([0, 0, 0, 0, 1, 1, 0, 0, 1, 1])   # right: 4, 5, 6, 7
    test = mcnemar(gold, a, b)
    assert (test["b"], test["c"]) == (4, 1)          # only A right: 0-3; only B right: 5
    assert test["p"] == pytest.approx(2 * (1 + 5) / 2 ** 5)  # 2 P(X <= 1), X ~ Bin(5, 1/2) = 0.375
    from scipy.stats import binomtest

    assert test["p"] == pytest.approx(binomtest(4, 5, 0.5).pvalue)
    assert mcnemar(gold, a, a)["p"] == 1.0 and mcnemar(gold, a, a)["n"] == 0
    assert mcnemar(np.zeros(30), np.zeros(30), np.ones(30))["p"] == pytest.approx(2 / 2 ** 30)
    with pytest.raises(ValueError, match="paired"):
        mcnemar(gold, a, b[:5])


def test_macro_f1_and_threshold_by_hand():
    assert classify([0.2, 0.5, 0.51, 0.9]).tolist() == [0, 0, 1, 1]   # 0.5 -> negative (torch.round)
    gold, pred = np.array([1, 1, 1, 0, 0]), np.array([1, 1, 0, 0, 1])
    out = scores(gold, pred)
    # positive: tp 2, fp 1, fn 1 -> F1 2/3; negative: tp 1, fp 1, fn 1 -> F1 1/2
    assert out["macro_f1"] == pytest.approx((2 / 3 + 1 / 2) / 2) and out["accuracy"] == pytest.approx(0.6)
    from sklearn.metrics import f1_score

    assert out["macro_f1"] == pytest.approx(f1_score(gold, pred, average="macro"))
    a = pl.DataFrame({"doc_id": ["x", "y"], "label": [1, 0], "pred": [1, 1]})
    with pytest.raises(ValueError, match="do not pair"):
        paired_predictions(a, a.head(1))


# --------------------------------------------------------------------------- the classifier


def small_classifier(tokenizer, mode="cwe", pooling="mean", offset_init="pytorch", bert=None, seed=0):
    bert = bert if bert is not None else tiny_bert(0)
    pooler = bert.pooler
    if mode == "cwe":
        dcwe = DcweModel(bert, DcweSpec(mode="cwe", n_times=2), [], seed=seed, mlm_head=False)
    else:
        dcwe = make_model(tokenizer, mode=mode, offset_init=offset_init, bert=bert, seed=seed)
        dcwe.mlm = None
    return SentimentModel(dcwe, pooling, pooler, hidden=5, dropout=0.2, seed=seed)


def docs_of(tokenizer):
    frame = pl.DataFrame({"doc_id": [f"d{i}" for i in range(len(TEXTS))], "text": TEXTS,
                          "unit": [i % 3 for i in range(len(TEXTS))], "time": [i % 2 for i in range(len(TEXTS))]})
    return encode_docs(tokenizer, frame, 16), np.array([1, 0, 1, 0, 1, 1])


@pytest.mark.parametrize("pooling", ["mean", "cls_pooler"])
def test_the_classifier_is_the_authors_on_the_pooled_representation(tokenizer, pooling):
    model = small_classifier(tokenizer, pooling=pooling).eval()
    docs, _ = docs_of(tokenizer)
    probs = predict(model, docs, tokenizer.pad_token_id, batch_size=4)
    bert = model.dcwe.bert
    for i, ids in enumerate(docs.ids):
        ids = torch.tensor([ids])
        hidden = bert(input_ids=ids).last_hidden_state
        if pooling == "mean":
            pooled = hidden[0].mean(0)
        else:   # the pooled [CLS]: tanh(W h_CLS + b)
            pooled = torch.tanh(model.pooler.dense(hidden[0, 0]))
        logit = model.linear_2(torch.tanh(model.linear_1(pooled)))
        assert probs[i] == pytest.approx(torch.sigmoid(logit).item(), abs=1e-6)


def test_zero_offsets_give_the_cwe_classifier(tokenizer):
    bert = tiny_bert(2)
    cwe = small_classifier(tokenizer, "cwe", bert=deepcopy(bert))
    dcwe = small_classifier(tokenizer, "full", offset_init="zero", bert=deepcopy(bert))
    assert torch.equal(cwe.linear_1.weight, dcwe.linear_1.weight)        # the same head for a seed
    docs, _ = docs_of(tokenizer)
    np.testing.assert_array_equal(predict(cwe, docs, 0), predict(dcwe, docs, 0))
    moved = small_classifier(tokenizer, "full", offset_init="pytorch", bert=deepcopy(bert))
    assert not np.array_equal(predict(cwe, docs, 0), predict(moved, docs, 0))


def test_sentiment_training_is_deterministic_and_learns(tokenizer):
    docs, labels = docs_of(tokenizer)
    settings = DCWETrainSettings(steps=12, batch_size=3, lr=1e-3, dynamic_lr=1e-2, head_lr=1e-2)
    runs = []
    for _ in range(2):
        model = small_classifier(tokenizer, "full", offset_init="zero")
        log = train_sentiment(model, docs, labels, tokenizer.pad_token_id, settings, seed=3)
        runs.append((log, predict(model, docs, 0)))
    assert runs[0][0]["loss"] == runs[1][0]["loss"]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert np.mean(runs[0][0]["bce"][-3:]) < np.mean(runs[0][0]["bce"][:3])   # it fits 6 documents
    assert min(runs[0][0]["anchor"][1:]) > 0                                 # the priors count
    bce = F.binary_cross_entropy(torch.tensor(runs[0][1]), torch.tensor(labels, dtype=torch.float64))
    assert bce.item() < math.log(2)


def test_sentiment_settings_split_classifier_and_training_keys():
    classifier, training = split_settings({"post_pooling": "cls_pooler", "hidden": 7, "steps": 3, "lambda_a": 0.0})
    assert (classifier.post_pooling, classifier.hidden, training.steps, training.lambda_a) == ("cls_pooler", 7, 3, 0.0)
    with pytest.raises(ValueError, match="unknown training settings"):
        split_settings({"pooling": "mean"})
    with pytest.raises(ValueError, match="post_pooling"):
        split_settings({"post_pooling": "max"})
    assert GRAPH  # the classifier's DCWE reads test_dcwe's three-unit graph


def test_per_epoch_selection_keeps_the_highest_dev_f1(tokenizer):
    docs, labels = docs_of(tokenizer)
    model = small_classifier(tokenizer, "cwe")
    dev = {1: 0.8, 2: 0.5}
    log = train_sentiment(model, docs, labels, 0, DCWETrainSettings(epochs=2, batch_size=3, lr=1e-3), seed=0,
                          evaluate=dev.__getitem__)
    assert log["best_epoch"] == 1 and log["steps"] == 4 and [e["dev"] for e in log["epochs"]] == [0.8, 0.5]
