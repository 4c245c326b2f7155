"""DCWE on a pretrained BERT (Hofmann et al. 2021, eqs. 4-8), and the CWE baseline.

The dynamic type embedding of token k written by social unit i at time j is
e_ij = e~ + o_ij (eq. 4), with e~ the backbone's own input embedding row and
o_ij = FFN_j(e~ ‖ s_ij) (eq. 7), s_ij = GAT_j(s~_i, G) (eq. 8), s~ = node2vec vectors (fixed
inputs, not trained). e_ij goes into the backbone through `inputs_embeds`, so position and token
type embeddings, LayerNorm and dropout apply as to any token. Only the ids of the filtered
vocabulary (vocab.py) get an offset; every other position gets exactly 0.

Modes: `full` (one FFN and one GAT per time unit), `time_only` (SA, the social ablation:
o = FFN_j(e~)), `social_only` (TA, the temporal ablation: one FFN and one GAT for all times, no
walk prior), `cwe` (no offsets: the baseline), `static` (beyond the paper, a control: o = v_k,
one learned vector per word of the filtered vocabulary, no time, no social context; trained at
the offsets' learning rate with the anchor prior and no walk prior, as TA. It asks whether
DCWE's gain is a time-invariant correction of the embeddings. Its budget, |V_dyn| x D, is close
to DCWE's: chitchat_c5, 4,469 words x 384 = 1,716,096 against 5 x 335,780 = 1,678,900). FFN = Linear(D + d_s -> D) -> tanh -> dropout ->
Linear(D -> D) (the authors' model.py:171-187). `offset_init`: `zero` zeroes the FFNs' last
layer, so training starts at the warm-up model (our default); `pytorch` keeps PyTorch's default
init (the authors': an offset of norm ~0.9 on MiniLM at step 0, spec §3.5); for `static`, `zero`
starts every v_k at 0 and `pytorch` at the offset a PyTorch-initialised FFN(e~) gives the word,
so that it starts where SA's first component would. `gnn`: `gat` (the
paper), `gcn` (the authors' --gnn gcn) or `none` (the authors' --gnn none: a two-layer MLP of s~
per time unit, no graph); see gat.py.

The MLM head is the project's MLMHead (semantic_change/model.py): identity dense at init, the
decoder tied to the input embeddings.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

import torch
from torch import nn

from ..checkpoint_io import load_state, save_state
from ..semantic_change.model import MLMHead
from .gat import GNNS, social_network, with_self_loops
from .options import VARIANTS, WALK_AT_T0  # noqa: F401  (VARIANTS: part of the model API)

MODES = ("cwe", "full", "time_only", "social_only", "static")


@dataclass
class DcweSpec:
    mode: str
    n_times: int
    n_units: int = 1
    # ranges: tempoformer/settings.py (checked at start-up, config_checks.py, and by from_dict)
    social_dim: int = field(default=50, metadata={"range": ">= 1"})
    gnn: str = "gat"            # gat | gcn | none
    heads: int = field(default=4, metadata={"range": ">= 1"})
    attn_dropout: float = field(default=0.6, metadata={"range": "[0, 1)"})
    dropout: float = field(default=0.2, metadata={"range": "[0, 1)"})
    offset_init: str = "zero"   # zero | pytorch
    backbone: str = "minilm"

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.gnn not in GNNS:
            raise ValueError(f"gnn must be one of {GNNS}, got {self.gnn!r}")
        if self.offset_init not in ("zero", "pytorch"):
            raise ValueError(f"offset_init must be zero or pytorch, got {self.offset_init!r}")

    @property
    def social(self) -> bool:
        return self.mode in ("full", "social_only")

    @property
    def n_components(self) -> int:
        return {"cwe": 0, "social_only": 1, "static": 0}.get(self.mode, self.n_times)


class OffsetFFN(nn.Module):
    def __init__(self, d_in: int, d_model: int, dropout: float):
        super().__init__()
        self.inner = nn.Linear(d_in, d_model)
        self.outer = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(self.dropout(torch.tanh(self.inner(x))))


class DcweModel(nn.Module):
    def __init__(self, bert: nn.Module, spec: DcweSpec, dynamic_ids: list[int],
                 social: torch.Tensor | None = None, edge_index: torch.Tensor | None = None, seed: int = 0,
                 mlm_head: bool = True):
        super().__init__()
        config = bert.config
        bert.pooler = None  # not used here (a classifier that reads it keeps its own reference)
        self.spec, self.config, self.bert = spec, config, bert
        self.word_embeddings = bert.embeddings.word_embeddings
        d_model = config.hidden_size
        # the MLM task's head; the sentiment task has its own classifier (sentiment.py)
        self.mlm = MLMHead(d_model, config.vocab_size, config.layer_norm_eps) if mlm_head else None
        dynamic = torch.zeros(config.vocab_size, dtype=torch.bool)
        dynamic[torch.as_tensor(dynamic_ids, dtype=torch.long)] = True
        self.register_buffer("dynamic", dynamic)
        if spec.social:
            if social is None or edge_index is None:
                raise ValueError(f"mode {spec.mode} needs social input vectors and the graph")
            if social.shape != (spec.n_units, spec.social_dim):
                raise ValueError(f"social vectors {tuple(social.shape)}, expected ({spec.n_units}, {spec.social_dim})")
            self.register_buffer("social_input", social.float())
            self.register_buffer("edge_index", with_self_loops(edge_index.long(), spec.n_units))
        d_in = d_model + (spec.social_dim if spec.social else 0)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.ffn = nn.ModuleList(OffsetFFN(d_in, d_model, spec.dropout) for _ in range(spec.n_components))
            self.gnn = nn.ModuleList(
                social_network(spec.gnn, spec.social_dim, spec.heads, spec.attn_dropout, spec.dropout)
                for _ in range(spec.n_components if spec.social else 0))
        if spec.mode == "static":
            self._init_static(dynamic, d_model, seed)
        if spec.offset_init == "zero":
            with torch.no_grad():
                for ffn in self.ffn:
                    ffn.outer.weight.zero_()
                    ffn.outer.bias.zero_()

    def _init_static(self, dynamic: torch.Tensor, d_model: int, seed: int) -> None:
        """The static control's table: one row per word with an offset (row_of: id -> row, -1 elsewhere)."""
        ids = dynamic.nonzero().flatten()
        row_of = torch.full((len(dynamic),), -1, dtype=torch.long)
        row_of[ids] = torch.arange(len(ids))
        self.register_buffer("static_row", row_of)
        start = torch.zeros(len(ids), d_model)
        if self.spec.offset_init == "pytorch":
            with torch.random.fork_rng(devices=[]), torch.no_grad():
                torch.manual_seed(seed)
                start = OffsetFFN(d_model, d_model, 0.0)(self.word_embeddings.weight[ids].detach().float())
        self.static = nn.Parameter(start)

    # ------------------------------------------------------------------------- offsets

    def social_vectors(self, component: int) -> torch.Tensor:
        """s_j for every unit (U, d_s): GAT_j or GCN_j over the fixed graph, or MLP_j of s~ (gnn none)."""
        return self.gnn[component](self.social_input, self.edge_index)

    def component_offsets(self, emb: torch.Tensor, units: torch.Tensor, components: torch.Tensor,
                          cache: dict) -> torch.Tensor:
        """Offsets (N, D) of N tokens with embeddings emb (N, D), units (N,), components (N,)."""
        out = emb.new_zeros(emb.shape)
        for c in components.unique().tolist():
            sel = components == c
            x = emb[sel]
            if self.spec.social:
                if c not in cache:  # one GAT pass per component and step
                    cache[c] = self.social_vectors(c)
                x = torch.cat([x, cache[c][units[sel]]], -1)
            out[sel] = self.ffn[c](x)
        return out

    def offsets(self, ids: torch.Tensor, attention: torch.Tensor, times: torch.Tensor, units: torch.Tensor,
                walk_at_t0: str | None = None) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """(embeddings e~ (B, L, D), offsets o (B, L, D) or None, walk differences o_j - o_j-1 or None).

        The walk difference is computed (walk_at_t0 not None, modes full and time_only) for the
        tokens of documents at j >= 1; `authors` also for j = 0, against FFN_0 itself under an
        independent dropout draw (the authors' relu(j - 1), spec §3.1). Elsewhere it is 0.
        """
        emb = self.word_embeddings(ids)
        if self.spec.mode == "cwe":
            return emb, None, None
        if walk_at_t0 is not None and walk_at_t0 not in WALK_AT_T0:
            raise ValueError(f"walk_at_t0 must be one of {WALK_AT_T0}, got {walk_at_t0!r}")
        b, pos = (self.dynamic[ids] & attention.bool()).nonzero(as_tuple=True)
        if self.spec.mode == "static":  # v_k: neither time nor unit, no walk
            values = self.static[self.static_row[ids[b, pos]]].to(emb.dtype)
            return emb, emb.new_zeros(emb.shape).index_put((b, pos), values), None
        x, u, t = emb[b, pos], units[b], times[b]
        components = torch.zeros_like(t) if self.spec.mode == "social_only" else t
        cache: dict = {}
        values = self.component_offsets(x, u, components, cache)
        offsets = emb.new_zeros(emb.shape).index_put((b, pos), values)
        walk = None
        if walk_at_t0 is not None and self.spec.mode in ("full", "time_only"):
            keep = t >= 1 if walk_at_t0 == "skip" else torch.ones_like(t, dtype=torch.bool)
            previous = self.component_offsets(x[keep], u[keep], (t[keep] - 1).clamp(min=0), cache)
            walk = emb.new_zeros(emb.shape).index_put((b[keep], pos[keep]), values[keep] - previous)
        return emb, offsets, walk

    def forward(self, ids: torch.Tensor, attention: torch.Tensor, times: torch.Tensor, units: torch.Tensor,
                walk_at_t0: str | None = None):
        """(last hidden states (B, L, D), offsets or None, walk differences or None)."""
        emb, offsets, walk = self.offsets(ids, attention, times, units, walk_at_t0)
        inputs = emb if offsets is None else emb + offsets
        hidden = self.bert(inputs_embeds=inputs, attention_mask=attention).last_hidden_state
        return hidden, offsets, walk

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.mlm(hidden, self.word_embeddings.weight)

    def dynamic_parameter_names(self) -> set[str]:
        """The offsets' parameters (FFNs, GATs, the static table): trained at dynamic_lr."""
        return {n for n, _ in self.named_parameters() if n.startswith(("ffn.", "gnn.")) or n == "static"}


# --------------------------------------------------------------------------- building


def load_bert(backbone: str, pooler: bool = False):
    """The pretrained backbone; `pooler`: with its pooler (the paper's pooled [CLS])."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import BertModel

    from ..backbones import backbone_path

    return BertModel.from_pretrained(backbone_path(backbone), local_files_only=True, add_pooling_layer=pooler)


def count_parameters(model: nn.Module, names: set[str] | None = None) -> int:
    return sum(p.numel() for n, p in model.named_parameters() if names is None or n in names)


def save_model(model: DcweModel, path: str | os.PathLike, info: dict | None = None) -> None:
    extra = {}
    if model.spec.social:
        keep = model.edge_index[0] != model.edge_index[1]
        extra = {"social": model.social_input.cpu(), "edge_index": model.edge_index[:, keep].cpu()}
    state = {k: v for k, v in model.state_dict().items() if k not in ("social_input", "edge_index")}
    # without pickle: safetensors + JSON (checkpoint_io), written atomically
    save_state(path, {"spec": asdict(model.spec), "bert_config": model.config.to_dict(),
                      "dynamic_ids": model.dynamic.nonzero().flatten().tolist(), "state_dict": state,
                      "info": info or {}, **extra})


def load_model(path: str | os.PathLike, spec: DcweSpec | None = None, social: torch.Tensor | None = None,
               edge_index: torch.Tensor | None = None, dynamic_ids: list[int] | None = None, seed: int = 0):
    """(DcweModel, info). With `spec` (and its inputs), a new model of that spec starts from the
    saved backbone and MLM head (the shared warm-up checkpoint); its dynamic part is new."""
    from transformers import BertConfig, BertModel

    saved = load_state(path)
    bert = BertModel(BertConfig.from_dict(saved["bert_config"]), add_pooling_layer=False)
    if spec is None:
        model = DcweModel(bert, DcweSpec(**saved["spec"]), saved["dynamic_ids"], saved.get("social"),
                          saved.get("edge_index"))
        missing, unexpected = model.load_state_dict(saved["state_dict"], strict=False)
        if set(missing) - {"social_input", "edge_index"} or unexpected:
            raise ValueError(f"{path}: state does not fit its spec (missing {missing[:3]}, unexpected {unexpected[:3]})")
        return model, saved["info"]
    model = DcweModel(bert, spec, dynamic_ids or [], social, edge_index, seed)
    shared = {k: v for k, v in saved["state_dict"].items() if k.startswith(("bert.", "mlm.", "word_embeddings."))}
    missing, unexpected = model.load_state_dict(shared, strict=False)
    left = [k for k in missing if not k.startswith(("ffn.", "gnn.", "static", "dynamic", "social_input", "edge_index"))]
    if left or unexpected:
        raise ValueError(f"{path}: not a checkpoint of this backbone (missing {left[:3]}, unexpected {unexpected[:3]})")
    return model, saved["info"]
