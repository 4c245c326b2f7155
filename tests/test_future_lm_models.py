"""Future LM models and metrics: temporal biases, padding, generation, perplexities, METEOR."""

import math

import numpy as np
import pytest
import torch

from tempoformer.future_lm.biases import BiasSpec, TemporalLM, YearFeatures
from tempoformer.future_lm.evaluate import Doc, content_meteor, corpus_metrics, doc_scores, token_nll, windows
from tempoformer.future_lm.frequency import smoothed_log_frequency
from tempoformer.future_lm.generate import DecodeSettings, beam_sample, top_k_top_p
from tempoformer.future_lm.lm import CausalLM, LMConfig
from tempoformer.future_lm.meteor import meteor, stem
from tempoformer.future_lm.unigram import predicted_log_f

torch.set_num_threads(1)
V, D_CTX = 40, 6
YEARS = [2016, 2017, 2018, 2019, 2020]
BOS, EOS = 2, 3


def features(window=2, shortcut=False):
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 20, size=(len(YEARS), V))
    freq = {"years": np.asarray(YEARS), "log_f": smoothed_log_frequency(counts).astype(np.float32),
            "no_bias": np.asarray([0, 1, 2])}
    ctx = {"years": np.asarray(YEARS), "vectors": rng.normal(size=(len(YEARS), V, D_CTX)).astype(np.float16),
           "counts": counts}
    return YearFeatures(freq, ctx, last_train_year=2018, window=window, shortcut=shortcut)


def lm(seed=0, context=16):
    torch.manual_seed(seed)
    return CausalLM(LMConfig(vocab_size=V, d_model=16, n_layers=2, n_heads=2, d_ff=32, context=context, dropout=0.0))


SPECS = [dict(type="frequency_nolstm"), dict(type="frequency"), dict(type="context"),
         dict(type="context", context_bias="embedding"), dict(type="context2"),
         dict(type="context2", gate="summed_vocab"), dict(type="context2", gate="summed_vocab", length_factor=True)]


def temporal(spec: dict, alpha: float, base=None):
    model = TemporalLM(base or lm(), BiasSpec(**spec, alpha=alpha), features())
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


@pytest.mark.parametrize("spec", SPECS[:6], ids=lambda s: "-".join(str(v) for v in s.values()))
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
    model = temporal(dict(type="frequency"), 1.0, base)
    settings = DecodeSettings(beams=3, top_k=10, top_p=0.92, max_tokens=8)
    assert beam_sample(model, 2020, BOS, EOS, settings, seed=1) == beam_sample(model, 2020, BOS, EOS, settings, seed=1)
