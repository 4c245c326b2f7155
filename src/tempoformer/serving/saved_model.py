"""A trained TempoFormer as a self-contained folder: everything `predict` needs, nothing else.

    model_dir/
      tempoformer.json      TempoFormerConfig fields, labels, window, max_tokens, and the backbone's
                            architecture (its HF config), so the network is rebuilt without the
                            backbone's pretrained weights (AutoModel.from_config, no download)
      model.safetensors     the weights (safetensors.torch.save_model: shared tensors stored once)
      tokenizer files       AutoTokenizer.save_pretrained of the backbone's tokenizer

`save_trained` writes the folder atomically (a temporary sibling renamed into place);
`load_trained` returns (model in eval mode, tokenizer, meta).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from ..atomic import atomic_dir

FORMAT = "tempoformer-trained"
VERSION = 1
META_FILE = "tempoformer.json"
WEIGHTS_FILE = "model.safetensors"


def _backbone_config(model: torch.nn.Module):
    """The HF config the model's backbone layers were built from."""
    from transformers import AutoConfig, PreTrainedConfig

    for module in model.modules():
        config = getattr(module, "config", None)
        if isinstance(config, PreTrainedConfig):
            return config
    return AutoConfig.from_pretrained(model.config.backbone, local_files_only=True)


def save_trained(model_dir, model: torch.nn.Module, labels: list[str], window: int, max_tokens: int,
                 tokenizer_path) -> Path:
    """Write `model` (a TempoFormer) with its labels, window size, token limit and the tokenizer
    of `tokenizer_path` (a HF model or tokenizer folder) to `model_dir`, replacing what is there."""
    from safetensors.torch import save_model
    from transformers import AutoTokenizer

    config = model.config
    if len(labels) != config.num_labels:
        raise ValueError(f"{len(labels)} labels for a model with {config.num_labels} outputs")
    if not 1 <= window <= config.window:
        raise ValueError(f"window {window} outside 1..{config.window}, the model's stream slots")
    backbone = _backbone_config(model)
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "labels": list(labels),
        "window": int(window),
        "max_tokens": int(max_tokens),
        "model": {k: v for k, v in dataclasses.asdict(config).items() if k != "backbone"},
        "backbone": {
            "source": str(config.backbone),
            "attn_implementation": getattr(backbone, "_attn_implementation", None),
            "config": backbone.to_dict(),
        },
    }
    model_dir = Path(model_dir)
    with atomic_dir(model_dir) as tmp:
        save_model(model, str(tmp / WEIGHTS_FILE))
        AutoTokenizer.from_pretrained(tokenizer_path, local_files_only=True).save_pretrained(tmp)
        (tmp / META_FILE).write_text(json.dumps(meta, indent=1))
    return model_dir


def read_meta(model_dir) -> dict:
    path = Path(model_dir) / META_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{model_dir}: no {META_FILE}; not a folder written by save_trained")
    meta = json.loads(path.read_text())
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ValueError(f"{path}: format {meta.get('format')!r} v{meta.get('version')}, "
                         f"expected {FORMAT!r} v{VERSION}")
    return meta


def load_trained(model_dir, device: str = "cpu"):
    """(model, tokenizer, meta) from a folder written by save_trained; the model is in eval mode
    on `device`. Needs no backbone weights and no network."""
    from safetensors.torch import load_model
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from ..models.tempoformer import TempoFormer, TempoFormerConfig

    model_dir = Path(model_dir)
    meta = read_meta(model_dir)
    backbone_config = dict(meta["backbone"]["config"])
    config = AutoConfig.for_model(backbone_config.pop("model_type"), **backbone_config)
    kwargs = {}
    if meta["backbone"].get("attn_implementation"):
        kwargs["attn_implementation"] = meta["backbone"]["attn_implementation"]
    backbone = AutoModel.from_config(config, **kwargs)  # random weights, replaced below
    model = TempoFormer(TempoFormerConfig(backbone=str(model_dir), **meta["model"]), backbone=backbone)
    load_model(model, str(model_dir / WEIGHTS_FILE), strict=True, device=device)
    model.to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    return model, tokenizer, meta


def save_run_model(model_dir, model: torch.nn.Module, labels: list[str], window: int, params: dict) -> Path:
    """save_trained for a training run: the token limit and tokenizer come from the run's params."""
    from ..data.embed import backbone_path

    return save_trained(model_dir, model, labels, window, params.get("max_tokens", 128),
                        backbone_path(params.get("backbone", "minilm")))
