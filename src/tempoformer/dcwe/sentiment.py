"""The sentiment task of Hofmann et al. (2021, §5.5, Table 5): DCWE and CWE as binary classifiers.

The classifier is the authors' (model.py SAModel/SABert): the pooled representation of the text
-> dropout 0.2 -> Linear(H -> 100) -> tanh -> dropout 0.2 -> Linear(100 -> 1) -> sigmoid, trained
with binary cross-entropy (plus the DCWE priors, as main_sa.py) from the pretrained backbone
directly (no MLM stage, the paper's footnote 16). A text is predicted positive when its
probability is above 0.5 (the authors' torch.round, which rounds 0.5 down).

The pooled representation (`post_pooling`, the project's setting, models/pooling.py): `auto`
follows the backbone's sentence-transformers pooling (mean-token pooling for all-MiniLM-L6-v2,
whose pooler was never trained: its bias is exactly zero), `mean` is the masked mean of the last
hidden states, `cls_pooler` is the paper's pooled [CLS] (tanh(W h_CLS + b) with the backbone's
pooler).

Metrics (metrics.py): macro-F1 (the authors' `f1_score(average='macro')`, main_sa.py) on dev and
test, and the exact McNemar test between two models' predictions on the same documents (the
paper's test).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ..models.pooling import POST_POOLINGS, masked_mean
from .model import DcweModel
from ..settings import settings_from_dict
from .train import DCWETrainSettings, EncodedDocs, add_priors, collate, train_loop, walk_option

@dataclass
class ClassifierSettings:
    # ranges: tempoformer/settings.py (checked at start-up, config_checks.py, and by from_dict)
    post_pooling: str = field(default="auto", metadata={"range": POST_POOLINGS})  # auto | mean | cls_pooler
    hidden: int = field(default=100, metadata={"range": ">= 1"})  # the authors' middle layer
    # dropout before and after the middle layer
    head_dropout: float = field(default=0.2, metadata={"range": "[0, 1)"})

    def __post_init__(self):
        if self.post_pooling not in POST_POOLINGS:
            raise ValueError(f"post_pooling must be one of {POST_POOLINGS}, got {self.post_pooling!r}")


def split_settings(values: dict | None) -> tuple[ClassifierSettings, DCWETrainSettings]:
    """A config's `sentiment` section: the classifier's keys and DCWETrainSettings' keys."""
    values = dict(values or {})
    classifier = {k: values.pop(k) for k in list(values) if k in ClassifierSettings.__dataclass_fields__}
    return (settings_from_dict(ClassifierSettings, classifier, "sentiment classifier"),
            DCWETrainSettings.from_dict(values))


class SentimentModel(nn.Module):
    """A DcweModel (any mode; `cwe` is the baseline) with the authors' two-layer classifier."""

    def __init__(self, dcwe: DcweModel, pooling: str, pooler: nn.Module | None = None, hidden: int = 100,
                 dropout: float = 0.2, seed: int = 0):
        super().__init__()
        if pooling not in ("mean", "cls_pooler"):
            raise ValueError(f"pooling must be mean or cls_pooler (auto resolved before), got {pooling!r}")
        if pooling == "cls_pooler" and pooler is None:
            raise ValueError("cls_pooler needs the backbone's pooler")
        self.dcwe, self.pooling = dcwe, pooling
        self.pooler = pooler if pooling == "cls_pooler" else None
        self.dropout = nn.Dropout(dropout)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 1)  # not the offsets' draws
            self.linear_1 = nn.Linear(dcwe.config.hidden_size, hidden)
            self.linear_2 = nn.Linear(hidden, 1)

    def forward(self, ids: torch.Tensor, attention: torch.Tensor, times: torch.Tensor, units: torch.Tensor,
                walk_at_t0: str | None = None):
        """(logits (B,), offsets or None, walk differences or None)."""
        hidden, offsets, walk = self.dcwe(ids, attention, times, units, walk_at_t0)
        pooled = masked_mean(hidden, attention) if self.pooling == "mean" else self.pooler(hidden)
        h = self.dropout(torch.tanh(self.linear_1(self.dropout(pooled))))
        return self.linear_2(h).squeeze(-1), offsets, walk

    def dynamic_parameter_names(self) -> set[str]:
        return {f"dcwe.{n}" for n in self.dcwe.dynamic_parameter_names()}


HEAD_PREFIXES = ("linear_1.", "linear_2.")


def labelled_batch(docs: EncodedDocs, labels: np.ndarray, picks, pad: int):
    """Tensors (ids, attention, labels as float, times, units) of documents `picks`."""
    ids, attention = collate([docs.ids[i] for i in picks], pad)
    picks = np.asarray(picks)
    return (ids, attention, torch.from_numpy(labels[picks]).float(), torch.from_numpy(docs.times[picks]).long(),
            torch.from_numpy(docs.units[picks]).long())


def sentiment_loss(model: SentimentModel, batch, settings: DCWETrainSettings, device: str):
    """(total, binary cross-entropy, anchor, walk) of one batch."""
    ids, attention, labels, times, units = (x.to(device) for x in batch)
    logits, offsets, walk = model(ids, attention, times, units, walk_option(settings))
    return add_priors(F.binary_cross_entropy_with_logits(logits, labels), offsets, walk, attention, settings)


def train_sentiment(model: SentimentModel, docs: EncodedDocs, labels: np.ndarray, pad: int,
                    settings: DCWETrainSettings, seed: int, device: str = "cpu",
                    evaluate: Callable[[int], float] | None = None, checkpoint=None, key: dict | None = None) -> dict:
    """Train in place; the same batch schedule as the MLM task for a seed (train.batch_schedule).
    evaluate(epoch) -> dev macro-F1 (higher is better) for per-epoch selection; checkpoint,
    key: resume per epoch (train.train_loop)."""
    labels = np.asarray(labels)

    def batch_loss(picks, step):
        return sentiment_loss(model, labelled_batch(docs, labels, picks, pad), settings, device)

    return train_loop(model, len(docs), settings, seed, batch_loss, device, HEAD_PREFIXES,
                      ("loss", "bce", "anchor", "walk"), evaluate, higher_is_better=True,
                      checkpoint=checkpoint, key=key)


@torch.no_grad()
def predict(model: SentimentModel, docs: EncodedDocs, pad: int, batch_size: int = 32,
            device: str = "cpu") -> np.ndarray:
    """P(positive) of every document, in eval mode (no dropout)."""
    model.to(device).eval()
    order = np.argsort([len(x) for x in docs.ids], kind="stable")  # batches of similar length
    probs = np.zeros(len(docs))
    dummy = np.zeros(len(docs))
    for start in range(0, len(order), batch_size):
        picks = order[start: start + batch_size]
        ids, attention, _, times, units = (x.to(device) for x in labelled_batch(docs, dummy, picks, pad))
        logits, _, _ = model(ids, attention, times, units)
        probs[picks] = torch.sigmoid(logits).double().cpu().numpy()
    return probs
