"""`tempoformer` command: one subcommand per pipeline stage; the Snakemake rules call these."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from .posts import InputError


def _json(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON: {error}") from None


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
    from .device import set_threads
    from .embed import embed_posts

    set_threads(args.threads)
    embed_posts(args.posts, args.output, args.model, args.cache)


def cmd_train(args):
    from .train import run_training

    metrics = run_training(
        args.posts, args.folds, args.out_dir, args.model, args.params, args.labels, args.window,
        args.fold, args.seed, args.streams, args.embeddings, args.threads, args.device, args.type,
    )
    logging.info("test macro-F1 %.4f (dev %.4f) in %.1f s", metrics["test"]["macro"],
                 metrics["dev_macro"], metrics["seconds"])


def cmd_aggregate(args):
    from .tables import aggregate, datasets_from_spec

    aggregate(args.metrics, datasets_from_spec(args.datasets), args.out_dir, args.figures_dir,
              resamples=args.resamples, seed=args.bootstrap_seed)


def cmd_table1(args):
    from .dataset_tables import write_table1

    if len(args.posts) != len(args.names):
        raise ValueError("give one --names entry per --posts file")
    write_table1(dict(zip(args.names, args.posts)), args.minority, args.paper_columns, args.out_dir)


def cmd_diversity(args):
    from .device import set_threads
    from .diversity import write_diversity

    set_threads(args.threads)
    write_diversity(args.output, posts_path=args.posts, embeddings_path=args.embeddings,
                    folds_path=args.folds, backbone=args.backbone, layer=args.layer,
                    max_pairs=args.max_pairs, max_tokens=args.max_tokens, seed=args.seed)


def cmd_table5(args):
    from .dataset_tables import write_table5

    if len(args.diversity) != len(args.names):
        raise ValueError("give one --names entry per --diversity file")
    write_table5(dict(zip(args.names, args.diversity)), args.paper_columns, args.out_dir)


def cmd_grid_report(args):
    from .grid_report import write_grid_report

    write_grid_report(args.metrics, args.out, args.title, args.intro)


def cmd_predict(args):
    from .predict import predict_file

    predict_file(args.model, args.input, sys.stdout, device=args.device, threads=args.threads)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tempoformer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="read a raw corpus into the canonical post table")
    p.add_argument("--format", required=True, help="chitchat, lrs, topic_shift_mi, talklife, generic")
    p.add_argument("--input", type=Path, help="corpus file or folder (chitchat: optional)")
    p.add_argument("--output", required=True, type=Path)
    p.add_argument("--dataset", help="value of the dataset column (default: the format)")
    p.add_argument("--options", type=_json, default={}, help="reader options as JSON")
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

    p = sub.add_parser("train", help="train and test one (model, window, fold, seed)")
    p.add_argument("--posts", required=True)
    p.add_argument("--folds", required=True)
    p.add_argument("--streams")
    p.add_argument("--embeddings")
    p.add_argument("--model", required=True, help="the model's name in the config")
    p.add_argument("--type", help="model type (default: the name): random, ffn_history, bilstm, "
                   "swnu, seqsignet, tempoformer, bert, roberta, llm")
    p.add_argument("--params", type=_json, default={}, help="model settings and grid as JSON")
    p.add_argument("--labels", type=_json, required=True, help="class names as a JSON list")
    p.add_argument("--window", type=int, required=True)
    p.add_argument("--fold", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--threads", type=int)
    p.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda if available)")
    p.add_argument("--out-dir", required=True)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("predict", help="score a stream of JSON posts (one per line) with a trained TempoFormer")
    p.add_argument("--model", required=True, help="a run's model/ folder (written by training)")
    p.add_argument("--input", default="-", help="JSONL posts in arrival order; - = stdin")
    p.add_argument("--threads", type=int)
    p.add_argument("--device")
    p.set_defaults(func=cmd_predict)

    # Tables and figures: one subcommand per table-producing rule.
    p = sub.add_parser("aggregate", help="Tables 2, 3, 4, 6, 11 and Figure 3 from finished runs")
    p.add_argument("--metrics", nargs="+", required=True)
    p.add_argument("--datasets", type=_json, required=True,
                   help='{"dataset": {"labels": [...], "paper_column": "LRS" | null}, ...}')
    p.add_argument("--out-dir", required=True, help="tables folder")
    p.add_argument("--figures-dir", help="figures folder (Figure 3); none: no figure")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the significance test")
    p.add_argument("--bootstrap-seed", type=int, default=0)
    p.set_defaults(func=cmd_aggregate)

    p = sub.add_parser("table1", help="dataset statistics (the paper's Table 1)")
    p.add_argument("--posts", nargs="+", required=True)
    p.add_argument("--names", nargs="+", required=True, help="dataset name of each posts file")
    p.add_argument("--minority", type=_json, required=True, help='{"dataset": [minority labels]}')
    p.add_argument("--paper-columns", type=_json, default={}, help='{"dataset": "LRS" | null}')
    p.add_argument("--out-dir", required=True)
    p.set_defaults(func=cmd_table1)

    p = sub.add_parser("diversity", help="one dataset's diversity: BERTScore, SBERT cosine, outlier (Table 5)")
    p.add_argument("--posts", required=True)
    p.add_argument("--embeddings", required=True, help="the dataset's sbert.npy")
    p.add_argument("--folds", required=True)
    p.add_argument("--output", required=True, help="JSON file")
    p.add_argument("--backbone", default="minilm", help="BERT model of BERTScore")
    p.add_argument("--layer", type=int, default=5, help="hidden layer of BERTScore's token vectors")
    p.add_argument("--max-pairs", type=int, default=1000, help="post pairs of BERTScore (all if fewer)")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--seed", type=int, default=0, help="seed of the pair sample")
    p.add_argument("--threads", type=int)
    p.set_defaults(func=cmd_diversity)

    p = sub.add_parser("table5", help="dataset diversity (the paper's Table 5)")
    p.add_argument("--diversity", nargs="+", required=True, help="diversity JSON files")
    p.add_argument("--names", nargs="+", required=True, help="dataset name of each file")
    p.add_argument("--paper-columns", type=_json, default={}, help='{"dataset": "LRS" | null}')
    p.add_argument("--out-dir", required=True)
    p.set_defaults(func=cmd_table5)

    p = sub.add_parser("grid-report", help="record of grid searches: every point's dev macro-F1 (Markdown)")
    p.add_argument("--metrics", nargs="+", type=Path, required=True, help="metrics.json of grid-searched runs")
    p.add_argument("--title", required=True)
    p.add_argument("--intro", default="", help="a paragraph under the title")
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(func=cmd_grid_report)

    from .semantic_change.cli import register as register_semantic_change

    register_semantic_change(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (InputError, FileNotFoundError, ValueError) as error:
        print(f"tempoformer {args.command}: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
