"""Future LM models and metrics: temporal biases, padding, generation, perplexities, METEOR."""

import math

import numpy as np
import pytest
import torch

from tempoformer.future_lm.biases import BiasSpec, TemporalLM, YearFeatures, evaluation_scaling
from tempoformer.future_lm.evaluate import (Doc, chunked_nll, chunked_summary, content_meteor, corpus_metrics,
                                            doc_scores, joined_stream, stream_nll, token_nll, windows)
from tempoformer.future_lm.frequency import smoothed_log_frequency
from tempoformer.future_lm.generate import DecodeSettings, beam_sample, top_k_top_p
from tempoformer.future_lm.lm import CausalLM, LMConfig
from tempoformer.future_lm.meteor import meteor, stem
from tempoformer.future_lm.unigram import predicted_log_f

V, D_CTX = 40, 6
YEARS = [2016, 2017, 2018, 2019, 2020]
BOS, EOS = 2, 3


def features(window=2, shortcut=False, scaling="none"):
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 20, size=(len(YEARS), V))
    freq = {"years": np.asarray(YEARS), "log_f": smoothed_log_frequency(counts).astype(np.float32),
            "no_bias": np.asarray([0, 1, 2]), "counts": counts, "smoothing": np.asarray(1.0)}
    ctx = {"years": np.asarray(YEARS), "vectors": rng.normal(size=(len(YEARS), V, D_CTX)).astype(np.float16),
           "counts": counts}
    return YearFeatures(freq, ctx, last_train_year=2018, window=window, shortcut=shortcut, scaling=scaling)


def lm(seed=0, context=16):
    torch.manual_seed(seed)
    return CausalLM(LMConfig(vocab_size=V, d_model=16, n_layers=2, n_heads=2, d_ff=32, context=context, dropout=0.0))


# alpha_scope all: α (set to 0 below) scales every bias, not only Context²'s (the paper's Eq. 10)
ALL = dict(alpha_scope="all")
SPECS = [dict(type="static_bias", **ALL), dict(type="frequency_nolstm", **ALL),
         dict(type="frequency_nolstm", nolstm_bias="pooled", **ALL), dict(type="frequency", **ALL),
         dict(type="context", **ALL), dict(type="context", context_proj=4, presence_flag=True, **ALL),
         dict(type="context", context_bias="embedding", **ALL), dict(type="context2"),
         dict(type="context2", context_proj=4, presence_flag=True),
         dict(type="context2", gate="summed_vocab"), dict(type="context2", gate="summed_vocab", length_factor=True)]


def temporal(spec: dict, alpha: float, base=None, feats=None):
    model = TemporalLM(base or lm(), BiasSpec(**spec, alpha=alpha), feats or features())
    torch.manual_seed(1)
    for name, p in model.named_parameters():  # make every new weight matter
        if not name.startswith("lm."):
            torch.nn.init.normal_(p, std=0.5)
    model.alpha.data.fill_(alpha)
    return model.eval()


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_alpha_zero_gives_the_base_models_logits(spec):
    base = lm()
    ids = torch.randint(4, V, (3, 9))
    with torch.no_grad():
        expected = base(ids)
        got, _ = temporal(spec, 0.0, base).logits(ids, 2020)
        moved, _ = temporal(spec, 1.0, base).logits(ids, 2020)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    assert not torch.allclose(moved, expected)  # the bias is not zero: alpha is what switched it off


@pytest.mark.parametrize("spec", [s for s in SPECS if not s.get("length_factor")],
                         ids=lambda s: "-".join(str(v) for v in s.values()))
def test_no_bias_on_unk_pad_bos(spec):
    base = lm()
    ids = torch.randint(4, V, (2, 5))
    with torch.no_grad():
        got, _ = temporal(spec, 1.0, base).logits(ids, 2020)
        expected = base(ids)
    torch.testing.assert_close(got[..., :3], expected[..., :3])


def test_context2_bias_does_not_depend_on_the_padded_length():
    model = temporal(dict(type="context2"), 1.0)
    doc = torch.randint(4, V, (1, 6))
    with torch.no_grad():
        alone, _ = model.logits(doc, 2019)
        for pad in (1, 5, 10):
            padded = torch.cat([doc, torch.zeros(1, pad, dtype=torch.long)], dim=1)
            batch = torch.cat([padded, torch.randint(4, V, (1, padded.shape[1]))])  # another document beside it
            out, _ = model.logits(batch, 2019)
            torch.testing.assert_close(out[0, :6], alone[0], rtol=1e-5, atol=1e-5)
        # and in cached generation, one position at a time, the same logits
        past, steps = None, []
        for k in range(6):
            step, past = model.logits(doc[:, k:k + 1], 2019, past)
            steps.append(step)
        torch.testing.assert_close(torch.cat(steps, dim=1), alone, rtol=1e-4, atol=1e-4)


def test_the_authors_length_factor_does_depend_on_the_padded_length():
    model = temporal(dict(type="context2", gate="summed_vocab", length_factor=True), 1.0)
    doc = torch.randint(4, V, (1, 6))
    with torch.no_grad():
        alone, _ = model.logits(doc, 2019)
        padded, _ = model.logits(torch.cat([doc, torch.zeros(1, 4, dtype=torch.long)], dim=1), 2019)
    assert not torch.allclose(padded[0, :6], alone[0], atol=1e-3)


def test_the_authors_pooled_frequency_nolstm_bias_by_hand():
    counts = np.array([[5, 0, 0, 0], [1, 2, 0, 1], [3, 0, 0, 2]])  # 2017, 2018, 2019
    freq = {"years": np.array([2017, 2018, 2019]), "log_f": smoothed_log_frequency(counts), "counts": counts,
            "smoothing": np.asarray(1.0)}
    # 2018 + 2019 pooled: [4, 2, 0, 3], N = 9; add-one over V = 4: (c + 1) / 13
    f = YearFeatures(freq, None, last_train_year=2019)
    np.testing.assert_allclose(f.pooled_log_f(2).numpy(), np.log(np.array([5, 3, 1, 4]) / 13), rtol=1e-6)
    # the authors' min-max scaling into [-b, b]: 2b (log(c + 1) - log 1) / log 5 - b
    b = 1 / math.sqrt(768)
    scaled = YearFeatures(freq, None, last_train_year=2019, scaling="minmax").pooled_log_f(2).numpy()
    np.testing.assert_allclose(scaled, 2 * b * np.log([5, 3, 1, 4]) / math.log(5) - b, rtol=1e-5)
    # in the model: one bias for every year (2019's own counts pooled even for a 2017 document)
    base = lm()
    model = temporal(dict(type="frequency_nolstm", nolstm_bias="pooled", pooled_years=3, **ALL), 1.0, base)
    ids = torch.randint(4, V, (2, 5))
    f = features()
    pooled = smoothed_log_frequency(f.counts[:3].sum(axis=0, keepdims=True))[0]  # 2016-2018, last_train_year 2018
    expected_bias = torch.tensor(pooled - pooled.mean(), dtype=torch.float32) * f.bias_mask
    with torch.no_grad():
        for year in (2017, 2019, 2020):
            got, _ = model.logits(ids, year)
            torch.testing.assert_close(got - base(ids), expected_bias.expand_as(got), rtol=1e-4, atol=1e-4)
        previous, _ = temporal(dict(type="frequency_nolstm", **ALL), 1.0, base).logits(ids, 2020)
    assert not torch.allclose(previous, got, atol=1e-3)  # ours reads 2019's log f for 2020
    with pytest.raises(ValueError, match="pooled_years"):
        BiasSpec(type="frequency_nolstm", nolstm_bias="pooled", pooled_years=0)
    with pytest.raises(ValueError, match="counts"):
        YearFeatures({"years": freq["years"], "log_f": freq["log_f"]}, None, 2019).pooled_log_f(2)


def test_the_authors_unscaled_frequency_input_at_evaluation():
    spec = BiasSpec(type="frequency", scaling="minmax")
    assert evaluation_scaling(spec, "as_trained") == "minmax"
    assert evaluation_scaling(spec, "unscaled") == "none"
    assert evaluation_scaling(BiasSpec(type="frequency_nolstm", scaling="minmax"), "unscaled") == "minmax"
    with pytest.raises(ValueError, match="frequency_input"):
        evaluation_scaling(spec, "scaled")
    # the same trained weights fed the other input give other logits (the authors' mismatch)
    base = lm()
    trained = temporal(dict(type="frequency", scaling="minmax", **ALL), 1.0, base, features(scaling="minmax"))
    mismatched = TemporalLM(base, trained.spec, features(scaling=evaluation_scaling(trained.spec, "unscaled")))
    mismatched.load_state_dict(trained.state_dict())
    ids = torch.randint(4, V, (2, 5))
    with torch.no_grad():
        assert not torch.allclose(trained.logits(ids, 2020)[0], mismatched.eval().logits(ids, 2020)[0], atol=1e-3)


def test_chunked_summary_by_hand():
    nll = np.array([np.nan, 1.0, 2.0, 3.0, np.nan, 4.0, 5.0])   # chunks [0, 4) and [4, 7)
    owner = np.array([0, 0, -1, 1, 1, 1, 1])                      # chunk 1 holds abstracts 0 and 1
    content = np.array([False, True, False, False, False, False, True])
    s = chunked_summary(nll, owner, content, context=4)
    assert s["ppl"] == pytest.approx(math.exp(15 / 5))
    assert s["ppl_authors"] == pytest.approx(math.exp((6 / 3 * 4 + 9 / 2 * 3) / 7))  # mean x n, not n - 1
    assert s["cpl_piece"] == pytest.approx(math.exp((1 + 5) / 2))
    assert (s["n_chunks"], s["n_predictions"], s["chunks_crossing_abstracts"]) == (2, 5, 1)


def test_ours_never_crosses_an_abstract_the_authors_chunks_do():
    base = TemporalLM(lm(context=8), BiasSpec("baseline")).eval()

    def doc(name, n, seed):
        ids = np.random.default_rng(seed).integers(4, V, n).tolist()
        return Doc(name, 2021, ids, np.zeros(n, bool), np.zeros(n, bool), n, 0)

    a, a_other, b = doc("a", 5, 1), doc("a", 5, 2), doc("b", 9, 3)
    # ours: every NLL of b is the same whatever abstract comes before it (b scored alone, sliding windows)
    np.testing.assert_array_equal(token_nll(base, [a, b], BOS, EOS, stride=4)[1],
                                  token_nll(base, [a_other, b], BOS, EOS, stride=4)[1])
    for separator in ([EOS], []):
        stream, owner, _ = joined_stream([a, b], separator)
        other, _, _ = joined_stream([a_other, b], separator)
        first, second = stream_nll(base, stream, 2021), stream_nll(base, other, 2021)
        in_b = np.flatnonzero(owner == 1)
        shared = in_b[(in_b < 8) & (in_b > 0)]            # b's tokens in the first chunk of 8, after a's
        alone = in_b[in_b > 8]                              # b's tokens in a chunk of their own
        assert len(shared) and not np.allclose(first[shared], second[shared])  # theirs: b depends on a
        np.testing.assert_array_equal(first[alone], second[alone])
        assert np.isnan(first[8]) and np.isnan(first[0])   # a chunk's first token is not predicted
        summary = chunked_nll(base, [a, b], separator)
        assert summary["chunks_crossing_abstracts"] == 1 and summary["n_chunks"] == 2
        assert summary["n_predictions"] == len(stream) - 2
    with pytest.raises(ValueError, match="per year"):
        chunked_nll(base, [a, Doc("c", 2022, [5, 6], np.zeros(2, bool), np.zeros(2, bool), 2, 0)], [EOS])


def test_generation_is_deterministic_for_a_seed():
    model = temporal(dict(type="context2"), 1.0)
    settings = DecodeSettings(beams=3, top_k=10, top_p=0.92, max_tokens=12)
    a = beam_sample(model, 2020, BOS, EOS, settings, seed=7)
    b = beam_sample(model, 2020, BOS, EOS, settings, seed=7)
    others = {tuple(beam_sample(model, 2020, BOS, EOS, settings, seed=s)) for s in range(8, 14)}
    assert a == b and len(a) > 0
    assert len(others | {tuple(a)}) > 1  # the seed matters: sampling, not a fixed search


def test_top_k_top_p_filtering():
    scores = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = torch.isfinite(top_k_top_p(scores, top_k=3, top_p=0.7))
    assert kept.tolist() == [[True, True, False, False]]  # 0.5 + 0.3 reaches 0.7
    assert torch.isfinite(top_k_top_p(scores, top_k=0, top_p=0.1)).tolist() == [[True, False, False, False]]


def test_windows_score_every_target_once_and_never_cross_abstracts():
    for length in range(2, 40):
        for context, stride in ((8, 4), (8, 8), (5, 1)):
            scored = []
            for begin, end, n in windows(length, context, stride):
                assert end - begin <= context and 0 < n <= end - begin
                scored += list(range(end - n, end))
            assert scored == list(range(length - 1))
    # sliding windows reproduce one long context exactly where the context suffices
    base = TemporalLM(lm(context=32), BiasSpec("baseline"))
    short = TemporalLM(lm(context=8), BiasSpec("baseline"))
    short.lm.load_state_dict({k: v[:8] if k == "pos_emb.weight" else v for k, v in base.lm.state_dict().items()})
    doc = Doc("d", 2020, list(range(4, 9)), np.zeros(5, bool), np.zeros(5, bool), 5, 0)  # 7 tokens with BOS/EOS
    np.testing.assert_allclose(token_nll(short, [doc], BOS, EOS, stride=2)[0], token_nll(base, [doc], BOS, EOS)[0],
                               rtol=1e-5)


def test_content_perplexity_on_a_hand_example():
    from tempoformer.future_lm.tokens import encode_text, is_content

    stopwords = frozenset({"these", "model"})
    # words: "Neural"(content) "models"(content) "of"(short) "these"(stop) "translations"(content) "."
    assert [is_content(w, stopwords) for w in ("Neural", "models", "of", "these", "translations", ".")] == \
        [True, True, False, False, True, False]

    class Pieces:  # a tokenizer stand-in: pieces "neural" | "model" "##s" | "of" | "these" | "transl" "##ations" | "."
        def encode(self, text, add_special_tokens=False):
            spans = [(0, 6), (7, 12), (12, 13), (14, 16), (17, 22), (23, 29), (29, 35), (35, 36)]

            class E:
                ids = list(range(10, 18))
                offsets = spans
            return E()

        def id_to_token(self, i):
            return ["neural", "model", "##s", "of", "these", "transl", "##ations", "."][i - 10]

    class Info:
        tokenizer = Pieces()

        def piece(self, i):
            return self.tokenizer.id_to_token(i)

    enc = encode_text("Neural models of these translations.", Info(), stopwords)
    assert enc.content == [True, True, True, False, False, True, True, False]
    assert enc.n_content_words == 3
    # authors' per-piece rule: "neural", "transl", "##ations" (> 4 characters, not stopwords); "model" is one
    assert enc.content_piece == [True, False, False, False, False, True, True, False]
    nll = np.array([1.0, 2.0, 0.5, 0.1, 0.2, 3.0, 1.5, 0.3, 0.7])  # 8 pieces + EOS
    doc = Doc("d", 2021, enc.tokenizer_ids, np.asarray(enc.content), np.asarray(enc.content_piece), 5, 3)
    m = corpus_metrics(doc_scores([doc], [nll]))
    # content words: neural 1.0, models 2.0 + 0.5, translations 3.0 + 1.5 -> 8.0 over 3 words
    assert m["cpl"] == pytest.approx(math.exp(8.0 / 3))
    assert m["cpl_piece"] == pytest.approx(math.exp((1.0 + 3.0 + 1.5) / 3))
    assert m["ppl_token"] == pytest.approx(math.exp(nll.sum() / 9))
    assert m["ppl_word"] == pytest.approx(math.exp(nll.sum() / 6))  # 5 whitespace words + EOS


def test_meteor_by_hand():
    # exact: "neural", "translation"; stem: "models" ~ "model"; 3 matches in 2 chunks
    hyp = ["neural", "models", "improve", "translation"]
    ref = ["neural", "model", "translation", "quality", "gains"]
    p, r = 3 / 4, 3 / 5
    fmean = p * r / (0.9 * p + 0.1 * r)
    assert meteor(hyp, ref) == pytest.approx(fmean * (1 - 0.5 * (2 / 3) ** 3))
    assert meteor(hyp, hyp) == pytest.approx(1 - 0.5 * (1 / 4) ** 3)
    assert meteor([], ref) == 0.0 and meteor(["unrelated"], ref) == 0.0
    assert stem("models") == "model" and stem("translations") == "translat"  # Porter's stems
    cm = content_meteor(["Neural models improve translation."], ["Neural model translation quality gains.",
                                                                  "Something else entirely here."], frozenset())
    assert cm["per_generation"][0] == pytest.approx(meteor(["neural", "models", "improve", "translation"],
                                                           ["neural", "model", "translation", "quality", "gains"]))


class NoSynonyms:
    """A WordNet that knows no synonyms (WordNet data is not reachable offline)."""

    def synsets(self, word):
        return []


def test_porter_stem_matching_agrees_with_nltks_meteor_score_by_hand():
    from nltk.translate.meteor_score import meteor_score

    hyp = ["Neural", "generalization", "improves", "parsing"]
    ref = ["neural", "generalize", "adaptation", "improvement", "parsers"]
    # exact (lower-cased): neural-neural (0, 0); Porter stems: generalization/generalize -> "gener"
    # (1, 1), improves/improvement -> "improv" (2, 3); parsing -> "pars" but parsers -> "parser": no match.
    # m = 3 in 2 chunks ((0,0)(1,1) | (2,3)); P = 3/4, R = 3/5
    p, r = 3 / 4, 3 / 5
    fmean = p * r / (0.9 * p + 0.1 * r)                     # = 30/49
    expected = fmean * (1 - 0.5 * (2 / 3) ** 3)             # = 30/49 * 23/27 = 690/1323
    assert expected == pytest.approx(690 / 1323)
    assert meteor(hyp, ref) == pytest.approx(expected, rel=1e-12)
    assert meteor_score([ref], hyp, wordnet=NoSynonyms()) == pytest.approx(expected, rel=1e-12)
    # the max-over-references rule is NLTK's too
    other = ["parsing", "neural"]
    assert meteor_score([ref, other], hyp, wordnet=NoSynonyms()) == pytest.approx(
        max(meteor(hyp, ref), meteor(hyp, other)), rel=1e-12)


def test_meteor_equals_nltks_on_random_pairs():
    from nltk.translate.meteor_score import single_meteor_score

    forms = ("model models modeling modelled parse parsing parsers parser learn learning learned Learning "
             "translation translations translate neural networks network generalize generalization").split()
    rng = np.random.default_rng(0)
    for _ in range(300):
        hyp = list(rng.choice(forms, size=rng.integers(1, 12)))
        ref = list(rng.choice(forms, size=rng.integers(1, 12)))
        assert meteor(hyp, ref) == pytest.approx(single_meteor_score(ref, hyp, wordnet=NoSynonyms()), rel=1e-12), \
            (hyp, ref)


def test_linear_trend_and_oracle_predictors():
    log_f = np.log(np.array([[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]]))
    freq = {"years": np.array([2018, 2019, 2020]), "log_f": log_f}
    np.testing.assert_allclose(predicted_log_f(freq, 2020, "oracle", 2, 2019), log_f[2])
    np.testing.assert_allclose(predicted_log_f(freq, 2020, "last_year", 2, 2019), log_f[1])
    np.testing.assert_allclose(predicted_log_f(freq, 2021, "linear_trend", 2, 2019), 2 * log_f[2] - log_f[1])


def test_same_seed_same_training_numbers():
    from tempoformer.future_lm.tokens import Vocab
    from tempoformer.future_lm.train import FitSettings, fit

    vocab = Vocab(list(range(V)), True, 0, 1, 2, 3)
    rng = np.random.default_rng(0)
    docs = [Doc(f"d{i}", 2017 + i % 2, rng.integers(4, V, size=10).tolist(), np.zeros(10, bool), np.zeros(10, bool),
                10, 0) for i in range(6)]
    dev = [Doc("v", 2019, rng.integers(4, V, size=8).tolist(), np.zeros(8, bool), np.zeros(8, bool), 8, 0)]
    runs = []
    for _ in range(2):
        model = TemporalLM(lm(), BiasSpec("frequency"), features())
        _, record = fit(model, docs, dev, vocab, FitSettings(epochs=2, batch_size=2, lr=1e-3), seed=3)
        runs.append([e["dev_ppl"] for e in record["epochs"]])
    assert runs[0] == runs[1] and runs[0][2] != runs[0][0]


def test_a_hugging_face_causal_lm_plugs_in_as_the_base_model():
    # base_model: gpt2 users: the same interface over a transformers causal LM (a tiny random
    # GPT-2 here; no weights are downloaded)
    from transformers import GPT2Config, GPT2LMHeadModel

    from tempoformer.future_lm.lm import HFCausalLM

    torch.manual_seed(0)
    hf = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_positions=16, n_embd=16, n_layer=1, n_head=2)).eval()
    base = HFCausalLM("tiny-gpt2", model=hf)
    ids = torch.randint(4, V, (2, 7))
    with torch.no_grad():
        expected = hf(ids).logits
        got, _ = temporal(dict(type="context2"), 0.0, base).logits(ids, 2020)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    model = temporal(dict(type="frequency", **ALL), 1.0, base)
    settings = DecodeSettings(beams=3, top_k=10, top_p=0.92, max_tokens=8)
    assert beam_sample(model, 2020, BOS, EOS, settings, seed=1) == beam_sample(model, 2020, BOS, EOS, settings, seed=1)
