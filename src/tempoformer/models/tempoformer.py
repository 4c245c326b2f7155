"""TempoFormer (Tseriotou et al., EMNLP 2024) and its recurrent variants RoTempoFormer and RoBERT.

A BERT-like encoder (BERT, RoBERTa or MPNet: encoder_layers.py) with L layers: layers 0..L-3
encode each post alone ("local"); the top two are replaced by TempoFormer layers that mix one
vector per window post with temporal rotary attention (all-mpnet-base-v2: 10 local + 2).
That vector is the post's [CLS] (`post_pooling: cls_pooler`, the paper) or the mean of its tokens
(`mean`, for sentence-transformers backbones; `auto` follows the backbone, see pooling.py).
Batches carry each distinct post once (`input_ids [P, L]`) and windows index into them
(`window_index [B, w]`), so the local layers run once per post instead of once per window slot.
In the fast path (`forward`) every layer runs on packed tokens: every per-token op (projections,
LayerNorms, FFN, stream embedding) sees only real tokens, padding exists only inside attention
(`encoder_layers.packed_layer`). `forward_naive` is the authors' computation, kept as the
reference; `encode_local` runs the local layers padded ([P, L, H], the contract serving relies
on to cache local states).
One class per model (TempoFormer, RoTempoFormer, RoBERT) over a shared base (WindowModel); the
config's `head` names the model, and `build_model` builds it from the table HEADS.
"""

import copy
import dataclasses
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from .encoder_layers import (  # noqa: F401 (project, bmm_attention: re-exported)
    BERT,
    BertLayers,
    Packing,
    bmm_attention,
    extended_mask,
    layer_family,
    packed_layer,
    project,
)
from .padding import pad_batch
from .pooling import POST_POOLINGS, masked_mean, resolve_post_pooling, warn_if_untrained_pooler
from .rotary import TemporalRotaryAttention


@dataclass
class TempoFormerConfig:
    backbone: str  # path of a HF model dir (loaded with local_files_only=True)
    num_labels: int
    window: int
    temporal_rope: bool = True  # False: rotary positions are window slots, not log-time gaps
    rope: bool = True  # False: plain multi-head attention over the window's post vectors
    stream_embeddings: bool = True
    gate_norm: bool = True
    # ranges: tempoformer/settings.py (checked at start-up and by the run, registry.validate_params)
    # "pretrained" | "random" (the authors' released code)
    tempo_layer_init: str = field(default="pretrained", metadata={"range": ("pretrained", "random")})
    # "tempoformer" | "rotempoformer" | "robert"
    head: str = field(default="tempoformer", metadata={"range": ("tempoformer", "rotempoformer", "robert")})
    # "auto" | "cls_pooler" (the paper) | "mean": see models/pooling.py
    post_pooling: str = field(default="auto", metadata={"range": POST_POOLINGS})
    classifier_hidden: int = field(default=64, metadata={"range": ">= 1"})
    dropout: float = field(default=0.1, metadata={"range": "[0, 1)"})  # classifier / LSTM-head dropout
    lstm_hidden: int = field(default=100, metadata={"range": ">= 1"})  # RoBERT / RoTempoFormer recurrence
    lstm_ffn: int = field(default=30, metadata={"range": ">= 1"})  # RoBERT / RoTempoFormer FFN [30, 30]


class GateNorm(nn.Module):
    """Gated context fusion (Zheng et al. 2020), paper §3.6:
    g = σ(W_g[h_word; h_stream]), C = LayerNorm((1-g)·h_word + g·h_stream)."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.gate = nn.Linear(2 * hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, h_word: torch.Tensor, h_stream: torch.Tensor) -> torch.Tensor:
        g = torch.sigmoid(self.gate(torch.cat([h_word, h_stream], dim=-1)))
        return self.norm((1 - g) * h_word + g * h_stream)


def to_windows(v: torch.Tensor, pos: torch.Tensor, B: int, w: int) -> torch.Tensor:
    """Rows -> windows: [N, H] at flat slots pos [N] -> [B, w, H], zero at slots without a row."""
    if v.shape[0] == B * w:  # every slot has its row, in order (pos is arange)
        return v.view(B, w, -1)
    return v.new_zeros(B * w, v.shape[-1]).index_copy(0, pos, v).view(B, w, -1)


def from_windows(v: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """[B, w, H] -> [N, H], the rows at flat slots pos."""
    flat = v.reshape(-1, v.shape[-1])
    return flat if pos.shape[0] == flat.shape[0] else flat.index_select(0, pos)


class TempoLayer(nn.Module):
    """Stream position embedding -> the backbone's word-level layer -> temporal rotary MHA over one vector per
    post ([CLS] or token mean), its output written back into the [CLS] slot."""

    def __init__(self, word_layer: nn.Module, window: int, hidden: int, heads: int, eps: float,
                 dropout: float, stream_embeddings: bool, rope: bool, mean_pooling: bool):
        super().__init__()
        self.stream_embeddings, self.mean_pooling = stream_embeddings, mean_pooling
        if stream_embeddings:
            self.stream_pos = nn.Embedding(window, hidden)  # one row per window slot; current post = w-1
            self.stream_norm = nn.LayerNorm(hidden, eps=eps)
            self.stream_drop = nn.Dropout(dropout)
        self.word = word_layer
        self.attn = TemporalRotaryAttention(hidden, heads, use_rope=rope)

    def forward(self, x, row_mask, slot, pos, key_mask, coords, family: BertLayers = BERT):
        """The reference (padded) computation. x [N, L, H] hidden states of N window posts;
        row_mask [N, L] 1/0 real tokens; slot [N] stream-embedding row of each; pos [N] flat index
        b*w+k into the [B, w] windows; key_mask [B, w]; coords [B, w] or None; family: how the
        word layer runs (encoder_layers; the model's, which holds MPNet's shared position table).
        Returns (h_word, h_stream, x): the post vectors before/after the rotary MHA as [B, w, H]
        (zero at slots that have no row) and x with the attended vector written into [CLS]."""
        B, w = key_mask.shape
        if self.stream_embeddings:
            x = self.stream_drop(self.stream_norm(x + self.stream_pos(slot)[:, None, :]))
        x = family.padded(self.word, x, extended_mask(row_mask, x.dtype), family.position_bias(x.shape[1], x.device))
        post = masked_mean(x, row_mask) if self.mean_pooling else x[:, 0]
        h_word = post.new_zeros(B * w, post.shape[-1]).index_copy(0, pos, post).view(B, w, -1)
        h_stream = self.attn(h_word, key_mask, coords)  # [B, w, H]
        x = torch.cat([h_stream.view(B * w, -1)[pos][:, None, :], x[:, 1:]], dim=1)
        return h_word, h_stream, x

    def forward_packed(self, xt, pk: Packing, slot_of_token, pos, key_mask, coords, last: bool,
                       family: BertLayers = BERT):
        """forward on packed tokens. xt [T, H] the real tokens of the N rows (pk's layout);
        slot_of_token [T] stream-embedding row of each token; pos, key_mask, coords, family as in forward.
        last: nothing reads the tokens afterwards, so with [CLS] pooling only the [CLS] queries
        and FFN run. Returns (h_word, h_stream, xt) like forward, xt packed [T, H] (None if last)."""
        B, w = key_mask.shape
        if self.stream_embeddings:
            xt = self.stream_drop(self.stream_norm(xt + self.stream_pos(slot_of_token)))
        if last and not self.mean_pooling:
            post = packed_layer(self.word, xt, pk, cls_only=True, family=family)  # [N, H]
        else:
            xt = packed_layer(self.word, xt, pk, family=family)  # [T, H]
            post = pk.mean(xt) if self.mean_pooling else xt.index_select(0, pk.starts)
        h_word = to_windows(post, pos, B, w)
        h_stream = self.attn(h_word, key_mask, coords)  # [B, w, H]
        if last:
            return h_word, h_stream, None
        new_cls = from_windows(h_stream, pos)
        dt = torch.promote_types(xt.dtype, new_cls.dtype)  # as torch.cat does under autocast
        xt = xt.to(dt).index_copy(0, pk.starts, new_cls.to(dt))
        return h_word, h_stream, xt


class LSTMHead(nn.Module):
    """RoBERT head (Pappagari et al. 2019): LSTM over the window's per-post vectors in order,
    last hidden state -> FFN [30, 30] ReLU -> classes. Padded slots are skipped (packed)."""

    def __init__(self, hidden: int, cfg: TempoFormerConfig):
        super().__init__()
        self.lstm = nn.LSTM(hidden, cfg.lstm_hidden, batch_first=True)
        f = cfg.lstm_ffn
        self.ffn = nn.Sequential(
            nn.Linear(cfg.lstm_hidden, f), nn.ReLU(), nn.Dropout(cfg.dropout),
            nn.Linear(f, f), nn.ReLU(), nn.Dropout(cfg.dropout),
            nn.Linear(f, cfg.num_labels),
        )

    def forward(self, seq: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """seq [B, w, D], mask [B, w] bool -> logits [B, C]."""
        # move real slots to the front, keeping their order, so packing sees right-padded rows
        order = torch.sort((~mask).to(torch.uint8), dim=1, stable=True).indices  # [B, w]
        seq = seq.gather(1, order[..., None].expand_as(seq))
        seq = seq.to(self.lstm.weight_ih_l0.dtype)  # under autocast the pooled input may be bf16
        lengths = mask.sum(1).cpu()
        packed = pack_padded_sequence(seq, lengths, batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)  # h [1, B, hidden], in the original batch order
        return self.ffn(h[-1])


class WindowModel(nn.Module):
    """What the TempoFormer family shares, over a HF BERT/RoBERTa/MPNet backbone: the backbone's
    embeddings and local layers (each post alone), the post vector ([CLS] through the pooler, or
    the token mean), the windows' layout, and forward / forward_from_local / forward_naive, which
    hand the encoded posts to the model's own head (`_packed_head`, `_naive_head`).

    One class per model (`HEADS` below): TempoFormer, RoTempoFormer and RoBERT. The config's `head`
    names the model; `build_model(config)` builds the class it names. A class takes only configs
    of its own head, so a saved config (which records `head`) always rebuilds the same class.
    Submodules are registered in one order for every class (embeddings, local layers, the layer
    family, pooler, the TempoFormer layers, the head's modules): the parameter initialisation and
    the state_dict keys are those of the single class that held all three models before (issue
    66). The family (encoder_layers.layer_family) has parameters only for MPNet: the relative
    position table its layers share (`family.relative_attention_bias`), kept pretrained whatever
    tempo_layer_init says, since the backbone's TempoFormer layers read it as its local ones do."""

    head: str = ""  # the config's `head` that names this model
    tempo = True  # the top two backbone layers become TempoFormer layers (False: RoBERT keeps them)

    def __init__(self, config: TempoFormerConfig, backbone=None):
        super().__init__()
        if config.head != self.head:
            raise ValueError(f"{type(self).__name__} is the model of head {self.head!r}, not {config.head!r}; "
                             "build_model(config) builds the class of the config's head")
        if config.tempo_layer_init not in ("pretrained", "random"):
            raise ValueError(f"unknown tempo_layer_init {config.tempo_layer_init!r}")
        pooling = resolve_post_pooling(config.post_pooling, config.backbone)
        if backbone is None:
            from transformers import AutoModel

            backbone = AutoModel.from_pretrained(config.backbone, local_files_only=True)
            if pooling == "cls_pooler":  # a given backbone (tests, serving) gets its weights later
                warn_if_untrained_pooler(backbone, config.backbone, config.post_pooling)
        # the resolved choice: a saved model keeps it, whatever folder it is reloaded from
        self.config = config = dataclasses.replace(config, post_pooling=pooling)
        self.mean_pooling = pooling == "mean"
        bc = backbone.config
        H, n = bc.hidden_size, bc.num_hidden_layers
        layers = backbone.encoder.layer
        if self.tempo and n < 3:
            raise ValueError(f"TempoFormer needs >= 3 backbone layers, got {n}")

        # submodules are taken from the backbone (not the whole backbone): its top two layers are
        # replaced, and keeping them would leave parameters that never get a gradient
        self.embeddings = backbone.embeddings
        self.local_layers = nn.ModuleList(layers[: n - 2] if self.tempo else layers)
        # how its layers run; MPNet's holds the position table all layers share (local and TempoFormer)
        self.family = layer_family(backbone)
        if self.mean_pooling:
            self.pooler_dense = None  # a mean-pooled post is read as it is: no pooler anywhere
        elif backbone.pooler is not None:
            self.pooler_dense = backbone.pooler.dense
        else:
            self.pooler_dense = nn.Linear(H, H)
            backbone._init_weights(self.pooler_dense)

        new = []  # transformer-side modules absent from the checkpoint: initialised like the backbone's
        self._build_stream(backbone, new)
        self._build_head(bc, new)
        for m in new:
            m.apply(backbone._init_weights)

    def _build_stream(self, backbone, new: list) -> None:
        """The modules between the local layers and the head (none here); appends to `new`
        those that the backbone's initialisation initialises."""

    def _build_head(self, bc, new: list) -> None:
        """The head's modules; appends to `new` those that the backbone's initialisation initialises."""
        raise NotImplementedError

    def pool(self, v: torch.Tensor) -> torch.Tensor:
        """A post vector [..., H] as the heads read it: with [CLS] pooling through the backbone's
        pooler (dense + tanh); a token mean as it is."""
        return v if self.pooler_dense is None else torch.tanh(self.pooler_dense(v))

    def post_vectors(self, h: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Padded token states [P, L, H] -> one vector per post [P, H] (pooled [CLS] or token mean)."""
        return masked_mean(h, attention_mask) if self.mean_pooling else self.pool(h[:, 0])

    def encode_local(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """[P, L] -> [P, L, H]: embeddings and local layers, each post alone."""
        x = self.embeddings(input_ids=input_ids)
        ext = extended_mask(attention_mask, x.dtype)
        bias = self.family.position_bias(x.shape[1], x.device)
        for layer in self.local_layers:
            x = self.family.padded(layer, x, ext, bias)
        return x

    def forward(self, input_ids, attention_mask, window_index, window_mask, time_gap=None):
        """input_ids, attention_mask [P, L]: the distinct posts; window_index [B, w] into P;
        window_mask [B, w] bool (slot w-1 = current post, always real); time_gap [B, w] log-seconds
        gap to the current post, or None. Returns logits [B, num_labels]."""
        return self._forward_packed(input_ids, attention_mask, window_index, window_mask, time_gap)

    def forward_from_local(self, local_states, attention_mask, window_index, window_mask, time_gap=None):
        """forward() from the posts' local-layer states [P, L, H] (encode_local's output), which a
        caller may have kept from earlier windows: serving encodes each post once per stream."""
        return self._forward_packed(None, attention_mask, window_index, window_mask, time_gap,
                                    local_states=local_states)

    def forward_naive(self, input_ids, attention_mask, window_index, window_mask, time_gap=None):
        """The authors' computation: gather each window's posts, then encode all B*w of them
        through every layer in full, padded. Same logits and gradients as forward; the reference."""
        B, w, window_mask, slot, coords = self._windows(window_index, window_mask, time_gap)
        input_ids = input_ids[window_index].flatten(0, 1)  # [B*w, L]
        attention_mask = attention_mask[window_index].flatten(0, 1)
        h = self.encode_local(input_ids, attention_mask)  # [B*w, L, H]
        return self._naive_head(h, attention_mask, B, w, window_mask, slot, coords)

    def _naive_head(self, h, attention_mask, B, w, window_mask, slot, coords):
        """forward_naive after the local layers: h [B*w, L, H] every window slot's states,
        attention_mask [B*w, L] -> logits [B, num_labels]."""
        raise NotImplementedError

    def _windows(self, window_index, window_mask, time_gap):
        B, w = window_index.shape
        if w > self.config.window:
            raise ValueError(f"window of {w} posts, the model has {self.config.window} stream slots")
        # right-aligned: the current post always uses the last stream-embedding row
        slot = torch.arange(self.config.window - w, self.config.window, device=window_index.device).expand(B, w)
        coords = time_gap if (self.config.temporal_rope and time_gap is not None) else None
        return B, w, window_mask.bool(), slot, coords

    def _forward_packed(self, input_ids, attention_mask, window_index, window_mask, time_gap, local_states=None):
        B, w, window_mask, slot, coords = self._windows(window_index, window_mask, time_gap)
        am = attention_mask.bool()
        if not bool(am[:, 0].all()):
            raise ValueError("token 0 ([CLS]) of every post must be a real token")
        # each distinct post's real tokens once, packed: [Tp, H]
        posts = Packing(am.sum(1))
        real = am.flatten().nonzero().squeeze(1)  # [Tp] places in the [P, L] input, row-major
        if local_states is None:
            hp = self.embeddings(input_ids=input_ids).flatten(0, 1).index_select(0, real)
            for layer in self.local_layers:
                hp = packed_layer(layer, hp, posts, family=self.family)
        else:
            hp = local_states.flatten(0, 1).index_select(0, real)
        if self.mean_pooling:
            post_vec = posts.mean(hp)  # [P, H]
        else:
            post_vec = None  # pooled [CLS]: only the posts a head reads go through the pooler
        return self._packed_head(hp, posts, post_vec, window_index, window_mask, slot, coords)

    def _packed_head(self, hp, posts: Packing, post_vec, window_index, window_mask, slot, coords):
        """forward after the local layers: hp [Tp, H] the distinct posts' real tokens packed (posts'
        layout), post_vec [P, H] their token means (None with [CLS] pooling) -> logits [B, num_labels]."""
        raise NotImplementedError


class RoBERT(WindowModel):
    """RoBERT (Pappagari et al. 2019): every backbone layer encodes each post alone, and an LSTM
    over the window's post vectors in order classifies (LSTMHead); no TempoFormer layers."""

    head = "robert"
    tempo = False

    def _build_head(self, bc, new: list) -> None:
        self.lstm_head = LSTMHead(bc.hidden_size, self.config)  # plain torch init, like the classifier MLP

    def _naive_head(self, h, attention_mask, B, w, window_mask, slot, coords):
        return self.lstm_head(self.post_vectors(h, attention_mask).view(B, w, -1), window_mask)

    def _packed_head(self, hp, posts, post_vec, window_index, window_mask, slot, coords):
        per_post = post_vec if post_vec is not None else self.pool(hp.index_select(0, posts.starts))
        return self.lstm_head(per_post[window_index], window_mask)


class TempoStack(WindowModel):
    """The models with TempoFormer layers: the backbone's top two layers become TempoLayers
    (stream embedding, the word layer, temporal rotary MHA over the window's post vectors), whose
    last one gives each window's post vectors before (h_word) and after (h_stream) the rotary
    MHA; `_head(local, h_word, h_stream, window_mask)` is the model's classifier."""

    def _build_stream(self, backbone, new: list) -> None:
        config, bc = self.config, backbone.config
        H, heads, n = bc.hidden_size, bc.num_attention_heads, bc.num_hidden_layers
        layers = backbone.encoder.layer
        self.tempo_layers = nn.ModuleList()
        for i in (n - 2, n - 1):
            word = copy.deepcopy(layers[i])
            if config.tempo_layer_init == "random":
                for p in word.parameters():  # HF's init skips tensors flagged as loaded
                    if hasattr(p, "_is_hf_initialized"):
                        del p._is_hf_initialized
                word.apply(backbone._init_weights)
            self.tempo_layers.append(TempoLayer(
                word, config.window, H, heads, bc.layer_norm_eps, bc.hidden_dropout_prob,
                config.stream_embeddings, config.rope, self.mean_pooling))
            new += [m for name, m in self.tempo_layers[-1].named_children() if name != "word"]

    def _naive_head(self, h, attention_mask, B, w, window_mask, slot, coords):
        local = self.post_vectors(h.view(B, w, *h.shape[1:])[:, -1], attention_mask.view(B, w, -1)[:, -1])
        pos = torch.arange(B * w, device=h.device)  # every slot, padding included, is a row
        x = h
        for layer in self.tempo_layers:
            h_word, h_stream, x = layer(x, attention_mask, slot.flatten(), pos, window_mask, coords, self.family)
        return self._head(local, h_word, h_stream, window_mask)

    def _packed_head(self, hp, posts, post_vec, window_index, window_mask, slot, coords):
        B, w = window_index.shape
        current = window_index[:, -1]  # [B]
        local = post_vec[current] if post_vec is not None else self.pool(hp.index_select(0, posts.starts[current]))
        # the TempoFormer layers' rows: one per real window slot, each a copy of its post's tokens
        # (stream embeddings make the copies differ)
        full = bool(window_mask.all())
        pos = None if full else window_mask.flatten().nonzero().squeeze(1)  # [N] flat slots b*w+k
        rows = window_index.flatten() if full else window_index.flatten().index_select(0, pos)  # [N] posts
        if full:
            pos = torch.arange(B * w, device=rows.device)
        pk = Packing(posts.counts.index_select(0, rows))
        col = torch.arange(pk.flat.shape[0], device=rows.device) - pk.starts.index_select(0, pk.row)
        xt = hp.index_select(0, posts.starts.index_select(0, rows).index_select(0, pk.row) + col)  # [T, H]
        slot_of_token = slot.flatten().index_select(0, pos).index_select(0, pk.row)  # [T]
        l1, l2 = self.tempo_layers
        _, _, xt = l1.forward_packed(xt, pk, slot_of_token, pos, window_mask, coords, False, self.family)
        h_word, h_stream, _ = l2.forward_packed(xt, pk, slot_of_token, pos, window_mask, coords, True, self.family)
        return self._head(local, h_word, h_stream, window_mask)

    def _head(self, local, h_word, h_stream, window_mask):
        """[B, H] local vector of the current post, [B, w, H] post vectors before/after the last
        rotary MHA -> logits [B, num_labels]."""
        raise NotImplementedError


class TempoFormer(TempoStack):
    """TempoFormer (the paper): the current post's local vector ‖ its fused vector (GateNorm of its
    vectors before and after the last rotary MHA, or the latter alone without gate_norm) -> FFN."""

    head = "tempoformer"

    def _build_head(self, bc, new: list) -> None:
        config, H = self.config, bc.hidden_size
        if config.gate_norm:
            self.gate_norm = GateNorm(H, bc.layer_norm_eps)
            new.append(self.gate_norm)
        c = config.classifier_hidden
        self.classifier = nn.Sequential(
            nn.Linear(2 * H, c), nn.ReLU(), nn.Dropout(config.dropout),
            nn.Linear(c, c), nn.ReLU(), nn.Dropout(config.dropout),
            nn.Linear(c, config.num_labels),
        )

    def _head(self, local, h_word, h_stream, window_mask):
        hw, hs = h_word[:, -1], h_stream[:, -1]  # current post: [B, H]
        fused = self.gate_norm(hw, hs) if self.config.gate_norm else hs
        return self.classifier(torch.cat([local, fused], dim=-1))


class RoTempoFormer(TempoStack):
    """RoTempoFormer: every window post's fused vector (GateNorm, or h_stream alone without
    gate_norm), pooled, through the RoBERT LSTM head."""

    head = "rotempoformer"

    def _build_head(self, bc, new: list) -> None:
        if self.config.gate_norm:
            self.gate_norm = GateNorm(bc.hidden_size, bc.layer_norm_eps)  # fuses every post's vector
            new.append(self.gate_norm)
        self.lstm_head = LSTMHead(bc.hidden_size, self.config)  # plain torch init, like the classifier MLP

    def _head(self, local, h_word, h_stream, window_mask):
        fused = self.gate_norm(h_word, h_stream) if self.config.gate_norm else h_stream  # [B, w, H]
        return self.lstm_head(self.pool(fused), window_mask)


# The config's `head` -> the model it names: the one table that setup, the saved-model loader and
# every other builder go through (build_model).
HEADS: dict[str, type[WindowModel]] = {"tempoformer": TempoFormer, "rotempoformer": RoTempoFormer, "robert": RoBERT}


def build_model(config: TempoFormerConfig, backbone=None) -> WindowModel:
    """The model that config.head names (HEADS), over `backbone` (a built HF model; default: the
    one in config.backbone's folder)."""
    if config.head not in HEADS:
        raise ValueError(f"unknown head {config.head!r}")
    return HEADS[config.head](config, backbone)


def collate_windows(token_ids, window_rows, window_valid, log_gap, pad_id):
    """Batch B windows so that each distinct post is encoded once.

    token_ids: per global post row, its token ids (truncated, with [CLS]/[SEP]);
    window_rows int [B, w] global rows (anything where not valid); window_valid bool [B, w]
    (slot w-1 must be valid); log_gap float [B, w] or None.
    Returns the forward() kwargs: input_ids/attention_mask [P, L] of the distinct valid posts
    (sorted by global row, padded to the longest), window_index [B, w] local (0 at padding),
    window_mask [B, w], time_gap float32 [B, w] (0 at padding) or None.
    """
    window_rows = np.asarray(window_rows, dtype=np.int64)
    window_valid = np.asarray(window_valid, dtype=bool)
    if not window_valid[:, -1].all():
        raise ValueError("the last window slot (the current post) must be valid")
    uniq = np.unique(window_rows[window_valid])  # [P] sorted global rows
    local = np.zeros_like(window_rows)
    local[window_valid] = np.searchsorted(uniq, window_rows[window_valid])
    padded = pad_batch([token_ids[r] for r in uniq], pad_id)
    time_gap = None
    if log_gap is not None:
        gap = np.where(window_valid, np.asarray(log_gap, dtype=np.float64), 0.0)
        time_gap = torch.as_tensor(gap, dtype=torch.float32)
    return {
        "input_ids": padded["input_ids"],
        "attention_mask": padded["attention_mask"],
        "window_index": torch.as_tensor(local),
        "window_mask": torch.as_tensor(window_valid),
        "time_gap": time_gap,
    }


def setup(data, params: dict, window: int):
    """(build(hp) -> the model of params' head (build_model), make_batch(rows) -> forward kwargs)
    for a training run's data."""
    from transformers import AutoTokenizer

    from ..backbones import backbone_path
    from ..data.windows import window_arrays
    from ..training.settings import TrainSettings

    path = backbone_path(params.get("backbone", "minilm"))
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    token_ids = tokenizer(
        data.posts["text"].to_list(), truncation=True, max_length=params.get("max_tokens", 128)
    )["input_ids"]
    settings_fields = {f.name for f in dataclasses.fields(TrainSettings)}
    fields = {f.name for f in dataclasses.fields(TempoFormerConfig)} - {"backbone", "num_labels", "window"}
    model_kwargs = {k: v for k, v in params.items() if k in fields}

    def build(hp: dict) -> torch.nn.Module:
        model_hp = {k: v for k, v in hp.items() if k not in settings_fields}
        config = TempoFormerConfig(
            backbone=path, num_labels=len(data.labels), window=window, **{**model_kwargs, **model_hp}
        )
        return build_model(config)

    def make_batch(rows: np.ndarray) -> dict[str, torch.Tensor]:
        window_rows, valid, log_gap = window_arrays(data.streams, rows)
        return collate_windows(token_ids, window_rows, valid, log_gap, tokenizer.pad_token_id)

    return build, make_batch
