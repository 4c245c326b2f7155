"""Pretraining the base LM once, and fine-tuning every model from that checkpoint.

Loss (Eq. 5): cross-entropy of every piece and of EOS given the pieces before it in the same
abstract, each training document conditioned on its own year's history. Abstracts longer than
the context are cut into consecutive chunks (every piece predicted once). Batches hold one year
each (the temporal bias is computed once per batch), are shuffled with the run's seed, and
gradients are accumulated over `grad_accum` batches (a loss mean over the accumulated tokens).

Optimiser: Adam (the paper), the base LM at `lr`, the new parameters (LSTM, A, C, D, α, a new
output layer) at `lr_new` (the authors: 5e-5 and 1e-3), linear warm-up over `warmup_ratio` of the
steps then linear decay. Early stopping: dev perplexity after every epoch; the best epoch's
weights are kept (the authors keep the last of 20 epochs), training stops after `patience`
epochs without improvement. Grid (Baseline-n's n, the temporal models' α): each grid point is
fine-tuned from the pretrained checkpoint, and the point with the lowest dev perplexity is kept;
every point's dev perplexity is logged.

Where a fine-tuning starts (start_checkpoint): every model from the pretrained checkpoint, except
Baseline-n with `start: base` (the default, the paper's reading: GPT-2 fine-tuned on the n most
recent years only, so nothing of the older years is in it). With a pretrained base model
(`base_model` not scratch) the pretrain step trains nothing, so pretrained.pt is the base model and
both starts read it. With `base_model: scratch` the LM pretrained here has seen every training
year; `base` then starts from a scratch LM pretrained (same settings and seed) on the n most
recent training years only, its own checkpoint; `start: pretrained` starts from the LM pretrained
on all the training years (this code's first behaviour: a recency baseline that has seen the
older years in pretraining).

Same seed on the CPU, same numbers: the seed fixes the new parameters' initialisation, the batch
order and dropout.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch.nn import functional as F

from ..settings import settings_from_dict
from .evaluate import Doc, perplexity

log = logging.getLogger(__name__)


@dataclass
class FitSettings:
    # ranges: tempoformer/settings.py (checked at start-up, config_checks.py, and by from_dict)
    # at most (fine-tuning: early stopping on dev perplexity)
    epochs: int = field(default=1, metadata={"range": ">= 1"})
    patience: int = field(default=2, metadata={"range": ">= 1"})
    batch_size: int = field(default=8, metadata={"range": ">= 1"})
    grad_accum: int = field(default=1, metadata={"range": ">= 1"})
    lr: float = field(default=5.0e-5, metadata={"range": ">= 0"})  # base LM
    lr_new: float = field(default=1.0e-3, metadata={"range": ">= 0"})  # new parameters
    warmup_ratio: float = field(default=0.0, metadata={"range": "[0, 1]"})
    max_grad_norm: float = field(default=1.0, metadata={"range": ">= 0"})
    eval_batch_size: int = field(default=8, metadata={"range": ">= 1"})
    eval_stride: int | None = field(default=None, metadata={"range": ">= 1"})

    @classmethod
    def from_dict(cls, d: dict | None) -> "FitSettings":
        return settings_from_dict(cls, d, "training")


def start_checkpoint(spec, pretrained: str, recent: dict | None, scratch: bool) -> str:
    """The checkpoint a model of BiasSpec `spec` is fine-tuned from (module docstring): `pretrained`,
    or for Baseline-n with start base on a scratch LM, recent[n] (the LM pretrained on the n most
    recent training years only; `recent` {n: path})."""
    if spec.type != "baseline_n" or spec.start == "pretrained" or not scratch:
        return str(pretrained)
    found = {int(k): str(v) for k, v in (recent or {}).items()}
    n = int(spec.n)
    if n not in found:
        raise ValueError(f"Baseline-n n={n} with start: base on a scratch LM starts from the LM pretrained on the "
                         f"last {n} training years only (future-lm-pretrain --recent-years {n}), which was not "
                         f"given (future-lm-train --recent-pretrained has n = {sorted(found) or 'none'}); "
                         "or set start: pretrained")
    return found[n]


def chunks(ids: list[int], bos: int, eos: int, context: int) -> list[list[int]]:
    """BOS + ids + EOS cut into pieces of at most context + 1 tokens overlapping by one (the
    last token of a chunk is the first input of the next): every token predicted once."""
    seq = [bos, *ids, eos]
    return [seq[start:start + context + 1] for start in range(0, len(seq) - 1, context)]


def make_batches(docs: list[Doc], bos: int, eos: int, context: int, batch_size: int,
                 rng: np.random.Generator) -> list[tuple[int, list[list[int]]]]:
    """(year, chunks) batches, one year each, shuffled within years and in order."""
    by_year: dict[int, list[list[int]]] = {}
    for d in docs:
        by_year.setdefault(d.year, []).extend(chunks(d.ids, bos, eos, context))
    batches = []
    for year in sorted(by_year):
        items = by_year[year]
        order = rng.permutation(len(items))
        for b in range(0, len(items), batch_size):
            batches.append((year, [items[i] for i in order[b:b + batch_size]]))
    return [batches[i] for i in rng.permutation(len(batches))]


def collate(items: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(c) for c in items) - 1
    ids = torch.full((len(items), width), pad, dtype=torch.long)
    targets = torch.full((len(items), width), -100, dtype=torch.long)
    for i, c in enumerate(items):
        ids[i, :len(c) - 1] = torch.tensor(c[:-1])
        targets[i, :len(c) - 1] = torch.tensor(c[1:])
    return ids, targets


def lr_factor(step: int, total: int, warmup: int) -> float:
    if warmup and step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(total - warmup, 1))


def fit(model, train_docs: list[Doc], dev_docs: list[Doc], vocab, settings: FitSettings, seed: int,
        device: str = "cpu", label: str = "") -> tuple[dict, dict]:
    """Train `model` in place; return (best state_dict, log). Early stopping on dev perplexity."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    model.to(device)
    groups = [{"params": model.lm_parameters(), "lr": settings.lr},
              {"params": model.new_parameters(), "lr": settings.lr_new}]
    groups = [g for g in groups if g["params"]]
    optimizer = torch.optim.Adam(groups)
    base_lrs = [g["lr"] for g in optimizer.param_groups]
    context = model.lm.context
    n_batches = len(make_batches(train_docs, vocab.bos, vocab.eos, context, settings.batch_size,
                                 np.random.default_rng(0)))
    total = max(1, settings.epochs * math.ceil(n_batches / settings.grad_accum))
    warmup = int(settings.warmup_ratio * total)

    def dev_ppl():
        return perplexity(model, dev_docs, vocab.bos, vocab.eos, settings.eval_stride, settings.eval_batch_size, device)

    history = [{"epoch": 0, "dev_ppl": dev_ppl(), "train_loss": None}]
    best = (history[0]["dev_ppl"], 0, copy.deepcopy(model.state_dict()))
    step, started, bad = 0, time.perf_counter(), 0
    log.info("%s epoch 0: dev ppl %.2f", label, history[0]["dev_ppl"])
    for epoch in range(1, settings.epochs + 1):
        model.train()
        losses, tokens_seen = [], 0
        batches = make_batches(train_docs, vocab.bos, vocab.eos, context, settings.batch_size, rng)
        for b0 in range(0, len(batches), settings.grad_accum):
            group = batches[b0:b0 + settings.grad_accum]
            n_tokens = sum(sum(len(c) - 1 for c in items) for _, items in group)
            optimizer.zero_grad(set_to_none=True)
            total_loss = 0.0
            for year, items in group:
                ids, targets = collate(items, vocab.pad)
                logits, _ = model.logits(ids.to(device), year)
                loss = F.cross_entropy(logits.float().transpose(1, 2), targets.to(device), ignore_index=-100,
                                       reduction="sum") / n_tokens
                loss.backward()
                total_loss += loss.item()
            if settings.max_grad_norm:
                torch.nn.utils.clip_grad_norm_([p for g in groups for p in g["params"]], settings.max_grad_norm)
            factor = lr_factor(step, total, warmup)
            for g, base in zip(optimizer.param_groups, base_lrs):
                g["lr"] = base * factor
            optimizer.step()
            step += 1
            losses.append(total_loss)
            tokens_seen += n_tokens
        ppl = dev_ppl()
        history.append({"epoch": epoch, "dev_ppl": ppl, "train_loss": float(np.mean(losses)) if losses else None,
                        "tokens": tokens_seen, "alpha": float(model.alpha)})
        log.info("%s epoch %d: train loss %.3f, dev ppl %.2f", label, epoch, history[-1]["train_loss"] or float("nan"), ppl)
        if ppl < best[0]:
            best, bad = (ppl, epoch, copy.deepcopy(model.state_dict())), 0
        else:
            bad += 1
            if bad >= settings.patience:
                break
    record = {"epochs": history, "best_epoch": best[1], "best_dev_ppl": best[0], "steps": step,
              "seconds": time.perf_counter() - started, "settings": asdict(settings)}
    return best[2], record
