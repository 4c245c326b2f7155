"""SmolLM2-135M-Instruct (`smollm2-135m`, one 4-bit GGUF file) as the future-LM base model and the
LLM rows' model, through the GGUF path of tempoformer/causal_lms.py.

Without the big weights: a tiny Llama-architecture model (random weights, 2 layers, width 8, a
byte-level BPE vocabulary of 105 pieces with 6 merges) is written as a GGUF file with the `gguf`
package's writer, query and key weights permuted as llama.cpp's converter does, and read back
through HFCausalLM, load_tokenizer and load_causal_lm: the logits, caches and greedy answers
must equal those of the transformers model it was written from. These skip where the optional
extra `gguf` (gguf, accelerate) is not installed. The tests of the real weights skip where
`bash scripts/setup_backbone.sh smollm2-135m` has not run.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from tempoformer.backbones import BACKBONES, BackboneMissing
from tempoformer.causal_lms import GGUF_PACKAGES, gguf_file

HAS_GGUF = all(importlib.util.find_spec(p) is not None for p in GGUF_PACKAGES)
needs_gguf = pytest.mark.skipif(not HAS_GGUF, reason="opening a GGUF needs the optional extra `gguf` "
                                "(gguf, accelerate): pip install -e '.[gguf]' or bash scripts/setup_backbone.sh smollm2-135m")


def _real_weights():
    try:
        return gguf_file("smollm2-135m")
    except BackboneMissing:
        return None


needs_real = pytest.mark.skipif(not HAS_GGUF or _real_weights() is None,
                                reason="smollm2-135m is an opt-in set-up: bash scripts/setup_backbone.sh smollm2-135m")

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["t h", "th e", "Ġ the", "Ġ c", "a t", "Ġc at"]  # in rank order
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
HEADS, KV_HEADS = 2, 1


def byte_level(text: str) -> str:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    spelling = bytes_to_unicode()
    return "".join(spelling[b] for b in text.encode())


def tiny_tokens() -> list[str]:
    """Special tokens, printable ASCII and the newline spelled in the byte alphabet, the merges."""
    alphabet = [byte_level(chr(c)) for c in [10, *range(32, 127)]]
    return SPECIALS + alphabet + [a + b for a, b in (m.split() for m in MERGES)]


def permute(w: torch.Tensor, heads: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf permutation of the query/key rows (transformers undoes it)."""
    return (w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2)
            .reshape(w.shape).numpy())


def write_gguf(model, tokens: list[str], path):
    import gguf

    c = model.config
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny llama for tests")
    w.add_block_count(c.num_hidden_layers)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_rope_dimension_count(c.hidden_size // c.num_attention_heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_vocab_size(len(tokens))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")  # SmolLM2's own: the byte-level GPT-2 split
    w.add_token_list(tokens)
    w.add_token_types([3 if t in SPECIALS else 1 for t in tokens])  # 3: control
    w.add_token_merges(MERGES)
    w.add_bos_token_id(1)  # as SmolLM2-Instruct: the chat-turn markers
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id(2)
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)
    sd = {k: v.detach().float() for k, v in model.state_dict().items()}
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"].numpy())
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        w.add_tensor(f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"].numpy())
        w.add_tensor(f"blk.{i}.attn_q.weight", permute(sd[p + "self_attn.q_proj.weight"], HEADS))
        w.add_tensor(f"blk.{i}.attn_k.weight", permute(sd[p + "self_attn.k_proj.weight"], KV_HEADS))
        w.add_tensor(f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"].numpy())
        w.add_tensor(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"].numpy())
        w.add_tensor(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"].numpy())
        w.add_tensor(f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"].numpy())
        w.add_tensor(f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"].numpy())
        w.add_tensor(f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"].numpy())
    w.add_tensor("output_norm.weight", sd["model.norm.weight"].numpy())  # no output.weight: tied
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(the transformers model, the path of its GGUF file, the token list)."""
    if not HAS_GGUF:
        pytest.skip("the optional extra `gguf` is not installed")
    from transformers import LlamaConfig, LlamaForCausalLM

    tokens = tiny_tokens()
    config = LlamaConfig(vocab_size=len(tokens), hidden_size=8, intermediate_size=16, num_hidden_layers=2,
                         num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=64,
                         rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # weights of order 1: a wrong permutation or norm shows in the logits
        for name, p in model.named_parameters():
            p.copy_(1 + 0.2 * torch.randn_like(p) if "norm" in name else 0.5 * torch.randn_like(p))
    path = tmp_path_factory.mktemp("gguf") / "tiny-llama.F32.gguf"
    write_gguf(model, tokens, path)
    return model, path, tokens


@needs_gguf
def test_hf_causal_lm_reads_the_gguf_as_written(tiny):
    from tempoformer.future_lm.lm import build_lm

    model, path, tokens = tiny
    lm = build_lm(str(path), len(tokens)).eval()
    assert lm.context == 64 and lm.d_model == 8 and lm.describe()["name"] == str(path)
    assert lm.output_weight.data_ptr() == lm.model.get_input_embeddings().weight.data_ptr()  # tied
    torch.testing.assert_close(lm.output_weight, model.model.embed_tokens.weight)
    ids = torch.randint(3, len(tokens), (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(ids).logits
        H, _ = lm.hidden(ids)
    assert expected.abs().max() > 1.0  # not all near zero: the comparison can fail
    torch.testing.assert_close(H @ lm.output_weight.T, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="restrict: false"):
        build_lm(str(path), len(tokens) + 1)


@needs_gguf
def test_cached_steps_and_beam_reordering_equal_the_full_sequence(tiny):
    from tempoformer.future_lm.lm import HFCausalLM

    _, path, tokens = tiny
    lm = HFCausalLM(str(path)).eval()
    ids = torch.randint(3, len(tokens), (2, 7), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full, _ = lm.hidden(ids)
        head, past = lm.hidden(ids[:, :5])
        tail = []
        for t in (5, 6):  # one token at a time, as generation feeds them
            h, past = lm.hidden(ids[:, t:t + 1], past)
            tail.append(h)
        torch.testing.assert_close(torch.cat([head, *tail], dim=1), full, rtol=1e-5, atol=1e-5)
        # beam search: the cache of [a, b] reordered to [b, b], then one token each
        _, past = lm.hidden(ids[:, :6])
        past = lm.reorder(past, torch.tensor([1, 1]))
        step, _ = lm.hidden(torch.tensor([[ids[1, 6]], [ids[0, 6]]]), past)
        rows = torch.stack([ids[1], torch.cat([ids[1, :6], ids[0, 6:7]])])
        expected, _ = lm.hidden(rows)
    torch.testing.assert_close(step[:, 0], expected[:, -1], rtol=1e-5, atol=1e-5)


@needs_gguf
def test_tokenizer_from_the_gguf(tiny):
    from tempoformer.future_lm.tokens import build_vocab, load_tokenizer

    _, path, tokens = tiny
    info = load_tokenizer(str(path))
    # the document separator, not the chat-turn markers the file declares as BOS/EOS
    assert (info.bos, info.eos, info.unk, info.pad) == (0, 0, 0, 2)
    ids = info.tokenizer.encode("the cat sat.", add_special_tokens=False).ids
    # hand-applied merges: "the" (t h -> th, th e -> the), "Ġcat" (Ġ c, a t, Ġc at), then bytes
    assert [info.piece(i) for i in ids] == ["the", "Ġcat", "Ġ", "s", "at", "."]
    assert ids == [tokens.index(p) for p in ["the", "Ġcat", "Ġ", "s", "at", "."]]
    assert info.decode(ids) == "the cat sat."
    vocab = build_vocab(info, [], restrict=False)
    assert len(vocab) == len(tokens) and vocab.encode(ids) == ids


@needs_gguf
def test_llm_rows_load_the_gguf_and_answer_greedily(tiny):
    from tempoformer.llm.generate import generate_answers, load_causal_lm, render
    from tempoformer.llm.prompts import Prompt

    model, path, _ = tiny
    llm, tokenizer = load_causal_lm(str(path), "cpu")
    assert tokenizer.padding_side == "left" and tokenizer.pad_token == "<|im_end|>"
    prompts = [Prompt(None, "the cat", "mistral"), Prompt("be brief.", "a cat sat on the mat.", "llama2")]
    answers, lengths = generate_answers(llm, tokenizer, prompts, max_new_tokens=4, batch_size=2)
    for prompt, answer, n in zip(prompts, answers, lengths):
        text, add_special = render(prompt, tokenizer)
        assert text.startswith("<|im_start|>") and not add_special  # the file's chat template
        ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
        assert ids.shape[1] == n
        with torch.no_grad():  # greedy, by hand, on the model the file was written from
            for _ in range(4):
                ids = torch.cat([ids, model(ids).logits[:, -1:].argmax(-1)], dim=1)
        assert answer == tokenizer.decode(ids[0, n:], skip_special_tokens=True).strip()


def test_a_gguf_name_without_its_set_up_says_how_to_get_it(tmp_path, monkeypatch):
    from tempoformer.causal_lms import pretrained_source

    monkeypatch.setenv("TEMPOFORMER_BACKBONES", str(tmp_path))
    with pytest.raises(BackboneMissing, match=r"scripts/setup_backbone.sh smollm2-135m"):
        pretrained_source("smollm2-135m")
    with pytest.raises(FileNotFoundError, match="no such GGUF file"):
        pretrained_source(str(tmp_path / "absent.gguf"))
    assert pretrained_source("some/folder") == ("some/folder", {})


# ---- the real weights (opt-in)

@needs_real
def test_real_weights_match_the_table_and_continue_text():
    from tempoformer.backbone_setup import sha256_file
    from tempoformer.future_lm.lm import build_lm
    from tempoformer.future_lm.tokens import load_tokenizer

    spec = BACKBONES["smollm2-135m"]
    assert sha256_file(gguf_file("smollm2-135m")) == spec.weights_sha256
    info = load_tokenizer("smollm2-135m")
    lm = build_lm("smollm2-135m", info.tokenizer.get_vocab_size()).eval()
    cfg = lm.model.config
    assert (cfg.model_type, cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, lm.context) == \
        (spec.family, spec.layers, spec.hidden, spec.heads, spec.max_positions)
    assert round(sum(p.numel() for p in lm.parameters()) / 1e6, 1) == spec.parameters_m
    ids = [info.bos] + info.tokenizer.encode("The capital of Italy is", add_special_tokens=False).ids
    out = []
    with torch.inference_mode():
        H, past = lm.hidden(torch.tensor([ids]))
        for _ in range(3):
            out.append(int((H[0, -1] @ lm.output_weight.T).argmax()))
            H, past = lm.hidden(torch.tensor([out[-1:]]), past)
    assert info.decode(out).strip().startswith("Rome")
