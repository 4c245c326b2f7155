"""A pretrained BERT with time in every layer: temporal attention, scaled attention, time tokens.

`TemporalBert` keeps the pretrained embeddings and every pretrained layer (query/key/value,
output projections, feed-forward, LayerNorms) and runs its own attention so that time can enter
it (see attention.py). New parameters: a vocabulary of time-point embeddings (row 0 = padding
time, rows 1..K = the periods) and one time projection W_T per layer (no bias), both only for
`time: attention`; an MLM head (transform initialised to the identity, decoder tied to the word
embeddings, zero bias) for post-pretraining; time tokens `<period>` added to the tokenizer for
`prepend`. With `time: none` the forward pass equals the pretrained BertModel's.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from ..checkpoint_io import load_state, save_state
from .attention import (
    FORMS,
    TIME_NORMS,
    plain_scores,
    scale_table,
    scaled_scores,
    temporal_scores,
)

TIME_KINDS = ("none", "attention", "scaled_linear", "scaled_exp", "scaled_doc")


@dataclass
class TemporalSpec:
    """How time enters the model (saved with it)."""

    periods: list[str]
    time: str = "none"              # none | attention | scaled_linear | scaled_exp | scaled_doc
    prepend: bool = False           # time token <period> after [CLS] (Rosin et al. 2022)
    # ranges: tempoformer/settings.py (the config's `attention`, checked at start-up: config_checks.py)
    # sequence | batch (the authors' whole-batch norm)
    time_norm: str = field(default="sequence", metadata={"range": TIME_NORMS})
    # residual: Q(I+TᵀT/‖T‖)Kᵀ | paper: Q(TᵀT/‖T‖)Kᵀ
    form: str = field(default="residual", metadata={"range": FORMS})
    # std of W_T at init (0: exactly the pretrained model, no gradient)
    time_init_std: float = field(default=1e-3, metadata={"range": ">= 0"})
    doc_counts: list[int] | None = None  # sentences per period, for scaled_doc
    backbone: str = "minilm"
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.time not in TIME_KINDS:
            raise ValueError(f"time must be one of {TIME_KINDS}, got {self.time!r}")
        if self.time_norm not in TIME_NORMS:
            raise ValueError(f"time_norm must be one of {TIME_NORMS}, got {self.time_norm!r}")
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {self.form!r}")
        if len(self.periods) < 1:
            raise ValueError("need at least one period")

    @property
    def time_tokens(self) -> list[str]:
        return [f"<{p}>" for p in self.periods]


class MLMHead(nn.Module):
    """BERT's LM head (dense → gelu → LayerNorm → tied decoder + bias); dense starts as identity."""

    def __init__(self, hidden: int, vocab: int, eps: float):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)
        self.bias = nn.Parameter(torch.zeros(vocab))
        with torch.no_grad():
            self.dense.weight.copy_(torch.eye(hidden))
            self.dense.bias.zero_()

    def forward(self, hidden: torch.Tensor, decoder: torch.Tensor) -> torch.Tensor:
        return F.linear(self.norm(F.gelu(self.dense(hidden))), decoder, self.bias)


class TemporalBert(nn.Module):
    def __init__(self, bert: nn.Module, spec: TemporalSpec, seed: int = 0):
        super().__init__()
        config = bert.config
        self.spec = spec
        self.config = config
        self.embeddings = bert.embeddings
        self.layers = bert.encoder.layer
        self.n_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.scaling = self.head_size ** -0.5
        n_periods = len(spec.periods)
        generator = torch.Generator().manual_seed(seed)
        if spec.time == "attention":
            self.time_embeddings = nn.Embedding(n_periods + 1, config.hidden_size)
            self.time_proj = nn.ModuleList(
                nn.Linear(config.hidden_size, self.n_heads * self.head_size, bias=False)
                for _ in self.layers)
            with torch.no_grad():
                self.time_embeddings.weight.normal_(0.0, config.initializer_range, generator=generator)
                for proj in self.time_proj:
                    proj.weight.normal_(0.0, 1.0, generator=generator).mul_(spec.time_init_std)
        if spec.time.startswith("scaled"):
            table = [1.0] + scale_table(spec.time, n_periods, spec.doc_counts)
            self.register_buffer("time_scale", torch.tensor(table), persistent=True)
        self.mlm = MLMHead(config.hidden_size, config.vocab_size, config.layer_norm_eps)

    # ----------------------------------------------------------------------------- forward

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.n_heads, self.head_size).transpose(1, 2)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                time_ids: torch.Tensor | None = None) -> list[torch.Tensor]:
        """Hidden states [embeddings, layer 1, ..., layer L], each (B, n, D).

        time_ids: period index (0..K-1) per sequence (B,) or per token (B, n); may be None
        only for time 'none'.
        """
        token_mask = attention_mask.bool()
        additive = (~token_mask)[:, None, None, :].to(self.embeddings.word_embeddings.weight.dtype)
        additive = additive * torch.finfo(additive.dtype).min
        if self.spec.time != "none":
            if time_ids is None:
                raise ValueError(f"time {self.spec.time!r} needs time_ids")
            if time_ids.dim() == 1:
                time_ids = time_ids[:, None].expand_as(input_ids)
            # Internal time vocabulary: 0 = padding, 1..K = periods.
            time_vocab = torch.where(token_mask, time_ids + 1, torch.zeros_like(time_ids))
        h = self.embeddings(input_ids=input_ids)
        hidden = [h]
        time_emb = self.time_embeddings(time_vocab) if self.spec.time == "attention" else None
        scale = self.time_scale[time_vocab] if self.spec.time.startswith("scaled") else None
        for i, layer in enumerate(self.layers):
            sa = layer.attention.self
            q, k, v = self._heads(sa.query(h)), self._heads(sa.key(h)), self._heads(sa.value(h))
            if time_emb is not None:
                t = self._heads(self.time_proj[i](time_emb))
                scores = temporal_scores(q, k, t, token_mask, self.scaling, self.spec.time_norm, self.spec.form)
            elif scale is not None:
                scores = scaled_scores(q, k, scale, self.scaling)
            else:
                scores = plain_scores(q, k, self.scaling)
            probs = F.dropout(torch.softmax(scores + additive, dim=-1), sa.dropout.p, self.training)
            context = (probs @ v).transpose(1, 2).reshape(h.shape)
            attended = layer.attention.output(context, h)
            h = layer.output(layer.intermediate(attended), attended)
            hidden.append(h)
        return hidden

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.mlm(hidden, self.embeddings.word_embeddings.weight)

    @torch.no_grad()
    def time_diagnostics(self) -> dict | None:
        """How strongly time enters each layer (temporal attention only).

        For a sequence of n tokens of one period, M = TᵀT/‖T‖ = √n·|τ|·τ̂τ̂ᵀ per head, with τ the
        period's projected time vector: per layer, the mean over heads of |τ| for each period and
        the mean cosine between the periods' τ (1: time shifts every period alike).
        """
        if self.spec.time != "attention":
            return None
        out = []
        periods = self.time_embeddings.weight[1:]  # (K, D)
        for proj in self.time_proj:
            tau = proj(periods).view(len(self.spec.periods), self.n_heads, self.head_size)
            norms = tau.norm(dim=-1)  # (K, H)
            first, last = F.normalize(tau[0], dim=-1), F.normalize(tau[-1], dim=-1)
            out.append({"tau_norm": norms.mean(1).tolist(),
                        "cos_first_last": float((first * last).sum(-1).mean())})
        return {"layers": out}

    def new_parameter_names(self) -> set[str]:
        """Parameters that do not come from the pretrained model (trained at the higher lr)."""
        return {n for n, _ in self.named_parameters() if n.startswith(("time_", "mlm."))}


# --------------------------------------------------------------------------- building


def load_tokenizer(backbone: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    from ..backbones import backbone_path

    return AutoTokenizer.from_pretrained(backbone_path(backbone), local_files_only=True)


def add_time_tokens(tokenizer, bert: nn.Module, spec: TemporalSpec, seed: int = 0) -> list[int]:
    """Add `<period>` tokens to the tokenizer and embedding rows for them (mean row + N(0, 0.02))."""
    tokenizer.add_tokens(spec.time_tokens, special_tokens=True)
    ids = tokenizer.convert_tokens_to_ids(spec.time_tokens)
    embeddings = bert.embeddings.word_embeddings
    old = embeddings.weight.shape[0]
    needed = max(max(ids) + 1, old)
    if needed > old:
        new = nn.Embedding(needed, embeddings.weight.shape[1], padding_idx=embeddings.padding_idx)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            new.weight[:old] = embeddings.weight
            mean = embeddings.weight.mean(0)
            noise = torch.randn(needed - old, mean.shape[0], generator=generator) * bert.config.initializer_range
            new.weight[old:] = mean + noise
        bert.embeddings.word_embeddings = new
        bert.config.vocab_size = needed
    return list(ids)


def build_model(backbone: str, spec: TemporalSpec, seed: int = 0, bert: nn.Module | None = None,
                tokenizer=None):
    """(TemporalBert, tokenizer, time token ids or None) from a pretrained backbone.

    `backbone`: 'minilm' (the offline all-MiniLM-L6-v2) or a model folder; `bert`/`tokenizer`:
    an already built BertModel and tokenizer instead (tests use tiny random ones).
    """
    if bert is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import BertModel

        from ..backbones import backbone_path

        bert = BertModel.from_pretrained(backbone_path(backbone), local_files_only=True)
    if tokenizer is None:
        tokenizer = load_tokenizer(backbone)
    bert.pooler = None  # not used: no parameter without a gradient
    time_ids = add_time_tokens(tokenizer, bert, spec, seed) if spec.prepend else None
    return TemporalBert(bert, spec, seed), tokenizer, time_ids


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def save_model(model: TemporalBert, path: str | os.PathLike, info: dict | None = None) -> None:
    """Without pickle: safetensors + JSON (checkpoint_io), written atomically."""
    save_state(path, {"spec": asdict(model.spec), "bert_config": model.config.to_dict(),
                      "state_dict": model.state_dict(), "info": info or {}})


def load_model(path: str | os.PathLike, tokenizer=None):
    """(TemporalBert, tokenizer, time token ids, info) saved by save_model."""
    from transformers import BertConfig, BertModel

    saved = load_state(path)
    spec = TemporalSpec(**saved["spec"])
    config = BertConfig.from_dict(saved["bert_config"])
    bert = BertModel(config, add_pooling_layer=False)
    model, tokenizer, time_ids = build_model(spec.backbone, spec, bert=bert, tokenizer=tokenizer)
    model.load_state_dict(saved["state_dict"])
    return model, tokenizer, time_ids, saved["info"]
