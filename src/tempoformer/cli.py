"""`tempoformer` command: each stage registers its subcommands; the Snakemake rules call these.

Stages (one package each): data (ingest, synthetic-lrs, windows, folds, embed), training
(train), reporting (aggregate, table1, diversity, table5, grid-report), serving (predict),
semantic_change (semantic-change-*), dcwe (dcwe-*), future_lm (future-lm-*).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .data import cli as data_cli
from .dcwe import cli as dcwe_cli
from .errors import InputError
from .future_lm import cli as future_lm_cli
from .reporting import cli as reporting_cli
from .semantic_change import cli as semantic_change_cli
from .serving import cli as serving_cli
from .training import cli as training_cli

STAGES = (data_cli, training_cli, reporting_cli, serving_cli, semantic_change_cli, dcwe_cli, future_lm_cli)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tempoformer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for stage in STAGES:
        stage.register(sub)
    return parser


def quiet_waiting_threads() -> None:
    """OpenMP threads sleep instead of spinning while they wait (unless the user chose): on a
    shared machine a spinning thread waits on a partner that is not scheduled, and the packed
    TempoFormer step ran 2x instead of 9-18x faster than the naive one (bench/tempoformer.py).
    How threads wait changes no number. Must run before torch is imported."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def main(argv: list[str] | None = None) -> int:
    quiet_waiting_threads()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        status = args.func(args)
    except (InputError, OSError, ValueError) as error:  # OSError: a missing file, a full disk (DiskFull)
        print(f"tempoformer {args.command}: error: {error}", file=sys.stderr)
        return 1
    return status if type(status) is int else 0  # a subcommand may return its exit status


if __name__ == "__main__":
    sys.exit(main())
