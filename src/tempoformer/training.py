"""The training loop shared by every neural model: focal loss, early stopping on dev macro-F1.

Defects of the authors' loop that this one does not repeat: gradients are zeroed once per
optimizer step (so accumulation really accumulates), the linear schedule steps once per
optimizer step, and early stopping compares with the best dev epoch, not the previous one.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import torch
from torch import nn

from .device import autocast
from .losses import focal_loss
from .metrics import f1_scores

MakeBatch = Callable[[np.ndarray], dict[str, torch.Tensor]]


@dataclass
class TrainSettings:
    lr: float
    epochs: int
    batch_size: int
    patience: int = 3
    grad_accum: int = 1
    optimizer: str = "adam"  # "adam" (stream baselines) | "adamw" (transformers)
    schedule: str = "none"  # "none" | "linear" (linear decay to 0, stepped per optimizer step)
    weight_decay: float = 0.0
    batching: str = "shuffle"  # "shuffle" rows | "chunk": consecutive rows, chunks shuffled
    eval_batch_size: int = 64


def batches(rows: np.ndarray, settings: TrainSettings, rng: np.random.Generator):
    """Training batches of post rows for one epoch."""
    size = settings.batch_size
    if settings.batching == "chunk":
        # Consecutive posts share most of their windows, so a chunk encodes each post once.
        chunks = [rows[i : i + size] for i in range(0, len(rows), size)]
        return [chunks[i] for i in rng.permutation(len(chunks))]
    shuffled = rows[rng.permutation(len(rows))]
    return [shuffled[i : i + size] for i in range(0, len(rows), size)]


@torch.no_grad()
def predict_proba(model: nn.Module, make_batch: MakeBatch, rows: np.ndarray, device: str, batch_size: int):
    model.eval()
    out = []
    for start in range(0, len(rows), batch_size):
        inputs = _to(make_batch(rows[start : start + batch_size]), device)
        with autocast(device):
            logits = model(**inputs)
        out.append(torch.softmax(logits.float(), dim=-1).cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)


def _to(inputs: dict, device: str) -> dict:
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}


def _optimizer(model: nn.Module, settings: TrainSettings) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if settings.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=settings.lr, weight_decay=settings.weight_decay)
    return torch.optim.Adam(params, lr=settings.lr, weight_decay=settings.weight_decay)


def fit(
    model: nn.Module,
    make_batch: MakeBatch,
    y: np.ndarray,
    train_rows: np.ndarray,
    dev_rows: np.ndarray,
    alpha: torch.Tensor,
    labels: list[str],
    settings: TrainSettings,
    seed: int,
    device: str,
) -> dict:
    """Train with early stopping; leaves the best dev epoch's weights in `model`.

    Returns the history: dev macro-F1 per epoch, the best epoch and its score.
    """
    rng = np.random.default_rng(seed)
    model.to(device)
    optimizer = _optimizer(model, settings)
    steps_per_epoch = math.ceil(len(batches(train_rows, settings, np.random.default_rng(0))) / settings.grad_accum)
    total_steps = max(1, steps_per_epoch * settings.epochs)
    scheduler = (
        torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, 1 - step / total_steps))
        if settings.schedule == "linear"
        else None
    )
    target = torch.tensor(y, dtype=torch.long)
    best = {"dev_macro": -1.0, "epoch": -1, "state": None}
    history, epochs_without_gain = [], 0
    for epoch in range(settings.epochs):
        model.train()
        epoch_batches = batches(train_rows, settings, rng)
        losses = []
        optimizer.zero_grad(set_to_none=True)
        for i, rows in enumerate(epoch_batches):
            inputs = _to(make_batch(rows), device)
            with autocast(device):
                logits = model(**inputs)
            loss = focal_loss(logits, target[rows].to(device), alpha)
            (loss / settings.grad_accum).backward()
            losses.append(loss.item())
            last = i == len(epoch_batches) - 1
            if (i + 1) % settings.grad_accum == 0 or last:
                optimizer.step()
                if scheduler is not None:
                    scheduler.step()
                optimizer.zero_grad(set_to_none=True)
        dev_prob = predict_proba(model, make_batch, dev_rows, device, settings.eval_batch_size)
        dev_macro = f1_scores(y[dev_rows], dev_prob.argmax(1), labels)["macro"]
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), "dev_macro": dev_macro})
        if dev_macro > best["dev_macro"]:
            best = {"dev_macro": dev_macro, "epoch": epoch, "state": copy.deepcopy(model.state_dict())}
            epochs_without_gain = 0
        else:
            epochs_without_gain += 1
            if epochs_without_gain >= settings.patience:
                break
    model.load_state_dict(best["state"])
    return {"history": history, "best_epoch": best["epoch"], "dev_macro": best["dev_macro"]}


def grid(space: dict) -> Iterator[dict]:
    """Every combination of a {name: [values]} grid, in a fixed order."""
    names = sorted(space)
    if not names:
        yield {}
        return
    for index in np.ndindex(*[len(space[n]) for n in names]):
        yield {n: space[n][i] for n, i in zip(names, index)}
