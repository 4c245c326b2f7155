"""A BERT backbone in plain torch, so that loading a saved model does not import transformers.

Importing transformers' modeling code costs about 3 s (it pulls in torch.distributed, dynamo and
the generation stack), more than the rest of `tempoformer predict`'s start-up together. A saved
TempoFormer keeps only its backbone's embeddings and layers, so `load_trained` rebuilds those
here: the same module tree, parameter names and operations, in the same order, as transformers
5's BertEmbeddings / BertLayer (sdpa or eager attention). The saved weights load strictly and
the outputs equal transformers' bit for bit (tests/test_saved_model.py compares them).
Backbones this does not cover (RoBERTa, other activations, decoders) load through transformers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu}  # transformers' ACT2FN entries that are these functions
ATTENTION = ("sdpa", "eager")


def unsupported(config: dict, attn_implementation: str | None) -> str | None:
    """Why a backbone (its HF config as a dict) cannot be built here; None when it can."""
    checks = [
        (config.get("model_type") == "bert", f"model_type {config.get('model_type')!r}"),
        (config.get("position_embedding_type", "absolute") == "absolute",
         f"position_embedding_type {config.get('position_embedding_type')!r}"),
        (config.get("hidden_act") in ACTIVATIONS, f"hidden_act {config.get('hidden_act')!r}"),
        (attn_implementation in ATTENTION, f"attn_implementation {attn_implementation!r}"),
        (not config.get("is_decoder") and not config.get("add_cross_attention"), "a decoder"),
        (not config.get("chunk_size_feed_forward"), "chunked feed-forward"),
        (config.get("hidden_size", 0) % max(config.get("num_attention_heads", 1), 1) == 0,
         "hidden_size not a multiple of num_attention_heads"),
    ]
    problems = [why for ok, why in checks if not ok]
    return ", ".join(problems) or None


class BackboneConfig:
    """The backbone's HF config (a dict) as attributes; to_dict() gives the dict back, as a
    PreTrainedConfig does, so a loaded model can be saved again."""

    def __init__(self, config: dict, attn_implementation: str):
        self.__dict__.update({"pad_token_id": 0, "type_vocab_size": 2, **config})
        self._config, self._attn_implementation = dict(config), attn_implementation

    def to_dict(self) -> dict:
        return dict(self._config)


class Embeddings(nn.Module):
    """BertEmbeddings: word + token type 0 + absolute position, LayerNorm, dropout."""

    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        batch, length = input_ids.shape
        position_ids = torch.arange(length, device=input_ids.device)[None]  # [1, L]
        token_type_ids = torch.zeros((batch, length), dtype=torch.long, device=input_ids.device)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class SelfAttention(nn.Module):
    """BertSelfAttention: the attributes TempoFormer's packed layers read (query/key/value,
    num_attention_heads, attention_head_size, scaling, dropout) and its forward."""

    def __init__(self, c, attn_implementation: str):
        super().__init__()
        self.num_attention_heads = c.num_attention_heads
        self.attention_head_size = c.hidden_size // c.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.scaling = self.attention_head_size**-0.5
        self.query = nn.Linear(c.hidden_size, self.all_head_size)
        self.key = nn.Linear(c.hidden_size, self.all_head_size)
        self.value = nn.Linear(c.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(c.attention_probs_dropout_prob)
        self.attn_implementation = attn_implementation
        self.config = c  # save_trained finds the backbone's config here, as on transformers' layers

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        input_shape = hidden_states.shape[:-1]
        shape = (*input_shape, -1, self.attention_head_size)
        q = self.query(hidden_states).view(shape).transpose(1, 2)
        k = self.key(hidden_states).view(shape).transpose(1, 2)
        v = self.value(hidden_states).view(shape).transpose(1, 2)
        p = self.dropout.p if self.training else 0.0
        if self.attn_implementation == "sdpa":
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, dropout_p=p,
                                                 scale=self.scaling, is_causal=False)
        else:  # eager, as transformers' eager_attention_forward
            weights = torch.matmul(q, k.transpose(2, 3)) * self.scaling
            if attention_mask is not None:
                weights = weights + attention_mask
            weights = F.dropout(F.softmax(weights, dim=-1), p=p, training=self.training)
            out = torch.matmul(weights, v)
        return out.transpose(1, 2).contiguous().reshape(*input_shape, -1).contiguous()


class DenseNorm(nn.Module):
    """BertSelfOutput / BertOutput: dense, dropout, LayerNorm(+ residual)."""

    def __init__(self, c, in_features: int):
        super().__init__()
        self.dense = nn.Linear(in_features, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class Attention(nn.Module):
    def __init__(self, c, attn_implementation: str):
        super().__init__()
        self.self = SelfAttention(c, attn_implementation)
        self.output = DenseNorm(c, c.hidden_size)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size)
        self.intermediate_act_fn = ACTIVATIONS[c.hidden_act]

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.intermediate_act_fn(self.dense(hidden_states))


class Layer(nn.Module):
    """BertLayer of an encoder: self-attention block, then feed-forward block."""

    def __init__(self, c, attn_implementation: str):
        super().__init__()
        self.attention = Attention(c, attn_implementation)
        self.intermediate = Intermediate(c)
        self.output = DenseNorm(c, c.intermediate_size)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        attention_output = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attention_output), attention_output)


class Backbone(nn.Module):
    """What TempoFormer takes from a BertModel: config, embeddings, encoder.layer, pooler.dense."""

    def __init__(self, config: dict, attn_implementation: str):
        super().__init__()
        why = unsupported(config, attn_implementation)
        if why:
            raise ValueError(f"not a backbone the plain-torch BERT covers: {why}")
        c = self.config = BackboneConfig(config, attn_implementation)
        self.embeddings = Embeddings(c)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(Layer(c, attn_implementation) for _ in range(c.num_hidden_layers))
        self.pooler = nn.Module()
        self.pooler.dense = nn.Linear(c.hidden_size, c.hidden_size)

    def _init_weights(self, module: nn.Module) -> None:
        """No initialisation: the backbone is only built to receive saved weights (a strict load
        replaces every parameter)."""
