"""How a transformer backbone summarises a post in one vector: the `post_pooling` setting.

  cls_pooler  the paper's: the [CLS] state through the backbone's pretrained pooler, tanh(W h_CLS + b)
              (BERT trained W on next-sentence prediction, so its pooled [CLS] is a summary);
  mean        the mean of the post's real tokens (padding excluded, [CLS]/[SEP] included), what a
              sentence-transformers model such as all-MiniLM-L6-v2 was trained to produce; no pooler;
  auto        what the backbone declares: `mean` when its sentence-transformers config (modules.json
              and the Pooling module's config.json) says mean-token pooling, else `cls_pooler`.

all-MiniLM-L6-v2 and all-mpnet-base-v2 both declare mean pooling (so `auto` gives `mean`) and both
ship a pooler that was never trained (`pooler.dense.bias` all zero): building a model that reads
it logs a warning (`warn_if_untrained_pooler`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch

log = logging.getLogger(__name__)

POST_POOLINGS = ("auto", "cls_pooler", "mean")


def sentence_transformers_pooling(path) -> str | None:
    """The pooling a sentence-transformers model folder declares ("mean", "cls", "max",
    "mean_sqrt_len", "weightedmean", "lasttoken"; several joined by "+"), or None when the
    folder has no such config."""
    folder = Path(str(path))
    modules = folder / "modules.json"
    if not modules.is_file():
        return None
    for module in json.loads(modules.read_text()):
        if str(module.get("type", "")).endswith("models.Pooling"):
            config = folder / module.get("path", "") / "config.json"
            if not config.is_file():
                return None
            settings = json.loads(config.read_text())
            if isinstance(settings.get("pooling_mode"), str):  # the single-key form
                return settings["pooling_mode"]
            modes = [k.removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token")
                     for k, v in settings.items() if k.startswith("pooling_mode_") and v is True]
            return "+".join(modes) or None
    return None


def resolve_post_pooling(choice: str, backbone) -> str:
    """"cls_pooler" or "mean" for a config's `post_pooling` and its backbone folder."""
    if choice not in POST_POOLINGS:
        raise ValueError(f"unknown post_pooling {choice!r}; known: {', '.join(POST_POOLINGS)}")
    if choice != "auto":
        return choice
    declared = sentence_transformers_pooling(backbone)
    resolved = "mean" if declared == "mean" else "cls_pooler"
    log.info("post_pooling auto: %s declares %s pooling -> %s", backbone,
             declared or "no sentence-transformers", resolved)
    return resolved


def pooler_untrained(pooler) -> bool:
    """A loaded BERT pooler whose dense bias is exactly zero everywhere: the value HF's init gives
    it, which training would have moved (all-MiniLM-L6-v2's, or a checkpoint without pooler weights)."""
    dense = getattr(pooler, "dense", None)
    return dense is not None and dense.bias is not None and not bool(dense.bias.detach().any())


def warn_if_untrained_pooler(backbone_model, name, choice: str) -> bool:
    """Log a warning when the pooled [CLS] will be read from a pooler that was never trained.
    choice: the config's post_pooling ("cls_pooler" or "auto"). Returns whether it warned."""
    if not pooler_untrained(getattr(backbone_model, "pooler", None)):
        return False
    why = ("post_pooling 'cls_pooler' was chosen" if choice == "cls_pooler" else
           "post_pooling 'auto' found no mean-pooling sentence-transformers config and fell back to 'cls_pooler'")
    log.warning("%s, but the pooler of backbone %s was never trained (pooler.dense.bias is all zero): "
                "the post vector is tanh(W [CLS]) with an untrained W, on a [CLS] the backbone may not "
                "use as a summary; consider post_pooling 'mean'", why, name)
    return True


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """x [N, L, H], mask [N, L] 1/0 or bool -> [N, H], the mean over each row's real tokens."""
    m = mask.to(x.dtype)[..., None]
    return (x * m).sum(1) / m.sum(1)
