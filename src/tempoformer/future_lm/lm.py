"""The base language model: a small GPT-style causal Transformer trained here, or a pretrained
Hugging Face causal LM.

No GPT-2 weights are reachable offline, so `base_model: scratch` (the default) builds a small
GPT-2-shaped decoder (learned positions, pre-LayerNorm blocks, GELU MLP, tied input/output
embeddings) over the restricted WordPiece vocabulary (tokens.py), pretrained once on the
training years (train.pretrain); every model is then fine-tuned from that checkpoint, as the
paper fine-tunes GPT-2. `base_model: smollm2-135m` (the registered 4-bit SmolLM2-135M-Instruct,
an opt-in set-up; tempoformer/causal_lms.py), `gpt2`, or any folder/name/.gguf file of a causal LM
with tied embeddings loads that model instead, through the same two methods the temporal models use:

    hidden(ids, past) -> (H [B, T, d], past')      output_weight -> E [V, d]

H is the final (normalised) hidden state of the model's body, without its output head: the
temporal models multiply it by E themselves. `past` is a key/value cache (generation): a tuple
of per-layer tensors, or the Cache object of transformers 5; `reorder(past, index)` follows beam
reordering. A GGUF file is de-quantized to float32 on loading.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from ..settings import settings_from_dict


@dataclass
class LMConfig:
    vocab_size: int
    # ranges: tempoformer/settings.py (checked at start-up, config_checks.py, and by from_dict)
    d_model: int = field(default=128, metadata={"range": ">= 1"})
    n_layers: int = field(default=2, metadata={"range": ">= 1"})
    n_heads: int = field(default=4, metadata={"range": ">= 1"})
    d_ff: int = field(default=512, metadata={"range": ">= 1"})
    context: int = field(default=128, metadata={"range": ">= 2"})  # positions (tokens per window)
    dropout: float = field(default=0.1, metadata={"range": "[0, 1)"})

    @classmethod
    def from_dict(cls, d: dict, vocab_size: int) -> "LMConfig":
        d = {k: v for k, v in (d or {}).items() if k != "vocab_size"}
        config = settings_from_dict(cls, d, "lm", vocab_size=vocab_size)
        if config.d_model % config.n_heads:
            raise ValueError(f"d_model {config.d_model} is not a multiple of n_heads {config.n_heads}")
        return config


class Block(nn.Module):
    def __init__(self, c: LMConfig):
        super().__init__()
        self.n_heads = c.n_heads
        self.ln1 = nn.LayerNorm(c.d_model)
        self.qkv = nn.Linear(c.d_model, 3 * c.d_model)
        self.proj = nn.Linear(c.d_model, c.d_model)
        self.ln2 = nn.LayerNorm(c.d_model)
        self.mlp = nn.Sequential(nn.Linear(c.d_model, c.d_ff), nn.GELU(), nn.Linear(c.d_ff, c.d_model))
        self.drop = nn.Dropout(c.dropout)
        self.p_attn = c.dropout

    def forward(self, x, past=None):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))  # [B, h, T, dh]
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        dropout = self.p_attn if self.training else 0.0
        if past is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout)
        else:  # new queries see every cached key and the new keys up to themselves
            offset = k.shape[2] - t
            mask = torch.ones(t, k.shape[2], dtype=torch.bool, device=x.device).tril(offset)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        x = x + self.drop(self.proj(y.transpose(1, 2).reshape(b, t, d)))
        x = x + self.drop(self.mlp(self.ln2(x)))
        return x, (k, v)


class CausalLM(nn.Module):
    """GPT-2-shaped decoder with tied embeddings."""

    def __init__(self, config: LMConfig):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.context, config.d_model)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2: residual projections scaled by depth
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * config.n_layers))

    @staticmethod
    def _init(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    @property
    def context(self) -> int:
        return self.config.context

    @property
    def output_weight(self) -> torch.Tensor:
        return self.tok_emb.weight

    @property
    def d_model(self) -> int:
        return self.config.d_model

    def hidden(self, ids, past=None):
        start = 0 if past is None else past[0][0].shape[2]
        if start + ids.shape[1] > self.config.context:
            raise ValueError(f"{start + ids.shape[1]} positions, the model has {self.config.context}")
        pos = torch.arange(start, start + ids.shape[1], device=ids.device)
        x = self.drop(self.tok_emb(ids) + self.pos_emb(pos))
        presents = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, None if past is None else past[i])
            presents.append(kv)
        return self.ln_f(x), presents

    @staticmethod
    def reorder(past, index):
        return [(k.index_select(0, index), v.index_select(0, index)) for k, v in past]

    def forward(self, ids):
        return self.hidden(ids)[0] @ self.output_weight.T

    def describe(self) -> dict:
        return {"kind": "scratch", **asdict(self.config)}


class HFCausalLM(nn.Module):
    """A Hugging Face causal LM (smollm2-135m, gpt2, a folder or .gguf file) behind the same
    interface; its vocabulary is the tokenizer's (tokens.py with restrict: false)."""

    def __init__(self, name_or_path: str, model=None):
        super().__init__()
        if model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from transformers import AutoModelForCausalLM

            from ..causal_lms import pretrained_source

            folder, kwargs = pretrained_source(name_or_path)
            if "gguf_file" in kwargs:  # de-quantized: train and score in float32
                kwargs["dtype"] = torch.float32
            model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, **kwargs)
        self.name = name_or_path
        self.model = model
        cfg = model.config
        # GPT-2 calls it n_positions, Llama max_position_embeddings
        self._context = getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", 1024)
        self._d = getattr(cfg, "n_embd", None) or cfg.hidden_size

    @property
    def context(self) -> int:
        return self._context

    @property
    def d_model(self) -> int:
        return self._d

    @property
    def output_weight(self) -> torch.Tensor:
        return self.model.get_output_embeddings().weight

    def hidden(self, ids, past=None):
        # the body only (GPT2Model, LlamaModel, ...): the output head's [B, T, V] logits would be
        # computed for nothing, the temporal model multiplies H by E itself
        out = self.model.base_model(input_ids=ids, past_key_values=past, use_cache=True)
        return out.last_hidden_state, out.past_key_values

    @staticmethod
    def reorder(past, index):
        if hasattr(past, "reorder_cache"):
            past.reorder_cache(index)
            return past
        return tuple(tuple(t.index_select(0, index) for t in layer) for layer in past)

    def describe(self) -> dict:
        return {"kind": "huggingface", "name": self.name, "context": self._context, "d_model": self._d}


def build_lm(base_model: str, vocab_size: int, settings: dict | None = None):
    """`scratch`: a new CausalLM of `settings` (LMConfig keys); else a Hugging Face causal LM
    (a registered name such as smollm2-135m, a folder, hub id or .gguf file)."""
    if base_model == "scratch":
        return CausalLM(LMConfig.from_dict(settings or {}, vocab_size))
    lm = HFCausalLM(base_model)
    if lm.output_weight.shape[0] != vocab_size:
        raise ValueError(f"base model {base_model} has {lm.output_weight.shape[0]} outputs, the vocabulary "
                         f"{vocab_size}: use its own tokenizer with restrict: false")
    return lm
