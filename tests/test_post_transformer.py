import logging

import numpy as np
import polars as pl
import pytest
import torch
from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

from tempoformer.training.losses import focal_alpha, focal_loss
from tempoformer.models.post_transformer import (
    PostTransformer,
    PostTransformerConfig,
    pad_batch,
    setup as post_transformer_setup,
)
from tempoformer.training.run import RunData

C = 3


def tiny(kind: str, dropout: float = 0.1):
    torch.manual_seed(0)
    common = dict(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    if kind == "bert":
        backbone = BertModel(BertConfig(max_position_embeddings=64, **common))
    else:  # RoBERTa: pad id 1, positions offset by the padding index
        backbone = RobertaModel(RobertaConfig(max_position_embeddings=66, pad_token_id=1, **common))
    return PostTransformer(PostTransformerConfig(backbone="unused", num_labels=C), backbone)


def toy_batch(n=8, seed=0, pad_id=0):
    """n posts of different lengths, [CLS]-like token first; labels by a token that occurs."""
    g = np.random.default_rng(seed)
    seqs = []
    for i in range(n):
        body = g.integers(5, 60, size=g.integers(3, 10)).tolist()
        seqs.append([2, *body, 3])
    y = torch.tensor([i % C for i in range(n)])
    return pad_batch(seqs, pad_id), y, seqs


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_overfits_eight_posts_with_focal_loss(kind):
    model = tiny(kind)
    assert model.head == ("pooler" if kind == "bert" else "dense")
    batch, y, _ = toy_batch(pad_id=0 if kind == "bert" else 1)
    alpha = focal_alpha(y.numpy(), C)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    first = None
    for _ in range(60):
        loss = focal_loss(model(**batch), y, alpha)
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(**batch).argmax(1)
    assert loss.item() < 0.05 * first
    assert torch.equal(pred, y)
    # every parameter is trained: the unused backbone pooler is gone
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_extra_padding_does_not_change_logits(kind):
    model = tiny(kind).eval()
    pad = 0 if kind == "bert" else 1
    _, _, seqs = toy_batch(pad_id=pad)
    tight = pad_batch(seqs, pad)
    L = tight["input_ids"].shape[1]
    wide = {k: torch.nn.functional.pad(v, (0, 7), value=pad if k == "input_ids" else 0) for k, v in tight.items()}
    assert wide["input_ids"].shape[1] == L + 7
    with torch.no_grad():
        a, b = model(**tight), model(**wide)
        alone = model(**pad_batch(seqs[:1], pad))
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a[:1], alone, atol=1e-5, rtol=1e-5)


def test_head_choice():
    with pytest.raises(ValueError, match="unknown head"):
        PostTransformer(PostTransformerConfig("unused", 2, head="mean"), BertModel(BertConfig(
            vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)))
    bert = BertModel(BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=8))
    # a BERT checkpoint without pooler weights gets RoBERTa's fresh tanh-dense
    assert PostTransformer(PostTransformerConfig("unused", 2), bert, pooler_loaded=False).head == "dense"


def test_minilm_setup_pads_batches_to_their_longest_post():
    texts = ["short", "a somewhat longer post about the rumour and the stance of replies",
             "mid length post here", "ok", "another one"]
    posts = pl.DataFrame({"text": texts})
    data = RunData(posts=posts, labels=["A", "B"], y=np.array([0, 1, 0, 1, 0]),
                   rows={"train": np.arange(5)}, streams=None, embeddings=None)
    params = {"backbone": "minilm", "max_tokens": 12, "epochs": 1, "batch_size": 2, "dropout": 0.2,
              "grid": {"lr": [1e-5]}}
    build, make_batch = post_transformer_setup(data, params, window=1)
    model = build({"lr": 1e-5}).eval()
    # MiniLM's sentence-transformers config declares mean pooling: `auto` reads the token mean
    assert model.head == "mean" and model.config.post_pooling == "mean" and model.dropout.p == 0.2
    short = make_batch(np.array([0, 3]))
    assert short["input_ids"].shape == (2, 3)  # [CLS] word [SEP]
    batch = make_batch(np.array([0, 1, 2]))
    assert batch["input_ids"].shape[1] == 12 and batch["attention_mask"][0].sum() == 3  # truncated
    with torch.no_grad():
        logits = model(**batch)
        again = model(**make_batch(np.array([1])))
    assert logits.shape == (3, 2) and torch.isfinite(logits).all()
    torch.testing.assert_close(logits[1:2], again, atol=1e-5, rtol=1e-4)


def sharpened(post_pooling="auto"):
    """Tiny BERT PostTransformer with unit-scale head weights (at 0.02 every post gets ~ the same logits)."""
    torch.manual_seed(0)
    common = dict(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    m = PostTransformer(PostTransformerConfig(backbone="unused", num_labels=C, post_pooling=post_pooling),
                        BertModel(BertConfig(max_position_embeddings=64, **common))).eval()
    torch.manual_seed(1)
    with torch.no_grad():
        for lin in (m.pool_dense, m.classifier):
            if lin is not None:
                lin.weight.normal_(0, lin.in_features ** -0.5)
    return m


def four_posts():
    g = np.random.default_rng(0)
    return pad_batch([[2, *g.integers(5, 60, size=g.integers(3, 10)).tolist(), 3] for _ in range(4)], 0)


@pytest.mark.parametrize("pooling", ["cls_pooler", "auto"])  # auto: a BERT without a sentence-transformers config
def test_cls_pooler_logits_equal_the_code_before_post_pooling(pooling):
    # computed with the code before post_pooling existed (commit 517691f)
    before = [[-0.25438982248306274, -0.207508385181427, 0.7012659907341003],
              [-0.2540085017681122, -0.20619475841522217, 0.7031536102294922],
              [-0.24764671921730042, -0.20711949467658997, 0.7022203207015991],
              [-0.25099676847457886, -0.20652231574058533, 0.7008063793182373]]
    m = sharpened(pooling)
    assert m.head == "pooler" and m.config.post_pooling == "cls_pooler"
    with torch.no_grad():
        torch.testing.assert_close(m(**four_posts()), torch.tensor(before), atol=1e-5, rtol=0)


def test_mean_pooling_is_the_token_mean_read_by_the_classifier():
    m = sharpened("mean")
    assert m.head == "mean" and m.pool_dense is None
    batch = four_posts()
    with torch.no_grad():
        h = m.encoder(**batch).last_hidden_state
        n = batch["attention_mask"].sum(1)
        means = torch.stack([h[i, : int(k)].mean(0) for i, k in enumerate(n)])
        torch.testing.assert_close(m(**batch), m.classifier(means), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="projects the \\[CLS\\]"):
        PostTransformer(PostTransformerConfig("unused", 2, head="pooler", post_pooling="mean"), BertModel(BertConfig(
            vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)))


def test_untrained_pooler_warning(tmp_path, caplog):
    bert = BertModel(BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=8))
    assert not bert.pooler.dense.bias.any()  # HF's init: what a pooler that was never trained keeps
    bert.save_pretrained(tmp_path / "untrained")
    with torch.no_grad():
        bert.pooler.dense.bias.fill_(0.1)
    bert.save_pretrained(tmp_path / "trained")
    with caplog.at_level(logging.WARNING, logger="tempoformer.models.pooling"):
        m = PostTransformer(PostTransformerConfig(str(tmp_path / "untrained"), 2, post_pooling="cls_pooler"))
    assert m.head == "pooler"
    (record,) = caplog.records
    assert str(tmp_path / "untrained") in record.message and "never trained" in record.message
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tempoformer.models.pooling"):
        PostTransformer(PostTransformerConfig(str(tmp_path / "trained"), 2, post_pooling="cls_pooler"))
        PostTransformer(PostTransformerConfig(str(tmp_path / "untrained"), 2, post_pooling="mean"))
    assert not caplog.records
