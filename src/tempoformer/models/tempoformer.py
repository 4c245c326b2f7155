"""TempoFormer (Tseriotou et al., EMNLP 2024) and its recurrent variants RoTempoFormer and RoBERT.

A BERT-like encoder with L layers: layers 0..L-3 encode each post alone ("local"); the top two are
replaced by TempoFormer layers that mix the [CLS] of the window's posts with temporal rotary
attention. Batches carry each distinct post once (`input_ids [P, L]`) and windows index into them
(`window_index [B, w]`), so the local layers run once per post instead of once per window slot.
In the fast path (`forward`) the TempoFormer layers run on packed tokens: every per-token op
(projections, LayerNorms, FFN, stream embedding) sees only real tokens, padding exists only inside
attention (`packed_layer`). The local layers run padded in `encode_local` ([P, L, H], the contract
predict.py relies on to substitute cached local states).
"""

import copy
import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from .padding import pad_batch
from .rotary import TemporalRotaryAttention


@dataclass
class TempoFormerConfig:
    backbone: str  # path of a HF model dir (loaded with local_files_only=True)
    num_labels: int
    window: int
    temporal_rope: bool = True  # False: rotary positions are window slots, not log-time gaps
    rope: bool = True  # False: plain multi-head attention over the window's [CLS]
    stream_embeddings: bool = True
    gate_norm: bool = True
    tempo_layer_init: str = "pretrained"  # "pretrained" | "random" (the authors' released code)
    head: str = "tempoformer"  # "tempoformer" | "rotempoformer" | "robert"
    classifier_hidden: int = 64
    dropout: float = 0.1  # classifier / LSTM-head dropout
    lstm_hidden: int = 100  # RoBERT / RoTempoFormer recurrence
    lstm_ffn: int = 30  # RoBERT / RoTempoFormer FFN [30, 30]


def extended_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[N, L] 1/0 -> additive [N, 1, 1, L]: 0 for real tokens, dtype's min for padding."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def cls_only_layer(layer: nn.Module, x: torch.Tensor, ext: torch.Tensor) -> torch.Tensor:
    """A BERT/RoBERTa layer's output at token 0 only: [N, L, H] -> [N, H].

    The [CLS] query attends over all tokens' keys/values; the other tokens' queries and FFNs are
    skipped since nothing downstream reads them. Equals layer(x, ext)[:, 0].
    """
    sa = layer.attention.self
    N, L, _ = x.shape
    nh, hd = sa.num_attention_heads, sa.attention_head_size
    q = sa.query(x[:, :1]).view(N, 1, nh, hd).transpose(1, 2)  # [N, nh, 1, hd]
    k = sa.key(x).view(N, L, nh, hd).transpose(1, 2)  # [N, nh, L, hd]
    v = sa.value(x).view(N, L, nh, hd).transpose(1, 2)
    p = sa.dropout.p if sa.training else 0.0
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=ext, dropout_p=p, scale=sa.scaling)  # [N, nh, 1, hd]
    a = a.transpose(1, 2).reshape(N, 1, nh * hd)
    h = layer.attention.output(a, x[:, :1])  # dense, dropout, LayerNorm(+residual): [N, 1, H]
    h = layer.output(layer.intermediate(h), h)
    return h[:, 0]


def packed_layer(layer: nn.Module, xp: torch.Tensor, flat: torch.Tensor, N: int, L: int,
                 key_mask: torch.Tensor, cls_idx: torch.Tensor | None = None) -> torch.Tensor:
    """A BERT/RoBERTa layer on packed tokens: padding only inside attention.

    xp [T, H] the real tokens of N rows, row-major; flat [T] = row*L + col their places in a padded
    [N, L] layout; key_mask [N, L] bool, True at real tokens (exactly the places in flat).
    The Q/K/V and output projections, LayerNorms and FFN run on the T real tokens only; attention
    runs on the padded [N, nh, L, hd] view. Returns [T, H], equal to layer(x, ext) at the real
    tokens; with cls_idx [N] (packed offset of each row's token 0) only the [CLS] queries and FFNs
    run and it returns [N, H], equal to layer(x, ext)[:, 0].
    """
    sa = layer.attention.self
    nh, hd = sa.num_attention_heads, sa.attention_head_size
    H = nh * hd

    def pad(t):  # [T, H] -> [N, nh, L, hd], zeros at padding (masked out as keys)
        return t.new_zeros(N * L, H).index_copy(0, flat, t).view(N, L, nh, hd).transpose(1, 2)

    k, v = pad(sa.key(xp)), pad(sa.value(xp))
    p = sa.dropout.p if sa.training else 0.0
    m = key_mask[:, None, None, :]  # [N, 1, 1, L]
    if cls_idx is not None:
        xc = xp.index_select(0, cls_idx)  # [N, H]
        q = sa.query(xc).view(N, 1, nh, hd).transpose(1, 2)  # [N, nh, 1, hd]
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=p, scale=sa.scaling)
        h = layer.attention.output(a.reshape(N, H), xc)  # dense, dropout, LayerNorm(+residual)
        return layer.output(layer.intermediate(h), h)
    q = pad(sa.query(xp))
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=p, scale=sa.scaling)  # [N, nh, L, hd]
    a = a.transpose(1, 2).reshape(N * L, H).index_select(0, flat)  # [T, H]
    h = layer.attention.output(a, xp)
    return layer.output(layer.intermediate(h), h)


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


class TempoLayer(nn.Module):
    """Stream position embedding -> word-level BERT layer -> temporal rotary MHA over the [CLS]."""

    def __init__(self, word_layer: nn.Module, window: int, hidden: int, heads: int, eps: float,
                 dropout: float, stream_embeddings: bool, rope: bool):
        super().__init__()
        self.stream_embeddings = stream_embeddings
        if stream_embeddings:
            self.stream_pos = nn.Embedding(window, hidden)  # one row per window slot; current post = w-1
            self.stream_norm = nn.LayerNorm(hidden, eps=eps)
            self.stream_drop = nn.Dropout(dropout)
        self.word = word_layer
        self.attn = TemporalRotaryAttention(hidden, heads, use_rope=rope)

    def forward(self, x, ext, slot, pos, key_mask, coords, cls_only):
        """x [N, L, H] hidden states of N window posts; ext [N, 1, 1, L]; slot [N] stream-embedding
        row of each; pos [N] flat index b*w+k into the [B, w] windows; key_mask [B, w]; coords [B, w] or None.
        Returns (h_word, h_stream, x): the [CLS] before/after the rotary MHA as [B, w, H] (zero at
        slots that have no row) and, unless cls_only, x with the attended [CLS] written back."""
        B, w = key_mask.shape
        if self.stream_embeddings:
            x = self.stream_drop(self.stream_norm(x + self.stream_pos(slot)[:, None, :]))
        if cls_only:
            cls = cls_only_layer(self.word, x, ext)  # [N, H]
        else:
            x = self.word(x, ext)  # BertLayer in transformers 5 returns a tensor
            cls = x[:, 0]
        # rows -> windows: the rotary MHA mixes the posts of each window
        h_word = cls.new_zeros(B * w, cls.shape[-1]).index_copy(0, pos, cls).view(B, w, -1)
        h_stream = self.attn(h_word, key_mask, coords)  # [B, w, H]
        if not cls_only:
            x = torch.cat([h_stream.view(B * w, -1)[pos][:, None, :], x[:, 1:]], dim=1)
        return h_word, h_stream, x

    def forward_packed(self, xt, tok, slot, pos, key_mask, coords, cls_only):
        """forward on packed tokens. xt [T, H] the real tokens of the N rows, row-major; tok =
        (trow [T] row of each token, tflat [T] its place row*Lt+col in a padded [N, Lt] layout,
        tstarts [N] packed offset of each row's [CLS], tmask [N, Lt] bool real tokens);
        slot, pos, key_mask, coords as in forward. Returns (h_word, h_stream, xt) like forward,
        xt packed [T, H] (None if cls_only)."""
        trow, tflat, tstarts, tmask = tok
        N, Lt = tmask.shape
        B, w = key_mask.shape
        if self.stream_embeddings:
            xt = self.stream_drop(self.stream_norm(xt + self.stream_pos(slot)[trow]))
        if cls_only:
            cls = packed_layer(self.word, xt, tflat, N, Lt, tmask, cls_idx=tstarts)  # [N, H]
        else:
            xt = packed_layer(self.word, xt, tflat, N, Lt, tmask)  # [T, H]
            cls = xt.index_select(0, tstarts)
        h_word = cls.new_zeros(B * w, cls.shape[-1]).index_copy(0, pos, cls).view(B, w, -1)
        h_stream = self.attn(h_word, key_mask, coords)  # [B, w, H]
        if cls_only:
            return h_word, h_stream, None
        new_cls = h_stream.view(B * w, -1)[pos]
        dt = torch.promote_types(xt.dtype, new_cls.dtype)  # as torch.cat does under autocast
        xt = xt.to(dt).index_copy(0, tstarts, new_cls.to(dt))
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


class TempoFormer(nn.Module):
    """TempoFormer over a HF BERT/RoBERTa backbone; `head` selects the classifier (the paper's FFN
    on local ‖ fused [CLS], RoTempoFormer's LSTM over fused [CLS], or RoBERT's LSTM over the plain
    backbone's pooled [CLS])."""

    def __init__(self, config: TempoFormerConfig, backbone=None):
        super().__init__()
        if config.head not in ("tempoformer", "rotempoformer", "robert"):
            raise ValueError(f"unknown head {config.head!r}")
        if config.tempo_layer_init not in ("pretrained", "random"):
            raise ValueError(f"unknown tempo_layer_init {config.tempo_layer_init!r}")
        if backbone is None:
            from transformers import AutoModel

            backbone = AutoModel.from_pretrained(config.backbone, local_files_only=True)
        self.config = config
        bc = backbone.config
        H, heads, n = bc.hidden_size, bc.num_attention_heads, bc.num_hidden_layers
        layers = backbone.encoder.layer
        tempo = config.head != "robert"
        if tempo and n < 3:
            raise ValueError(f"TempoFormer needs >= 3 backbone layers, got {n}")

        # submodules are taken from the backbone (not the whole backbone): its top two layers are
        # replaced, and keeping them would leave parameters that never get a gradient
        self.embeddings = backbone.embeddings
        self.local_layers = nn.ModuleList(layers[: n - 2] if tempo else layers)
        if backbone.pooler is not None:
            self.pooler_dense = backbone.pooler.dense
        else:
            self.pooler_dense = nn.Linear(H, H)
            backbone._init_weights(self.pooler_dense)

        new = []  # transformer-side modules absent from the checkpoint: initialised like the backbone's
        if tempo:
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
                    config.stream_embeddings, config.rope))
                new += [m for name, m in self.tempo_layers[-1].named_children() if name != "word"]
        if config.head == "tempoformer":
            if config.gate_norm:
                self.gate_norm = GateNorm(H, bc.layer_norm_eps)
                new.append(self.gate_norm)
            c = config.classifier_hidden
            self.classifier = nn.Sequential(
                nn.Linear(2 * H, c), nn.ReLU(), nn.Dropout(config.dropout),
                nn.Linear(c, c), nn.ReLU(), nn.Dropout(config.dropout),
                nn.Linear(c, config.num_labels),
            )
        else:
            if config.head == "rotempoformer" and config.gate_norm:
                self.gate_norm = GateNorm(H, bc.layer_norm_eps)  # fuses every post's [CLS]
                new.append(self.gate_norm)
            self.lstm_head = LSTMHead(H, config)  # plain torch init, like the classifier MLP
        for m in new:
            m.apply(backbone._init_weights)

    def pool(self, cls: torch.Tensor) -> torch.Tensor:
        """The backbone's pooler (dense + tanh) on [CLS] vectors [..., H]."""
        return torch.tanh(self.pooler_dense(cls))

    def encode_local(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """[P, L] -> [P, L, H]: embeddings and local layers, each post alone."""
        x = self.embeddings(input_ids=input_ids)
        ext = extended_mask(attention_mask, x.dtype)
        for layer in self.local_layers:
            x = layer(x, ext)
        return x

    def forward(self, input_ids, attention_mask, window_index, window_mask, time_gap=None):
        """input_ids, attention_mask [P, L]: the distinct posts; window_index [B, w] into P;
        window_mask [B, w] bool (slot w-1 = current post, always real); time_gap [B, w] log-seconds
        gap to the current post, or None. Returns logits [B, num_labels]."""
        return self._forward(input_ids, attention_mask, window_index, window_mask, time_gap, naive=False)

    def forward_from_local(self, local_states, attention_mask, window_index, window_mask, time_gap=None):
        """forward() from the posts' local-layer states [P, L, H] (encode_local's output), which a
        caller may have kept from earlier windows: serving encodes each post once per stream."""
        return self._forward(None, attention_mask, window_index, window_mask, time_gap, naive=False,
                             local_states=local_states)

    def forward_naive(self, input_ids, attention_mask, window_index, window_mask, time_gap=None):
        """The authors' computation: gather each window's posts, then encode all B*w of them
        through every layer in full. Same logits and gradients as forward; kept as a reference."""
        return self._forward(input_ids, attention_mask, window_index, window_mask, time_gap, naive=True)

    def _forward(self, input_ids, attention_mask, window_index, window_mask, time_gap, naive, local_states=None):
        B, w = window_index.shape
        if w > self.config.window:
            raise ValueError(f"window of {w} posts, the model has {self.config.window} stream slots")
        window_mask = window_mask.bool()
        if naive:
            input_ids = input_ids[window_index].flatten(0, 1)  # [B*w, L]
            attention_mask = attention_mask[window_index].flatten(0, 1)
            post_of = torch.arange(B * w, device=window_index.device)  # encoded row of each slot
            pos = post_of  # every slot, padding included, is a row of the TempoFormer layers
        else:
            post_of = window_index.flatten()  # [B*w]
            pos = window_mask.flatten().nonzero().squeeze(1)  # [N] real slots only
        h = self.encode_local(input_ids, attention_mask) if local_states is None else local_states  # [P, L, H]

        if self.config.head == "robert":
            per_post = self.pool(h[:, 0])[post_of].view(B, w, -1)  # [B, w, H]
            return self.lstm_head(per_post, window_mask)

        local_cls = self.pool(h[post_of.view(B, w)[:, -1], 0])  # [B, H] current post
        rows = post_of[pos]  # [N] encoded post of each TempoFormer row
        # right-aligned: the current post always uses the last stream-embedding row
        slot = pos % w + (self.config.window - w)
        coords = time_gap if (self.config.temporal_rope and time_gap is not None) else None
        l1, l2 = self.tempo_layers
        if not naive:
            # packed: each row's real tokens once, [T, H]; padding only inside attention
            L = attention_mask.shape[1]
            am = attention_mask[rows].bool()  # [N, L]
            if not bool(am[:, 0].all()):
                raise ValueError("token 0 ([CLS]) of every post must be a real token")
            real = am.flatten().nonzero().squeeze(1)  # [T] row*L + col, row-major
            trow, tcol = real // L, real % L
            Lt = int(tcol.max()) + 1  # the longest used post: trims padding all rows share
            tmask = am[:, :Lt]
            counts = tmask.sum(1)
            tstarts = torch.cumsum(counts, 0) - counts  # [N] packed offset of each row's [CLS]
            tok = (trow, trow * Lt + tcol, tstarts, tmask)
            # one copy of each post's tokens per (window, slot): stream embeddings make them differ
            xt = h.flatten(0, 1).index_select(0, rows[trow] * L + tcol)  # [T, H]
            _, _, xt = l1.forward_packed(xt, tok, slot, pos, window_mask, coords, cls_only=False)
            # only [CLS] is read after the last layer: skip the other tokens' queries and FFN
            h_word, h_stream, _ = l2.forward_packed(xt, tok, slot, pos, window_mask, coords, cls_only=True)
            return self._head(local_cls, h_word, h_stream, window_mask)

        x = h[rows]  # [N, L, H]: one copy per (window, slot), stream embeddings make them differ
        ext = extended_mask(attention_mask[rows], x.dtype)
        _, _, x = l1(x, ext, slot, pos, window_mask, coords, cls_only=False)
        # only [CLS] is read after the last layer: skip the other tokens' queries and FFN
        h_word, h_stream, _ = l2(x, ext, slot, pos, window_mask, coords, cls_only=False)
        return self._head(local_cls, h_word, h_stream, window_mask)

    def _head(self, local_cls, h_word, h_stream, window_mask):
        """[B, H] local [CLS] of the current post, [B, w, H] [CLS] before/after the last rotary
        MHA -> logits [B, num_labels]."""
        if self.config.head == "rotempoformer":
            fused = self.gate_norm(h_word, h_stream) if self.config.gate_norm else h_stream  # [B, w, H]
            return self.lstm_head(self.pool(fused), window_mask)
        hw, hs = h_word[:, -1], h_stream[:, -1]  # current post: [B, H]
        fused = self.gate_norm(hw, hs) if self.config.gate_norm else hs
        return self.classifier(torch.cat([local_cls, fused], dim=-1))


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
    """(build(hp) -> TempoFormer, make_batch(rows) -> forward kwargs) for a training run's data."""
    from transformers import AutoTokenizer

    from ..data.embed import backbone_path
    from ..data.windows import window_arrays
    from ..training.loop import TrainSettings

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
        return TempoFormer(config)

    def make_batch(rows: np.ndarray) -> dict[str, torch.Tensor]:
        window_rows, valid, log_gap = window_arrays(data.streams, rows)
        return collate_windows(token_ids, window_rows, valid, log_gap, tokenizer.pad_token_id)

    return build, make_batch
