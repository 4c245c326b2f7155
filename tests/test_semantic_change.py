"""Temporal attention, the model around it, word-piece pooling and cosine distance (tiny tensors,
tiny random BERTs; the real tokenizer where word pieces matter)."""

import math

import numpy as np
import pytest
import torch

from tempoformer.semantic_change.attention import scale_table, temporal_scores, time_matrix
from tempoformer.semantic_change.encoding import WordPieceEncoder
from tempoformer.semantic_change.model import TemporalSpec, build_model
from tempoformer.semantic_change.pretrain import collate
from tempoformer.semantic_change.scoring import cosine_distance, pool_layers, pool_pieces


@pytest.fixture(scope="module")
def tokenizer():
    from tempoformer.semantic_change.model import load_tokenizer

    return load_tokenizer("minilm")


def tiny_bert(seed=0, vocab=30522):
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=vocab, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64,
                        initializer_range=0.3)  # large weights: attention logits that matter
    return BertModel(config).eval()


def tiny_model(tokenizer, seed=0, **spec):
    from copy import deepcopy

    spec = TemporalSpec(periods=["1810", "1960"], **spec)
    model, tok, time_ids = build_model("minilm", spec, seed=seed, bert=tiny_bert(seed), tokenizer=deepcopy(tokenizer))
    return model.eval(), tok, time_ids


def batch(encoder, sentences, periods):
    ids, mask = collate([encoder.encode(s, period=p) for s, p in zip(sentences, periods)], encoder.pad_id)
    return ids, mask, torch.tensor(periods)


# ------------------------------------------------------------------ attention, hand-computed


def test_temporal_attention_hand_computed():
    # One head, d = 2, two real tokens with the same time vector t = (1, 0) and a padding token.
    q = torch.tensor([[[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]])
    k = torch.tensor([[[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]])
    t = torch.tensor([[[[1.0, 0.0], [1.0, 0.0], [5.0, 5.0]]]])
    mask = torch.tensor([[True, True, False]])
    # TᵀT over the real tokens = [[2, 0], [0, 0]], ‖T‖ = √2, so M = [[√2, 0], [0, 0]].
    m = time_matrix(t, mask, "sequence")
    assert torch.allclose(m[0, 0], torch.tensor([[math.sqrt(2), 0.0], [0.0, 0.0]]), atol=1e-6)
    paper = temporal_scores(q, k, t, mask, scaling=1.0, form="paper")[0, 0, :2, :2]
    assert torch.allclose(paper, torch.tensor([[math.sqrt(2), 0.0], [0.0, 0.0]]), atol=1e-6)
    residual = temporal_scores(q, k, t, mask, scaling=1.0, form="residual")[0, 0, :2, :2]
    assert torch.allclose(residual, torch.tensor([[1 + math.sqrt(2), 0.0], [0.0, 1.0]]), atol=1e-6)
    # Softmax of the first query over the two real keys.
    probs = torch.softmax(residual[0], dim=-1)
    e = math.exp(1 + math.sqrt(2))
    assert probs.tolist() == pytest.approx([e / (e + 1), 1 / (e + 1)], rel=1e-6)
    # The authors' batch norm counts the padding token: TᵀT = [[27, 25], [25, 25]], ‖T‖ = √52.
    batch_m = time_matrix(t, mask, "batch")[0, 0]
    assert torch.allclose(batch_m, torch.tensor([[27.0, 25.0], [25.0, 25.0]]) / math.sqrt(52), atol=1e-5)


def test_zero_time_is_plain_attention():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 4, 5, generator=g), torch.randn(2, 3, 4, 5, generator=g)
    scores = temporal_scores(q, k, torch.zeros(2, 3, 4, 5), torch.ones(2, 4, dtype=torch.bool), 0.5)
    assert torch.allclose(scores, q @ k.transpose(-1, -2) * 0.5)


def test_scale_tables_as_in_the_paper():
    assert scale_table("scaled_linear", 2) == [1.0, 2.0]
    assert scale_table("scaled_exp", 3) == [2.0, 4.0, 8.0]
    assert scale_table("scaled_doc", 2, [1, 3]) == [0.25, 0.75]


# ------------------------------------------------------------------ the model


def test_without_time_the_model_is_the_pretrained_one(tokenizer):
    bert = tiny_bert(3)
    with torch.no_grad():
        reference = bert  # the same weights go into TemporalBert
        ids = torch.tensor([[101, 2023, 2003, 102, 0], [101, 7592, 2088, 2088, 102]])
        mask = (ids != 0).long()
        expected = reference(input_ids=ids, attention_mask=mask).last_hidden_state
    for time, std in (("none", 1e-3), ("attention", 0.0)):
        from copy import deepcopy

        model, _, _ = build_model("minilm", TemporalSpec(periods=["a", "b"], time=time, time_init_std=std),
                                  bert=deepcopy(bert), tokenizer=tokenizer)
        with torch.no_grad():
            out = model.eval()(ids, mask, torch.tensor([0, 1]))[-1]
        assert torch.allclose(out[mask.bool()], expected[mask.bool()], atol=1e-5), time


def test_small_time_init_starts_near_pretrained_and_learns(tokenizer):
    plain, _, _ = tiny_model(tokenizer, time="none")
    timed, tok, _ = tiny_model(tokenizer, time="attention")  # default time_init_std 1e-3
    encoder = WordPieceEncoder(tok, 32)
    ids, mask, periods = batch(encoder, [["the", "plane", "flew"], ["a", "quilt"]], [0, 1])
    with torch.no_grad():
        a, b = plain(ids, mask, periods)[-1], timed(ids, mask, periods)[-1]
    assert (a - b).abs().max() < 1e-2
    diagnostics = timed.time_diagnostics()["layers"]
    assert len(diagnostics) == 2 and all(0 < n < 1e-2 for layer in diagnostics for n in layer["tau_norm"])
    assert plain.time_diagnostics() is None
    timed.train()
    timed(ids, mask, periods)[-1].pow(2).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in timed.time_proj.parameters())
    assert timed.time_embeddings.weight.grad[1:].abs().sum() > 0


@pytest.mark.parametrize("time_norm", ["sequence", "batch"])
def test_embedding_and_batch_composition(tokenizer, time_norm):
    """Per-sequence norm: a sentence's embedding ignores its batch; the authors' batch norm: not."""
    model, tok, _ = tiny_model(tokenizer, time="attention", time_norm=time_norm, time_init_std=1.0)
    encoder = WordPieceEncoder(tok, 32)
    alone = batch(encoder, [["the", "plane", "flew", "home"]], [0])
    crowd = batch(encoder, [["the", "plane", "flew", "home"],
                            ["a", "much", "longer", "sentence", "about", "a", "quilt", "and", "a", "lass"],
                            ["stab"]], [0, 1, 1])
    with torch.no_grad():
        x = model(*alone)[-1][0, :6]
        y = model(*crowd)[-1][0, :6]
    if time_norm == "sequence":
        assert torch.allclose(x, y, atol=1e-5)
    else:
        assert (x - y).abs().max() > 1e-3


def test_scaled_attention_scales_by_period(tokenizer):
    plain, tok, _ = tiny_model(tokenizer, time="none")
    scaled, _, _ = tiny_model(tokenizer, time="scaled_linear")
    encoder = WordPieceEncoder(tok, 32)
    ids, mask, _ = batch(encoder, [["the", "plane"]], [0])
    with torch.no_grad():
        base = plain(ids, mask)[-1]
        first = scaled(ids, mask, torch.tensor([0]))[-1]   # s = 1: plain attention
        second = scaled(ids, mask, torch.tensor([1]))[-1]  # s = 2
    assert torch.allclose(base, first, atol=1e-6)
    assert (base - second).abs().max() > 1e-4


def test_time_tokens_are_added_and_prepended(tokenizer):
    model, tok, time_ids = tiny_model(tokenizer, time="none", prepend=True)
    assert tok.convert_ids_to_tokens(time_ids) == ["<1810>", "<1960>"]
    assert model.embeddings.word_embeddings.weight.shape[0] == len(tok)
    encoded = WordPieceEncoder(tok, 32, time_ids).encode(["plane", "tree"], period=1)
    assert tok.convert_ids_to_tokens(encoded.ids) == ["[CLS]", "<1960>", "plane", "tree", "[SEP]"]
    assert encoded.spans == {0: (2, 3), 1: (3, 4)}
    assert tok.tokenize("<1810> plane") == ["<1810>", "plane"]


# ------------------------------------------------------------------ pieces, pooling, distance


def test_subword_pooling_locates_the_target_pieces(tokenizer):
    encoder = WordPieceEncoder(tokenizer, 64)
    words = ["the", "contemplation", "of", "don't", "multitude"]
    encoded = encoder.encode(words)
    pieces = tokenizer.convert_ids_to_tokens(encoded.ids)
    assert pieces == ["[CLS]", "the", "con", "##tem", "##pl", "##ation", "of", "don", "'", "t", "multitude", "[SEP]"]
    assert encoded.spans[1] == (2, 6) and encoded.spans[3] == (7, 10) and encoded.spans[4] == (10, 11)
    states = torch.arange(12, dtype=torch.float32)[:, None].repeat(1, 3)
    assert pool_pieces(states, [encoded.spans[1]]).tolist() == [3.5] * 3  # mean of rows 2..5
    assert pool_pieces(states, [encoded.spans[1], encoded.spans[4]]).tolist() == [(3.5 + 10) / 2] * 3


def test_long_sentence_is_cut_around_the_target(tokenizer):
    encoder = WordPieceEncoder(tokenizer, 12)
    words = ["word"] * 30 + ["contemplation"] + ["word"] * 30
    encoded = encoder.encode(words, focus=30)
    assert len(encoded.ids) <= 12
    a, b = encoded.spans[30]
    assert tokenizer.convert_ids_to_tokens(encoded.ids[a:b]) == ["con", "##tem", "##pl", "##ation"]
    assert encoded.first_word < 30 < encoded.last_word
    assert len(encoder.encode(words).ids) == 12  # no focus: the first words


def test_layer_average():
    hidden = [torch.full((1, 2, 3), float(i)) for i in range(5)]  # embeddings + 4 layers
    assert pool_layers(hidden, 1)[0, 0, 0] == 4.0
    assert pool_layers(hidden, 2)[0, 0, 0] == 3.5
    assert pool_layers(hidden, "all")[0, 0, 0] == 2.5  # layers 1..4, not the embeddings


def test_cosine_distance_hand_computed():
    assert cosine_distance([1.0, 0.0], [1.0, 1.0]) == pytest.approx(1 - 1 / math.sqrt(2))
    assert cosine_distance([1.0, 2.0], [2.0, 4.0]) == pytest.approx(0.0, abs=1e-12)
    assert cosine_distance([1.0, 0.0], [-3.0, 0.0]) == pytest.approx(2.0)
    # A distance, not L2: scaling a vector does not change it.
    assert cosine_distance([3.0, 4.0], [4.0, 3.0]) == pytest.approx(cosine_distance([30.0, 40.0], [4.0, 3.0]))
    assert np.isnan(cosine_distance([0.0, 0.0], [1.0, 0.0]))
