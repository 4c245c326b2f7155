"""Subcommand of the training stage: train (one model, window, fold and seed)."""

from __future__ import annotations

import argparse
import logging

from ..arguments import json_arg


def cmd_train(args):
    from .run import TrainRun, run_training

    metrics = run_training(TrainRun(
        posts_path=args.posts, folds_path=args.folds, out_dir=args.out_dir, model=args.model, params=args.params,
        labels=args.labels, window=args.window, fold=args.fold, seed=args.seed, streams_path=args.streams,
        embeddings_path=args.embeddings, threads=args.threads, device=args.device, model_type=args.type,
        fingerprint=args.fingerprint,
    ))
    logging.info("test macro-F1 %.4f (dev %.4f) in %.1f s", metrics["test"]["macro"],
                 metrics["dev_macro"], metrics["seconds"])


def register(sub) -> None:
    p = sub.add_parser("train", formatter_class=argparse.ArgumentDefaultsHelpFormatter, help="train and test one (model, window, fold, seed)")
    p.add_argument("--posts", required=True, help="the dataset's posts.parquet")
    p.add_argument("--folds", required=True, help="the dataset's folds.parquet")
    p.add_argument("--streams", help="streams_w{window}.parquet (models that read windows)")
    p.add_argument("--embeddings", help="sbert.npy (stream baselines)")
    p.add_argument("--model", required=True, help="the model's name in the config")
    p.add_argument("--type", help="model type (default: the name); see models/registry.py")
    p.add_argument("--params", type=json_arg, default={}, help="model settings and grid as JSON")
    p.add_argument("--labels", type=json_arg, required=True, help="class names as a JSON list")
    p.add_argument("--window", type=int, required=True, help="window size (1 = post level)")
    p.add_argument("--fold", type=int, required=True, help="test fold")
    p.add_argument("--seed", type=int, required=True, help="training seed")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's own choice)")
    p.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda if available)")
    p.add_argument("--out-dir", required=True, help="run folder: metrics.json, predictions.parquet, model/")
    p.add_argument("--fingerprint", help="what the run is made from (the workflow's digest of code, settings "
                   "and data), recorded in metrics.json: a finished run with the current one is not rerun")
    p.set_defaults(func=cmd_train)
