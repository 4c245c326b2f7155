"""The training loop shared by every neural model: focal loss, early stopping on dev macro-F1.

Defects of the authors' loop that this one does not repeat: gradients are zeroed once per
optimizer step (so accumulation really accumulates), the linear schedule steps once per
optimizer step, and early stopping compares with the best dev epoch, not the previous one.
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch
from torch import nn

from ..checkpoint_io import DamagedState, load_state, save_state, set_aside
from ..device import autocast
from .losses import focal_loss
from .metrics import f1_scores
from .settings import TrainSettings

log = logging.getLogger(__name__)

MakeBatch = Callable[[np.ndarray], dict[str, torch.Tensor]]


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
    # The fused kernel updates all parameters in one pass: the per-tensor loop cost ~0.1 s per
    # step for a 22M-parameter MiniLM on the CPU (bench/tempoformer.py).
    optimizer = torch.optim.AdamW if settings.optimizer == "adamw" else torch.optim.Adam
    return optimizer(params, lr=settings.lr, weight_decay=settings.weight_decay, fused=True)


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
    checkpoint: str | Path | None = None,
) -> dict:
    """Train with early stopping; leaves the best dev epoch's weights in `model`.

    With `checkpoint`, the full training state (weights, optimizer, schedule, random
    generators, best epoch so far) is saved after every epoch (safetensors + JSON, no pickle:
    checkpoint_io), and a run started again with the same file resumes after the last finished
    epoch and ends exactly as an uninterrupted run would. A damaged checkpoint is set aside
    (`<name>.damaged`, with a warning) and the run resumes from the one before it
    (`<name>.prev`), or from the start. Returns the history: dev macro-F1 per epoch, the best epoch and its score.
    """
    model.to(device)
    optimizer = _optimizer(model, settings)
    steps_per_epoch = math.ceil(len(batches(train_rows, settings, np.random.default_rng(0))) / settings.grad_accum)
    total_steps = max(1, steps_per_epoch * settings.epochs)
    scheduler = (
        torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, 1 - step / total_steps))
        if settings.schedule == "linear"
        else None
    )
    state = _fresh_state()
    rng = np.random.default_rng(seed)
    if checkpoint is not None:
        state = _resume(checkpoint, model, optimizer, scheduler, rng)
    target = torch.tensor(y, dtype=torch.long)
    for epoch in range(state["epoch"] + 1, settings.epochs):
        if state["finished"]:
            break
        model.train()
        started = time.perf_counter()
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
        state["history"].append({"epoch": epoch, "train_loss": float(np.mean(losses)), "dev_macro": dev_macro})
        state["epoch"] = epoch
        # Long CPU runs: the log shows progress and what an epoch costs.
        log.info("epoch %d/%d: train loss %.4f, dev macro-F1 %.4f, %.1f s", epoch + 1, settings.epochs,
                 state["history"][-1]["train_loss"], dev_macro, time.perf_counter() - started)
        if dev_macro > state["best"]["dev_macro"]:
            state["best"] = {"dev_macro": dev_macro, "epoch": epoch, "state": _cpu_copy(model.state_dict())}
            state["epochs_without_gain"] = 0
        else:
            state["epochs_without_gain"] += 1
            state["finished"] = state["epochs_without_gain"] >= settings.patience
        if checkpoint is not None:
            _save_checkpoint(checkpoint, state, model, optimizer, scheduler, rng)
    model.load_state_dict(state["best"]["state"])
    return {"history": state["history"], "best_epoch": state["best"]["epoch"],
            "dev_macro": state["best"]["dev_macro"]}


def _cpu_copy(state_dict: dict) -> dict:
    return {k: v.detach().to("cpu", copy=True) for k, v in state_dict.items()}


def _fresh_state() -> dict:
    return {"epoch": -1, "history": [], "epochs_without_gain": 0, "finished": False,
            "best": {"dev_macro": -1.0, "epoch": -1, "state": None}}


def _previous(path: Path) -> Path:
    return path.with_name(path.name + ".prev")


def _save_checkpoint(path, state, model, optimizer, scheduler, rng) -> None:
    """The training state after an epoch, without pickle (checkpoint_io: safetensors + JSON).

    The checkpoint it replaces is kept as `<name>.prev` (moved, not copied: at most two on the
    disk, as while today's file is written), so that a damaged checkpoint costs one epoch, not
    the run. The best epoch's weights are not stored twice when they are the model's own."""
    path = Path(path)
    best = state["best"]
    best_is_model = best["epoch"] == state["epoch"]
    payload = {
        **state,
        "best": {**best, "state": None} if best_is_model else best,
        "best_is_model": best_is_model,
        "model": _cpu_copy(model.state_dict()),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "numpy_rng": rng.bit_generator.state,
        "python_rng": random.getstate(),
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }
    if path.exists():
        os.replace(path, _previous(path))
    save_state(path, payload)


def _resume(path, model, optimizer, scheduler, rng) -> dict:
    """The state of the newest readable checkpoint (`path`, else `<path>.prev`), applied to the
    model, optimizer, schedule and generators; a fresh state if there is none. A damaged one is
    set aside (`<name>.damaged`, with a warning) and never read again."""
    path = Path(path)
    for candidate in (path, _previous(path)):
        if not candidate.exists():
            continue
        try:
            payload = load_state(candidate)
            _check_fits(candidate, payload, model)
        except DamagedState as error:
            set_aside(candidate, error.problem)
            continue
        return _apply(payload, model, optimizer, scheduler, rng)
    return _fresh_state()


def _check_fits(path, payload, model) -> None:
    """DamagedState unless the payload holds a training state for this model (checked before
    anything is changed, so a run that cannot resume starts exactly as a fresh one)."""
    if not isinstance(payload, dict):
        raise DamagedState(path, "not a training checkpoint")
    missing = [k for k in ("epoch", "history", "epochs_without_gain", "finished", "best", "model", "optimizer",
                           "scheduler", "numpy_rng", "torch_rng", "cuda_rng") if k not in payload]
    if missing:
        raise DamagedState(path, f"not a training checkpoint (no {', '.join(missing)})")
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    saved = {k: tuple(v.shape) for k, v in payload["model"].items()}
    if saved != expected:
        raise DamagedState(path, "its weights do not fit this model")


def _apply(payload, model, optimizer, scheduler, rng) -> dict:
    model_state = payload.pop("model")
    if payload.pop("best_is_model", False):
        payload["best"]["state"] = _cpu_copy(model_state)
    model.load_state_dict(model_state)
    optimizer.load_state_dict(payload.pop("optimizer"))
    scheduler_state = payload.pop("scheduler")
    if scheduler is not None and scheduler_state is not None:
        scheduler.load_state_dict(scheduler_state)
    rng.bit_generator.state = payload.pop("numpy_rng")
    python_rng = payload.pop("python_rng", None)  # absent from checkpoints of torch.save days
    if python_rng is not None:
        random.setstate(python_rng)
    torch.set_rng_state(payload.pop("torch_rng"))
    cuda_rng = payload.pop("cuda_rng")
    if cuda_rng is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda_rng)
    return payload


def grid(space: dict) -> Iterator[dict]:
    """Every combination of a {name: [values]} grid, in a fixed order."""
    names = sorted(space)
    if not names:
        yield {}
        return
    for index in np.ndindex(*[len(space[n]) for n in names]):
        yield {n: space[n][i] for n, i in zip(names, index)}
