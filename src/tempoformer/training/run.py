"""One training run: (dataset, model, window, fold, seed) → test predictions and metrics.

The hyperparameter grid of the model is searched on the fold's dev set (macro-F1); the
selected configuration's best dev epoch is evaluated once on the test set.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import torch

from ..artefacts import load_npy, read_parquet
from ..atomic import write_text_atomic
from ..data.folds import split_rows
from ..data.posts import read_posts, write_parquet_atomic
from ..data.windows import window_arrays
from ..device import pick_device, set_threads
from ..models.registry import TRAIN_DEFAULTS, ModelType, validate_params
from ..models.registry import model_type as get_model_type
from .lock import run_lock
from .loop import fit, grid, predict_proba
from .losses import focal_alpha
from .metrics import f1_scores
from .record import run_setup
from .settings import TrainSettings

logger = logging.getLogger(__name__)

SETTINGS_FIELDS = {f.name for f in dataclasses.fields(TrainSettings)}


@dataclass
class RunData:
    posts: pl.DataFrame
    labels: list[str]
    y: np.ndarray  # integer label per post row
    rows: dict[str, np.ndarray]  # train/dev/test post rows of this fold
    streams: pl.DataFrame | None
    embeddings: np.ndarray | None


def load_run_data(posts_path, folds_path, fold, labels, streams_path=None, embeddings_path=None):
    posts = read_posts(posts_path)
    unlabelled = posts.filter(pl.col("label").is_null())
    if unlabelled.height:
        raise ValueError(f"{posts_path}: {unlabelled.height} posts have no label; training needs labels")
    index = {label: i for i, label in enumerate(labels)}
    unknown = set(posts["label"].unique()) - set(index)
    if unknown:
        raise ValueError(f"{posts_path}: labels {sorted(unknown)} are not in the config's {labels}")
    y = posts["label"].replace_strict(index, return_dtype=pl.Int64).to_numpy()
    return RunData(
        posts=posts,
        labels=list(labels),
        y=y,
        rows=split_rows(posts, read_parquet(folds_path), fold),
        streams=read_parquet(streams_path) if streams_path else None,
        embeddings=load_npy(embeddings_path) if embeddings_path else None,
    )


def time_feature(window_rows: np.ndarray, valid: np.ndarray, log_gap: np.ndarray | None):
    """Log-time gap to the current post, or without timestamps the distance in posts."""
    if log_gap is not None:
        return log_gap
    w = window_rows.shape[1]
    distance = np.broadcast_to(np.arange(w - 1, -1, -1, dtype=np.float32), window_rows.shape)
    return np.where(valid, distance, 0.0).astype(np.float32)


def stream_batcher(data: RunData):
    """SBERT vectors of each window's posts, zeros in padding slots."""
    embeddings = torch.from_numpy(data.embeddings)

    def make_batch(rows: np.ndarray) -> dict[str, torch.Tensor]:
        window_rows, valid, log_gap = window_arrays(data.streams, rows)
        x = embeddings[torch.from_numpy(np.where(valid, window_rows, 0))]
        mask = torch.tensor(valid)  # a copy: the arrays polars hands out are read-only
        x = x * mask[..., None]
        time_ = torch.tensor(time_feature(window_rows, valid, log_gap))
        return {"x": x, "mask": mask, "time": time_}

    return make_batch


def stream_setup(data: RunData, spec: ModelType, params: dict):
    """A stream baseline over the window's SBERT vectors: build(hp) -> model, make_batch."""
    model_cls = spec.load()
    make = getattr(model_cls, "from_params", model_cls)  # a model with a config dataclass, or plain kwargs
    fixed = {k: v for k, v in params.items() if k not in SETTINGS_FIELDS and k != "grid"}

    def build(hp: dict) -> torch.nn.Module:
        model_hp = {k: v for k, v in hp.items() if k not in SETTINGS_FIELDS}
        return make(
            input_dim=data.embeddings.shape[1], num_labels=len(data.labels), **fixed, **model_hp
        )

    return build, stream_batcher(data)


def model_setup(data: RunData, spec: ModelType, params: dict, window: int):
    """(build(hp) -> model, make_batch(rows) -> forward kwargs, default training settings)."""
    if spec.kind == "stream":
        build, make_batch = stream_setup(data, spec, params)
    else:
        build, make_batch = spec.load()(data, params, window)
    return build, make_batch, TRAIN_DEFAULTS[spec.kind]


def search_grid(data: RunData, spec: ModelType, params: dict, window: int, seed: int, device: str,
                checkpoints: Path | None = None, run_key: dict | None = None):
    """Train every grid point; return test probabilities of the best on dev, the best model
    and the search log. Each grid point checkpoints every epoch under `checkpoints`."""
    build, make_batch, defaults = model_setup(data, spec, params, window)
    settings_base = {**defaults, **{k: v for k, v in params.items() if k in SETTINGS_FIELDS}}
    alpha = focal_alpha(data.y[data.rows["train"]], len(data.labels))
    log, best = [], None
    for hp in grid(params.get("grid", {})):
        torch.manual_seed(seed)
        net = build(hp)
        settings = TrainSettings(**{**settings_base, **{k: v for k, v in hp.items() if k in SETTINGS_FIELDS}})
        checkpoint = None
        if checkpoints is not None:
            checkpoint = checkpoints / f"{_digest({**(run_key or {}), 'hp': hp})}.pt"
        history = fit(net, make_batch, data.y, data.rows["train"], data.rows["dev"], alpha,
                      data.labels, settings, seed, device, checkpoint)
        logger.info("grid point %s: best dev macro-F1 %.4f at epoch %d", hp, history["dev_macro"],
                    history["best_epoch"] + 1)
        log.append({"hp": hp, "dev_macro": history["dev_macro"], "best_epoch": history["best_epoch"],
                    "epochs": history["history"]})
        if best is None or history["dev_macro"] > best[0]:
            prob = predict_proba(net, make_batch, data.rows["test"], device, settings.eval_batch_size)
            best = (history["dev_macro"], hp, prob, net)
    dev_macro, hp, prob, net = best
    return prob, net, {"selected": hp, "dev_macro": dev_macro, "grid": log}


def _digest(value) -> str:
    return hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _file_identity(*paths) -> list:
    """Size and mtime of the inputs: a checkpoint made from other data is never resumed."""
    return [(str(p), os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in paths if p]


@dataclass(frozen=True, kw_only=True)
class TrainRun:
    """One training run: its inputs, its identity (model, window, fold, seed) and where it writes.

    model is the config entry's name, model_type its type (default: the name, see
    models/registry.py); params its settings and grid; streams_path the window streams (models
    that read windows), embeddings_path the SBERT vectors (stream baselines); threads, device
    (default: cuda if available); fingerprint what the run is made from, recorded in metrics.json."""

    posts_path: str | os.PathLike
    folds_path: str | os.PathLike
    out_dir: str | os.PathLike
    model: str
    params: dict = dataclasses.field(default_factory=dict)
    labels: list[str]
    window: int
    fold: int
    seed: int
    streams_path: str | os.PathLike | None = None
    embeddings_path: str | os.PathLike | None = None
    threads: int | None = None
    device: str | None = None
    model_type: str | None = None
    fingerprint: str | None = None


def run_training(run: TrainRun) -> dict:
    model_type = run.model_type or run.model
    spec = get_model_type(model_type)
    validate_params(run.model, model_type, run.params)
    # one trainer per run folder: a second one (a retry beside a job that lives on) stops at once
    with run_lock(run.out_dir):
        return _train_and_test(run, spec)


def _train_and_test(run: TrainRun, spec: ModelType) -> dict:
    params, window, seed = run.params, run.window, run.seed
    set_threads(run.threads)
    device = pick_device(run.device)
    started = time.perf_counter()
    data = load_run_data(run.posts_path, run.folds_path, run.fold, run.labels, run.streams_path, run.embeddings_path)
    out_dir = Path(run.out_dir)
    checkpoints = out_dir / "checkpoints"
    net = None
    if spec.kind == "prior":
        prob, search = spec.load()(data, seed)
    elif spec.kind == "llm":
        prob, search = spec.load()(data, params, window, seed, device=device)
    else:
        # A grid point's checkpoint depends on its own settings, not on the rest of the grid:
        # narrowing a grid resumes the points it keeps.
        shared = {k: v for k, v in params.items() if k != "grid"}
        run_key = {"model": spec.name, "params": shared, "labels": run.labels, "window": window,
                   "fold": run.fold, "seed": seed,
                   "inputs": _file_identity(run.posts_path, run.folds_path, run.streams_path, run.embeddings_path)}
        prob, net, search = search_grid(data, spec, params, window, seed, device, checkpoints, run_key)
        if spec.saver and params.get("save_model", True):
            # what `tempoformer predict` needs: weights, config, label names, tokenizer
            spec.load_saver()(out_dir / "model", net, data.labels, window, params)
    test_rows = data.rows["test"]
    pred = prob.argmax(1)
    scores = f1_scores(data.y[test_rows], pred, data.labels)
    test_posts = data.posts[test_rows]
    predictions = pl.DataFrame({
        "row": test_rows,
        "timeline_id": test_posts["timeline_id"],
        "post_id": test_posts["post_id"],
        "gold": [data.labels[i] for i in data.y[test_rows]],
        "pred": [data.labels[i] for i in pred],
        **{f"prob_{label}": prob[:, i] for i, label in enumerate(data.labels)},
    })
    metrics = {
        "dataset": str(data.posts["dataset"][0]), "model": run.model, "type": spec.name, "window": window,
        "fold": run.fold, "seed": seed, "labels": data.labels, "test": scores,
        "n": {split: int(len(rows)) for split, rows in data.rows.items()},
        "device": device, "seconds": round(time.perf_counter() - started, 2), **search,
        "setup": run_setup(spec, params, device, net),
        "fingerprint": run.fingerprint,
    }
    write_parquet_atomic(predictions, out_dir / "predictions.parquet")
    write_text_atomic(out_dir / "metrics.json", json.dumps(metrics, indent=1))
    shutil.rmtree(checkpoints, ignore_errors=True)  # the run is complete: nothing to resume
    return metrics
