"""Saved models: the pretrained base LM (pretrained.pt) and each fine-tuned model (model.pt).

A file holds the base LM's description (lm.describe(): a scratch LMConfig, or a Hugging Face
name), the weights, and for a fine-tuned model its BiasSpec and history settings, so that the
evaluation rebuilds exactly the trained model. Written atomically, without pickle: safetensors
for the weights, JSON for the rest (checkpoint_io; files of torch.save days still load, with
torch.load(weights_only=True)).
"""

from __future__ import annotations

import os

from ..checkpoint_io import load_state, save_state
from .biases import BiasSpec, TemporalLM, YearFeatures
from .lm import CausalLM, HFCausalLM, LMConfig


def lm_from_description(desc: dict):
    if desc["kind"] == "scratch":
        return CausalLM(LMConfig(**{k: v for k, v in desc.items() if k != "kind"}))
    from .tokens import tokenizer_path

    return HFCausalLM(tokenizer_path(desc["name"]))


def save_pretrained(lm, path: str | os.PathLike, info: dict) -> None:
    payload = {"lm": lm.describe(), "state": lm.state_dict() if lm.describe()["kind"] == "scratch" else None,
               "info": info}
    save_state(path, payload)


def load_pretrained_lm(path: str | os.PathLike):
    payload = load_state(path)
    lm = lm_from_description(payload["lm"])
    if payload["state"] is not None:
        lm.load_state_dict(payload["state"])
    return lm, payload["info"]


def save_model(model: TemporalLM, path: str | os.PathLike, info: dict) -> None:
    payload = {"lm": model.lm.describe(), "spec": model.spec.to_dict(), "state": model.state_dict(), "info": info}
    save_state(path, payload)


def load_model(path: str | os.PathLike, features=None, context_dim: int = 384):
    """(TemporalLM, info). `features`: YearFeatures, None, or a function of the saved BiasSpec
    that returns them (the history window and scaling are the model's)."""
    payload = load_state(path)
    lm = lm_from_description(payload["lm"])
    spec = BiasSpec.from_dict(payload["spec"])
    if callable(features) and not isinstance(features, YearFeatures):
        features = features(spec)
    model = TemporalLM(lm, spec, features, context_dim)
    model.load_state_dict(payload["state"])
    return model, payload["info"]
