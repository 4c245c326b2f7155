"""Post-level BERT / RoBERTa / MPNet baseline (paper §4.2): a pretrained encoder fine-tuned on each post alone.

The heads are those of transformers' `BertForSequenceClassification` and
`RobertaForSequenceClassification`, which the authors' code fine-tunes:
  - "pooler" (BERT):  [CLS] -> pretrained pooler (dense + tanh) -> dropout -> linear
  - "dense" (RoBERTa): [CLS] -> dropout -> new dense -> tanh -> dropout -> linear
RoBERTa's pooler was never trained (no next-sentence objective) and checkpoints may lack its
weights, so RoBERTa gets a freshly initialised tanh-dense instead; so does MPNet, whose
`MPNetForSequenceClassification` has the same head (all-mpnet-base-v2's pooler weights are the
untrained init). `head="auto"` picks "dense" for those families and for any checkpoint without
pooler weights, else "pooler".
Those heads read the [CLS] (`post_pooling: cls_pooler`). With `post_pooling: mean` (what `auto`
picks for a backbone whose sentence-transformers config declares mean pooling, such as
all-MiniLM-L6-v2; see pooling.py) the post is the mean of its real tokens, read by the classifier
as it is: mean -> dropout -> linear, the linear head sentence-transformers models are probed with.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .padding import pad_batch
from .pooling import POST_POOLINGS, masked_mean, resolve_post_pooling, warn_if_untrained_pooler

ROBERTA_TYPES = ("roberta", "xlm-roberta", "camembert", "roberta-prelayernorm")
DENSE_HEAD_TYPES = (*ROBERTA_TYPES, "mpnet")  # HF's classifier: [CLS] -> new dense -> tanh (head "dense")


@dataclass
class PostTransformerConfig:
    backbone: str  # path of a HF encoder dir (loaded with local_files_only=True)
    num_labels: int
    # ranges: tempoformer/settings.py (checked at start-up and by the run, registry.validate_params)
    # "auto" | "pooler" (BERT) | "dense" (RoBERTa classification head); [CLS] pooling only
    head: str = field(default="auto", metadata={"range": ("auto", "pooler", "dense")})
    # "auto" | "cls_pooler" ([CLS] through `head`) | "mean": see models/pooling.py
    post_pooling: str = field(default="auto", metadata={"range": POST_POOLINGS})
    # None: the backbone's classifier_dropout or hidden_dropout_prob
    dropout: float | None = field(default=None, metadata={"range": "[0, 1)"})


class PostTransformer(nn.Module):
    def __init__(self, config: PostTransformerConfig, backbone=None, pooler_loaded: bool | None = None):
        """backbone: an already built HF BertModel/RobertaModel/MPNetModel (tests); else loaded from
        config.backbone. pooler_loaded: whether its pooler holds pretrained weights (a given
        backbone's pooler is taken as loaded)."""
        super().__init__()
        if config.head not in ("auto", "pooler", "dense"):
            raise ValueError(f"unknown head {config.head!r}; known: auto, pooler, dense")
        pooling = resolve_post_pooling(config.post_pooling, config.backbone)
        if pooling == "mean" and config.head != "auto":
            raise ValueError(f"head {config.head!r} projects the [CLS]; post_pooling 'mean' is read as it is "
                             "(leave head at 'auto')")
        loaded = backbone is None
        if backbone is None:
            from transformers import AutoModel

            backbone, info = AutoModel.from_pretrained(
                config.backbone, local_files_only=True, output_loading_info=True
            )
            pooler_loaded = not any(k.startswith("pooler.") or ".pooler." in k for k in info["missing_keys"])
        bc = backbone.config
        has_pooler = getattr(backbone, "pooler", None) is not None and pooler_loaded is not False
        head = config.head
        if pooling == "mean":
            head = "mean"
        elif head == "auto":
            head = "dense" if bc.model_type in DENSE_HEAD_TYPES or not has_pooler else "pooler"
        if head == "pooler" and getattr(backbone, "pooler", None) is None:
            raise ValueError(f"head 'pooler' needs a backbone with a pooler ({bc.model_type} has none)")
        if head == "pooler" and loaded:
            warn_if_untrained_pooler(backbone, config.backbone, config.post_pooling)
        self.config, self.head = dataclasses.replace(config, post_pooling=pooling), head

        H = bc.hidden_size
        if config.dropout is not None:
            p = config.dropout
        elif getattr(bc, "classifier_dropout", None) is not None:
            p = bc.classifier_dropout
        else:
            p = bc.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        new = []
        if head == "pooler":
            self.pool_dense = backbone.pooler.dense  # pretrained
        elif head == "dense":
            self.pool_dense = nn.Linear(H, H)
            new.append(self.pool_dense)
        else:  # mean: no projection in front of the classifier
            self.pool_dense = None
        self.classifier = nn.Linear(H, config.num_labels)
        new.append(self.classifier)
        backbone.pooler = None  # pooling happens here; no parameter is left without a gradient
        self.encoder = backbone
        for m in new:
            m.apply(backbone._init_weights)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """input_ids, attention_mask [B, L] (right-padded) -> logits [B, num_labels]."""
        h = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # [B, L, H]
        if self.head == "mean":
            return self.classifier(self.dropout(masked_mean(h, attention_mask)))
        cls = h[:, 0]  # [CLS] / <s>
        if self.head == "pooler":
            x = torch.tanh(self.pool_dense(cls))
        else:
            x = torch.tanh(self.pool_dense(self.dropout(cls)))
        return self.classifier(self.dropout(x))


def setup(data, params: dict, window: int):
    """(build(hp) -> PostTransformer, make_batch(rows) -> forward kwargs), like models.tempoformer.setup.

    params: backbone (a path, or "minilm"), max_tokens (default 128), optionally head/dropout;
    training keys (lr, epochs, ...) and grid are ignored here. The window is unused: post level.
    """
    from transformers import AutoTokenizer

    from ..backbones import backbone_path
    from ..training.settings import TrainSettings

    settings_fields = {f for f in TrainSettings.__dataclass_fields__}
    path = backbone_path(params.get("backbone", "minilm"))
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    # every post tokenised once, up front; batches are padded to their own longest post
    token_ids = tokenizer(
        data.posts["text"].to_list(), truncation=True, max_length=params.get("max_tokens", 128)
    )["input_ids"]
    fields = set(PostTransformerConfig.__dataclass_fields__) - {"backbone", "num_labels"}
    model_kwargs = {k: v for k, v in params.items() if k in fields}

    def build(hp: dict) -> nn.Module:
        model_hp = {k: v for k, v in hp.items() if k in fields and k not in settings_fields}
        kwargs = {**model_kwargs, **model_hp}
        config = PostTransformerConfig(backbone=path, num_labels=len(data.labels), **kwargs)
        return PostTransformer(config)

    def make_batch(rows: np.ndarray) -> dict[str, torch.Tensor]:
        return pad_batch([token_ids[r] for r in np.asarray(rows)], tokenizer.pad_token_id)

    return build, make_batch
