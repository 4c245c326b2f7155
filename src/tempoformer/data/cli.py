"""Subcommands of the data stage: ingest, synthetic-lrs, windows, folds, embed, reduce-embeddings."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from ..arguments import json_arg


def cmd_ingest(args):
    from .ingest import ingest
    from .posts import write_parquet_atomic

    options = dict(args.options)
    # `labels` in --options (as before --labels existed) is the same argument: one value only.
    if args.labels is not None:
        if options.setdefault("labels", args.labels) != args.labels:
            raise ValueError(f"--labels {args.labels} and --options labels {options['labels']} "
                             "differ: give the dataset's labels once")
    posts = ingest(args.format, args.input, dataset=args.dataset, **options)
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


def cmd_reduce_embeddings(args):
    from .reduce import reduce_embeddings

    reduce_embeddings(args.embeddings, args.output, args.method, args.dimension, args.seed)


def json_object(text: str) -> dict:
    value = json_arg(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object {{...}}, got {text}")
    return value


def json_labels(text: str) -> list[str]:
    value = json_arg(text)
    if not isinstance(value, list) or not value or not all(isinstance(x, str) for x in value):
        raise argparse.ArgumentTypeError(f"expected a JSON list of class names, got {text}")
    return value


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each flag's default, except where there is none to show (a required flag; None,
    which the help text explains). Fills {formats} and {reader_options} from the readers when
    help is shown, so the lists follow their signatures and the command's start does not
    import them (~0.2 s)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "{formats}" in text or "{reader_options}" in text:
            from .ingest import READERS, options_help

            text = text.replace("{formats}", ", ".join(READERS))
            text = text.replace("{reader_options}", options_help().replace("%", "%%"))
        shown = action.option_strings and not action.required
        if not shown or action.default in (None, argparse.SUPPRESS):
            return text
        return text if "%(default)" in text else text + " (default: %(default)s)"


def register(sub) -> None:
    def parser(name, help):
        return sub.add_parser(name, help=help, description=help, formatter_class=HelpFormatter)

    p = parser("ingest", "read a raw corpus into the canonical post table")
    p.add_argument("--format", required=True, help="reader: {formats}")
    p.add_argument("--input", type=Path,
                   help="corpus file or folder (default: none, which only chitchat takes: "
                        "its packaged corpus)")
    p.add_argument("--output", required=True, type=Path, help="post table to write (.parquet)")
    p.add_argument("--dataset", help="value of the dataset column (default: the format)")
    p.add_argument("--labels", type=json_labels, metavar="JSON",
                   help="the dataset's class names as a JSON list, e.g. '[\"M\", \"R\"]': a "
                        "post labelled otherwise stops the ingest, naming its record (default: "
                        "any label)")
    p.add_argument("--options", type=json_object, default={}, metavar="JSON",
                   help="reader options as a JSON object (default: %(default)s); by format: "
                        "{reader_options}")
    p.set_defaults(func=cmd_ingest)

    p = parser("synthetic-lrs", "write the synthetic corpus in the RumourEval release layout")
    p.add_argument("--output", required=True, help="folder to write (absent or empty)")
    p.add_argument("--n-threads", type=int, default=40, help="number of threads (timelines)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the generator")
    p.set_defaults(func=cmd_synthetic_lrs)

    p = parser("windows", "window streams (indices + log-time gaps)")
    p.add_argument("--posts", required=True, help="post table (.parquet, from ingest)")
    p.add_argument("--window", required=True, type=int,
                   help="window size w: the current post and the up to w-1 posts before it")
    p.add_argument("--output", required=True, help="stream table to write (.parquet)")
    p.set_defaults(func=cmd_windows)

    p = parser("folds", "5 folds by timeline, train/dev/test")
    p.add_argument("--posts", required=True, help="post table (.parquet, from ingest)")
    p.add_argument("--output", required=True, help="fold table to write (.parquet)")
    p.add_argument("--n-folds", type=int, default=5, help="number of folds (test sets)")
    p.add_argument("--dev-ratio", type=float, default=0.25,
                   help="share of each fold's non-test timelines dealt to dev")
    p.add_argument("--seed", type=int, default=0, help="random seed of the dealing")
    p.set_defaults(func=cmd_folds)

    p = parser("embed", "SBERT embedding of every post (each distinct text once)")
    p.add_argument("--posts", required=True, help="post table (.parquet, from ingest)")
    p.add_argument("--output", required=True, help="embeddings to write (.npy, one row per post)")
    p.add_argument("--model", default="minilm",
                   help="sentence-transformers model: a path, or minilm (the packaged "
                        "all-MiniLM-L6-v2)")
    p.add_argument("--cache", help="vectors of texts seen before (.npz, read and updated): "
                                   "those are not encoded again (default: no cache)")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's own choice)")
    p.set_defaults(func=cmd_embed)

    p = parser("reduce-embeddings",
               "append a low-dimensional reduction of the embeddings (the authors' SWNU path input)")
    p.add_argument("--embeddings", required=True, help="embeddings to reduce (.npy, one row per post; from embed)")
    p.add_argument("--method", default="umap", choices=["umap"],
                   help="reduction, fitted on every post (test posts too, as sig-networks does); "
                        "umap needs the optional extra: pip install -e .[umap]")
    p.add_argument("--dimension", type=int, default=15, help="dimensions of the reduction")
    p.add_argument("--seed", type=int, default=42, help="the reduction's random_state")
    p.add_argument("--output", required=True,
                   help="embeddings with the reduction appended as the last columns to write (.npy)")
    p.set_defaults(func=cmd_reduce_embeddings)
