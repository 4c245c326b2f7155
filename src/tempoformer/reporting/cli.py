"""Subcommands of the reporting stage: aggregate (Tables 2, 3, 4, 6, 11, Figure 3, coverage),
causes (issue 68's cause-by-cause table), table1, diversity, table5, grid-report."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..arguments import json_arg


def cmd_aggregate(args):
    from .aggregate import aggregate
    from .tables import datasets_from_spec

    from .significance import Bootstrap

    aggregate(args.metrics, datasets_from_spec(args.datasets), args.out_dir, args.figures_dir,
              Bootstrap(args.resamples, args.bootstrap_seed, args.bootstrap_unit), args.backbones)


def cmd_causes(args):
    # its own subcommand (the aggregate rule runs it after `aggregate` when the config has a
    # `causes:` section), so that the code digest of `aggregate` stays as it is
    from .causes import write_causes
    from .significance import Bootstrap
    from .tables import datasets_from_spec

    write_causes(args.metrics, datasets_from_spec(args.datasets), args.causes, args.out_dir, args.backbones,
                 Bootstrap(args.resamples, args.bootstrap_seed, args.bootstrap_unit))


def cmd_table1(args):
    from .dataset_tables import write_table1

    if len(args.posts) != len(args.names):
        raise ValueError("give one --names entry per --posts file")
    write_table1(dict(zip(args.names, args.posts)), args.minority, args.paper_columns, args.out_dir)


def cmd_diversity(args):
    from ..device import set_threads
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


def register(sub) -> None:
    p = sub.add_parser("aggregate", formatter_class=argparse.ArgumentDefaultsHelpFormatter, help="Tables 2, 3, 4, 6, 11, Figure 3 and the coverage table from finished runs")
    p.add_argument("--metrics", nargs="+", required=True, help="every run's metrics.json")
    p.add_argument("--datasets", type=json_arg, required=True,
                   help='{"dataset": {"labels": [...], "paper_column": "LRS" | null}, ...}')
    p.add_argument("--out-dir", required=True, help="tables folder")
    p.add_argument("--figures-dir", help="figures folder (Figure 3); none: no figure")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the significance test")
    p.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap resamples")
    p.add_argument("--backbones", type=json_arg, default={},
                   help="model entry -> the backbone its runs used, as JSON (the workflow passes each transformer "
                        "entry's params.backbone): rows say which, never 'BERT' for another model")
    p.add_argument("--bootstrap-unit", choices=("timeline", "post"), default="timeline",
                   help="what a resample draws: whole timelines, each keeping its posts (posts in a timeline "
                        "are not independent), or single posts")
    p.set_defaults(func=cmd_aggregate)

    p = sub.add_parser("causes", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                       help="the cause-by-cause table (issue 68): the reference, each factor entry and the best baseline")
    p.add_argument("--metrics", nargs="*", default=[], help="metrics.json of the runs of the reference, factors and baselines")
    p.add_argument("--datasets", type=json_arg, required=True,
                   help='{"dataset": {"labels": [...], "paper_column": "LRS" | null}, ...}')
    p.add_argument("--causes", type=json_arg, required=True,
                   help='the config\'s causes section as JSON: {"reference": model, "baselines": [models], '
                        '"factors": {model: "what it changes"}}')
    p.add_argument("--backbones", type=json_arg, default={},
                   help="model entry -> its config backbone (params.backbone, default minilm), for runs that "
                        "recorded none")
    p.add_argument("--out-dir", required=True, help="tables folder")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the significance test")
    p.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap resamples")
    p.add_argument("--bootstrap-unit", choices=("timeline", "post"), default="timeline",
                   help="what a resample draws: whole timelines, each keeping its posts, or single posts")
    p.set_defaults(func=cmd_causes)

    p = sub.add_parser("table1", formatter_class=argparse.ArgumentDefaultsHelpFormatter, help="dataset statistics (the paper's Table 1)")
    p.add_argument("--posts", nargs="+", required=True, help="posts.parquet of each dataset")
    p.add_argument("--names", nargs="+", required=True, help="dataset name of each posts file")
    p.add_argument("--minority", type=json_arg, required=True, help='{"dataset": [minority labels]}')
    p.add_argument("--paper-columns", type=json_arg, default={}, help='{"dataset": "LRS" | null}')
    p.add_argument("--out-dir", required=True, help="tables folder")
    p.set_defaults(func=cmd_table1)

    p = sub.add_parser("diversity", formatter_class=argparse.ArgumentDefaultsHelpFormatter, help="one dataset's diversity: BERTScore, SBERT cosine, outlier (Table 5)")
    p.add_argument("--posts", required=True, help="the dataset's posts.parquet")
    p.add_argument("--embeddings", required=True, help="the dataset's sbert.npy")
    p.add_argument("--folds", required=True, help="the dataset's folds.parquet")
    p.add_argument("--output", required=True, help="JSON file")
    p.add_argument("--backbone", default="minilm", help="BERT model of BERTScore")
    p.add_argument("--layer", type=int, default=5, help="hidden layer of BERTScore's token vectors")
    p.add_argument("--max-pairs", type=int, default=1000, help="post pairs of BERTScore (all if fewer)")
    p.add_argument("--max-tokens", type=int, default=128, help="tokens kept per post")
    p.add_argument("--seed", type=int, default=0, help="seed of the pair sample")
    p.add_argument("--threads", type=int, help="torch threads")
    p.set_defaults(func=cmd_diversity)

    p = sub.add_parser("table5", formatter_class=argparse.ArgumentDefaultsHelpFormatter, help="dataset diversity (the paper's Table 5)")
    p.add_argument("--diversity", nargs="+", required=True, help="diversity JSON files")
    p.add_argument("--names", nargs="+", required=True, help="dataset name of each file")
    p.add_argument("--paper-columns", type=json_arg, default={}, help='{"dataset": "LRS" | null}')
    p.add_argument("--out-dir", required=True, help="tables folder")
    p.set_defaults(func=cmd_table5)

    p = sub.add_parser("grid-report", formatter_class=argparse.ArgumentDefaultsHelpFormatter, help="record of grid searches: every point's dev macro-F1 (Markdown)")
    p.add_argument("--metrics", nargs="+", type=Path, required=True, help="metrics.json of grid-searched runs")
    p.add_argument("--title", required=True, help="the record's heading")
    p.add_argument("--intro", default="", help="a paragraph under the title")
    p.add_argument("--out", type=Path, required=True, help="Markdown file to write")
    p.set_defaults(func=cmd_grid_report)
