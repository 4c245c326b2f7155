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


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


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
    assert model.head == "pooler" and model.dropout.p == 0.2  # MiniLM ships its pretrained pooler
    short = make_batch(np.array([0, 3]))
    assert short["input_ids"].shape == (2, 3)  # [CLS] word [SEP]
    batch = make_batch(np.array([0, 1, 2]))
    assert batch["input_ids"].shape[1] == 12 and batch["attention_mask"][0].sum() == 3  # truncated
    with torch.no_grad():
        logits = model(**batch)
        again = model(**make_batch(np.array([1])))
    assert logits.shape == (3, 2) and torch.isfinite(logits).all()
    torch.testing.assert_close(logits[1:2], again, atol=1e-5, rtol=1e-4)
