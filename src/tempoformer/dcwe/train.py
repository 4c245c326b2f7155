"""MLM fine-tuning of DCWE and CWE: documents, fixed masks, the priors, the training loop.

Documents are WordPiece-encoded once; one longer than `max_length` keeps its first and last
pieces (the authors' first 256 + last 256 of 512, data_helpers.py truncate). Masks (15% of the
non-special pieces; 80% [MASK], 10% a random piece, 10% kept; at least one per document) are a
function of (seed, doc_id, salt) only: every model trained or evaluated with the same seed sees
the same masked positions (the authors' fresh global-RNG masks differ between DCWE and CWE runs,
spec §3.4). Training batches are drawn by epoch-wise permutations of the training documents
from `seed`: the warm-up, CWE and every DCWE variant with one seed see the same batches in the
same order with the same masks.

Loss per batch (eqs. 3, 5, 9-12): mean cross-entropy over the masked pieces + lambda_a * anchor
+ lambda_w * walk, lambda_w = lambda_w_ratio * lambda_a. `prior_norm`:
- `paper`: each document's sum over its K real tokens of ||o||^2 (resp. ||o_j - o_j-1||^2),
  divided by K, averaged over the batch's documents (eqs. 11-12);
- `authors`: the mean over all B x L positions, padding included (main_mlm.py:114-117).
`walk_at_t0`: `skip` (the paper: no walk term at the first time) or `authors` (spec §3.1).
Adam without weight decay, schedule or clipping (the authors'); `dynamic_lr` may give the new
offset and GAT weights their own rate. Dropout draws come from `seed` under a forked torch RNG.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import asdict, dataclass
from types import SimpleNamespace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import polars as pl
import torch
from torch.nn import functional as F

from ..checkpoint_io import DamagedState, load_state, save_state, set_aside
from ..semantic_change.pretrain import mask_batch
from .model import DcweModel
from .options import PRIOR_NORMS, DCWETrainSettings  # noqa: F401  (DCWETrainSettings: the training API)

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- documents


@dataclass
class EncodedDocs:
    doc_ids: list[str]
    ids: list[list[int]]
    times: np.ndarray
    units: np.ndarray
    texts: list[str]

    def __len__(self) -> int:
        return len(self.ids)


def truncate(pieces: Sequence[int], budget: int) -> list[int]:
    """First ceil(budget/2) and last floor(budget/2) pieces of a text longer than budget."""
    if len(pieces) <= budget:
        return list(pieces)
    head = (budget + 1) // 2
    return list(pieces[:head]) + list(pieces[len(pieces) - (budget - head):])


def encode_docs(tokenizer, docs: pl.DataFrame, max_length: int) -> EncodedDocs:
    """[CLS] pieces [SEP] of each document (docs: the corpus's document table)."""
    if max_length < 3:
        raise ValueError(f"max_length must be at least 3, got {max_length}")
    texts = docs["text"].to_list()
    pieces = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    ids = [[tokenizer.cls_token_id, *truncate(p, max_length - 2), tokenizer.sep_token_id] for p in pieces]
    return EncodedDocs(docs["doc_id"].to_list(), ids, docs["time"].to_numpy(), docs["unit"].to_numpy(), texts)


def stable_seed(*parts) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "little") >> 1


def document_masks(ids: Sequence[int], key: tuple, tokenizer, probability: float) -> tuple[list[int], list[int]]:
    """(masked ids, labels with -100 where not predicted) of one document, fixed by `key`."""
    row = torch.tensor(ids)[None]
    special = torch.isin(row, torch.tensor(tokenizer.all_special_ids))
    generator = torch.Generator().manual_seed(stable_seed(*key))
    masked, labels = mask_batch(row, special, None, SimpleNamespace(mask_id=tokenizer.mask_token_id),
                                len(tokenizer), SimpleNamespace(mlm_probability=probability), generator)
    return masked[0].tolist(), labels[0].tolist()


def collate(rows: Sequence[Sequence[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = max(len(r) for r in rows)
    out = torch.full((len(rows), n), pad, dtype=torch.long)
    attention = torch.zeros((len(rows), n), dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r)
        attention[i, : len(r)] = 1
    return out, attention


def masked_batch(docs: EncodedDocs, picks: Sequence[int], tokenizer, probability: float, seed: int, salt: str):
    """Tensors (ids, attention, labels, times, units) of documents `picks` with their fixed masks."""
    masked, labels = zip(*(document_masks(docs.ids[i], (seed, docs.doc_ids[i], salt), tokenizer, probability)
                           for i in picks))
    ids, attention = collate(masked, tokenizer.pad_token_id)
    labels, _ = collate(labels, -100)
    picks = np.asarray(picks)
    return (ids, attention, labels, torch.from_numpy(docs.times[picks]).long(),
            torch.from_numpy(docs.units[picks]).long())


def batch_schedule(n_docs: int, batch_size: int, steps: int, seed: int) -> list[np.ndarray]:
    """`steps` batches of document indices: consecutive epoch-wise permutations from `seed`."""
    rng = np.random.default_rng(seed)
    order: list[int] = []
    while len(order) < steps * batch_size:
        order.extend(rng.permutation(n_docs).tolist())
    return [np.array(order[s * batch_size: (s + 1) * batch_size]) for s in range(steps)]


# --------------------------------------------------------------------------- priors


def prior_terms(offsets: torch.Tensor, walk: torch.Tensor | None, attention: torch.Tensor,
                norm: str = "paper") -> tuple[torch.Tensor, torch.Tensor]:
    """(anchor, walk) prior values before lambda (see the module docstring for `norm`)."""
    if norm not in PRIOR_NORMS:
        raise ValueError(f"prior_norm must be one of {PRIOR_NORMS}, got {norm!r}")

    def reduce(values: torch.Tensor) -> torch.Tensor:  # (B, L, D) -> scalar
        squared = values.pow(2).sum(-1)
        if norm == "authors":
            return squared.mean()
        mask = attention.to(squared.dtype)
        return ((squared * mask).sum(1) / mask.sum(1)).mean()

    anchor = reduce(offsets)
    return anchor, reduce(walk) if walk is not None else offsets.new_zeros(())


def add_priors(task_loss: torch.Tensor, offsets: torch.Tensor | None, walk: torch.Tensor | None,
               attention: torch.Tensor, settings: DCWETrainSettings):
    """(total, task loss, anchor, walk): the task loss plus lambda_a anchor + lambda_w walk."""
    if offsets is None:
        zero = task_loss.new_zeros(())
        return task_loss, task_loss, zero, zero
    anchor, walk_value = prior_terms(offsets, walk, attention, settings.prior_norm)
    total = task_loss + settings.lambda_a * anchor + settings.lambda_w * walk_value
    return total, task_loss, anchor, walk_value


def walk_option(settings: DCWETrainSettings) -> str | None:
    """The walk difference is computed only where the priors count."""
    return settings.walk_at_t0 if settings.lambda_a > 0 else None


def mlm_loss(model: DcweModel, batch, settings: DCWETrainSettings, device: str):
    """(total loss, MLM cross-entropy, anchor, walk) of one batch."""
    ids, attention, labels, times, units = (x.to(device) for x in batch)
    hidden, offsets, walk = model(ids, attention, times, units, walk_option(settings))
    where = labels != -100
    ce = F.cross_entropy(model.mlm_logits(hidden[where]), labels[where])
    return add_priors(ce, offsets, walk, attention, settings)


def _copy_state(model: torch.nn.Module) -> dict:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _fresh() -> dict:
    return {"step": 0, "log_rows": [], "epochs": [], "best_epoch": None, "best_value": None, "since_best": 0,
            "stopped": False, "seconds": 0.0, "best_state": None}


def _save_checkpoint(path: Path, state: dict, key: dict, model, optimizer) -> None:
    """The training state after an epoch (checkpoint_io: safetensors + JSON, no pickle). The
    best epoch's weights are not stored twice when they are the model's own."""
    best_is_model = state["best_epoch"] == (state["epochs"][-1]["epoch"] if state["epochs"] else None)
    save_state(path, {**state, "best_state": None if best_is_model else state["best_state"],
                      "best_is_model": best_is_model, "key": key, "model": _copy_state(model),
                      "optimizer": optimizer.state_dict(), "torch_rng": torch.get_rng_state(),
                      "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None})


def _resume(path: Path, key: dict, model, optimizer) -> dict:
    """The state saved at `path`, applied to the model, the optimizer and the (forked) torch RNG;
    a fresh state if there is none. A damaged file is set aside (`<name>.damaged`); one made by
    another run (other settings, seed or inputs: `key`) is removed; either way the run starts
    from its first step."""
    if not path.exists():
        return _fresh()
    try:
        saved = load_state(path)
        if not isinstance(saved, dict) or "model" not in saved or "optimizer" not in saved:
            raise DamagedState(path, "not a DCWE training checkpoint")
    except DamagedState as error:
        set_aside(path, error.problem)
        return _fresh()
    if saved.get("key") != key:
        log.warning("%s: made by another run (settings, seed or inputs differ); starting afresh", path)
        path.unlink()
        return _fresh()
    model_state = saved.pop("model")
    model.load_state_dict(model_state)
    optimizer.load_state_dict(saved.pop("optimizer"))
    torch.set_rng_state(saved.pop("torch_rng"))
    cuda_rng = saved.pop("cuda_rng")
    if cuda_rng is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda_rng)
    if saved.pop("best_is_model"):
        saved["best_state"] = {k: v.clone() for k, v in model_state.items()}
    saved.pop("key")
    log.info("%s: resuming after step %d (epoch %d)", path, saved["step"], len(saved["epochs"]))
    return saved


def train_loop(model: torch.nn.Module, n_docs: int, settings: DCWETrainSettings, seed: int,
               batch_loss: Callable[[np.ndarray, int], tuple], device: str = "cpu",
               head_prefixes: Sequence[str] = (), names: Sequence[str] = ("loss", "task", "anchor", "walk"),
               evaluate: Callable[[int], float] | None = None, higher_is_better: bool = False,
               checkpoint: str | os.PathLike | None = None, key: dict | None = None) -> dict:
    """Adam over `settings.total_steps(n_docs)` batches of `batch_schedule(n_docs, ...)`;
    batch_loss(picks, step) returns (total, *parts) for one batch. Parameter groups: the model's
    dynamic parameters (`dynamic_parameter_names`) at dynamic_lr, those under `head_prefixes` at
    head_lr, the rest at lr (a rate left null falls back to lr). Dropout draws come from `seed`
    under a forked RNG.

    Per-epoch selection (the paper's grid: every epoch is a trial): with `settings.epochs` and
    `evaluate`, evaluate(epoch) -> dev metric runs after each epoch's last step; the weights of the
    best epoch (strictly better than every earlier one) are put back at the end. With
    `settings.patience`, training stops after that many epochs in a row without a better value
    (`epochs` is then the most). Evaluation draws nothing from the dropout RNG, so the training
    steps are those of a run without it.

    `checkpoint` (with per-epoch evaluation): the whole training state (weights, Adam, the
    dropout RNG, the epochs so far, the best epoch's weights) is saved there after every epoch,
    and a run started again with the same file and `key` (what the run is made from) resumes
    after its last finished epoch and ends exactly as an uninterrupted run would."""
    started = time.perf_counter()
    steps = settings.total_steps(n_docs)
    per_epoch = settings.steps_per_epoch(n_docs) if settings.epochs is not None and evaluate else None
    dynamic = model.dynamic_parameter_names()
    groups: dict[float, list] = {}
    for name, param in model.named_parameters():
        lr = settings.lr
        if name in dynamic and settings.dynamic_lr is not None:
            lr = settings.dynamic_lr
        if name.startswith(tuple(head_prefixes)) and settings.head_lr is not None:
            lr = settings.head_lr
        groups.setdefault(lr, []).append(param)
    optimizer = torch.optim.Adam([{"params": ps, "lr": lr} for lr, ps in groups.items()])
    checkpoint = Path(checkpoint) if checkpoint is not None and per_epoch else None
    # what the run is made from, as JSON reads it back (the checkpoint keeps it beside the state)
    key = json.loads(json.dumps({**(key or {}), "settings": asdict(settings), "seed": seed, "n_docs": n_docs},
                                default=str))
    schedule = batch_schedule(n_docs, settings.batch_size, steps, seed)
    model.to(device).train()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)  # dropout
            state = _resume(checkpoint, key, model, optimizer) if checkpoint else _fresh()
            model.to(device).train()
            before = state["seconds"]  # seconds of the runs this one resumes
            for step in range(state["step"], steps):
                if state["stopped"]:
                    break
                total, *parts = batch_loss(schedule[step], step)
                optimizer.zero_grad(set_to_none=True)
                total.backward()
                if settings.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
                optimizer.step()
                state["log_rows"].append([float(x.detach()) for x in (total, *parts)])
                if (step + 1) % max(1, steps // 5) == 0:
                    log.info("step %d/%d: %s", step + 1, steps,
                             ", ".join(f"{n} {v:.4g}" for n, v in zip(names, state["log_rows"][-1])))
                state["step"] = step + 1
                if per_epoch and (step + 1) % per_epoch == 0:
                    epoch = (step + 1) // per_epoch
                    value = float(evaluate(epoch))
                    model.train()
                    state["seconds"] = before + time.perf_counter() - started
                    state["epochs"].append({"epoch": epoch, "step": step + 1, "dev": value,
                                            "seconds": state["seconds"]})
                    best = state["best_value"]
                    improved = best is None or (value > best if higher_is_better else value < best)
                    log.info("epoch %d: dev %.6g%s", epoch, value, " (best so far)" if improved else "")
                    if improved:
                        state.update(best_epoch=epoch, best_value=value, best_state=_copy_state(model), since_best=0)
                    else:
                        state["since_best"] += 1
                        if settings.patience is not None and state["since_best"] >= settings.patience:
                            state["stopped"] = True
                            log.info("no better dev value for %d epochs: stopping after epoch %d",
                                     settings.patience, epoch)
                    if checkpoint:
                        _save_checkpoint(checkpoint, state, key, model, optimizer)
        if state["best_epoch"] is not None and state["best_epoch"] != state["epochs"][-1]["epoch"]:
            model.load_state_dict(state["best_state"])
    finally:
        model.eval()
    rows = state["log_rows"]
    losses = np.array(rows).reshape(-1, len(names))
    out = {"steps": state["step"], "max_steps": steps, "seconds": before + time.perf_counter() - started,
           "settings": asdict(settings), "epochs": state["epochs"], "best_epoch": state["best_epoch"],
           "stopped_early": state["stopped"] and state["step"] < steps}
    for i, name in enumerate(names):
        out[name] = losses[:, i].tolist()
    task = names[1]
    out[f"first10_{task}"] = float(losses[:10, 1].mean()) if len(losses) else None
    out[f"last10_{task}"] = float(losses[-10:, 1].mean()) if len(losses) else None
    return out


def train_mlm(model: DcweModel, docs: EncodedDocs, tokenizer, settings: DCWETrainSettings, seed: int,
              device: str = "cpu", warmup: bool = False, evaluate: Callable[[int], float] | None = None,
              checkpoint: str | os.PathLike | None = None, key: dict | None = None) -> dict:
    """Train in place on `docs`; returns a log (losses per step, seconds, settings, per-epoch dev
    values). evaluate(epoch) -> dev perplexity (lower is better) for per-epoch selection;
    checkpoint, key: see train_loop."""
    def batch_loss(picks, step):
        batch = masked_batch(docs, picks, tokenizer, settings.mlm_probability, seed, f"train{step}")
        return mlm_loss(model, batch, settings, device)

    return train_loop(model, len(docs), settings, seed, batch_loss, device, ("mlm.",) if warmup else (),
                      ("loss", "mlm", "anchor", "walk"), evaluate, higher_is_better=False,
                      checkpoint=checkpoint, key=key)
