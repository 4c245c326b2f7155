"""`tempoformer` command: each stage registers its subcommands; the Snakemake rules call these.

Stages (one package each): data (ingest, synthetic-lrs, windows, folds, embed), training
(train), reporting (aggregate, table1, diversity, table5, grid-report), serving (predict),
semantic_change (semantic-change-*).
"""

from __future__ import annotations

import argparse
import logging
import sys

from .data import cli as data_cli
from .errors import InputError
from .reporting import cli as reporting_cli
from .semantic_change import cli as semantic_change_cli
from .serving import cli as serving_cli
from .training import cli as training_cli

STAGES = (data_cli, training_cli, reporting_cli, serving_cli, semantic_change_cli)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tempoformer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for stage in STAGES:
        stage.register(sub)
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
