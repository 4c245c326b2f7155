"""Subcommands of the data stage: ingest, synthetic-lrs, windows, folds, embed."""

from __future__ import annotations

import logging
from pathlib import Path

from ..arguments import json_arg


def cmd_ingest(args):
    from .ingest import ingest
    from .posts import write_parquet_atomic

    posts = ingest(args.format, args.input, dataset=args.dataset, **args.options)
    write_parquet_atomic(posts, args.output)
    logging.info("%s: %d posts in %d timelines", args.output, posts.height, posts["timeline_id"].n_unique())


def cmd_synthetic_lrs(args):
    from .ingest.synthetic_lrs import write_synthetic_lrs

    write_synthetic_lrs(Path(args.output), n_threads=args.n_threads, seed=args.seed)


def cmd_windows(args):
    from .posts import read_posts, write_parquet_atomic
    from .windows import build_windows

    write_parquet_atomic(build_windows(read_posts(args.posts), args.window), args.output)


def cmd_folds(args):
    from .folds import make_folds
    from .posts import read_posts, write_parquet_atomic

    folds = make_folds(read_posts(args.posts), args.n_folds, args.dev_ratio, args.seed)
    write_parquet_atomic(folds, args.output)


def cmd_embed(args):
    from ..device import set_threads
    from .embed import embed_posts

    set_threads(args.threads)
    embed_posts(args.posts, args.output, args.model, args.cache)


def register(sub) -> None:
    p = sub.add_parser("ingest", help="read a raw corpus into the canonical post table")
    p.add_argument("--format", required=True, help="chitchat, lrs, topic_shift_mi, talklife, generic")
    p.add_argument("--input", type=Path, help="corpus file or folder (chitchat: optional)")
    p.add_argument("--output", required=True, type=Path)
    p.add_argument("--dataset", help="value of the dataset column (default: the format)")
    p.add_argument("--options", type=json_arg, default={}, help="reader options as JSON")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("synthetic-lrs", help="write the synthetic corpus in the RumourEval release layout")
    p.add_argument("--output", required=True)
    p.add_argument("--n-threads", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_synthetic_lrs)

    p = sub.add_parser("windows", help="window streams (indices + log-time gaps)")
    p.add_argument("--posts", required=True)
    p.add_argument("--window", required=True, type=int)
    p.add_argument("--output", required=True)
    p.set_defaults(func=cmd_windows)

    p = sub.add_parser("folds", help="5 folds by timeline, train/dev/test")
    p.add_argument("--posts", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--n-folds", type=int, default=5)
    p.add_argument("--dev-ratio", type=float, default=0.25)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_folds)

    p = sub.add_parser("embed", help="SBERT embedding of every post (each distinct text once)")
    p.add_argument("--posts", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--model", default="minilm")
    p.add_argument("--cache", help="vectors of texts seen before (.npz, read and updated): those are not encoded again")
    p.add_argument("--threads", type=int)
    p.set_defaults(func=cmd_embed)
