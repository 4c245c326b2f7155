"""Subcommand of the serving stage: predict (score a live stream with a trained TempoFormer)."""

from __future__ import annotations

import argparse


MAX_TIMELINES = 10_000  # timelines `predict` keeps at most (about 0.5 GB with MiniLM at window 5)
REFUSED_STATUS = 3  # exit status of a stream that ended with lines refused


def cmd_predict(args) -> int:
    from .predict import run

    return run(args)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--model", required=True, help="a run's model/ folder (written by training)")
    parser.add_argument("--input", default="-", help="JSONL posts in arrival order; - = stdin")
    parser.add_argument("--threads", type=_positive, help="torch threads (default: torch's own choice)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda if available)")
    parser.add_argument("--strict", action="store_true",
                        help="stop at the first bad line (default: report it on stderr, go on, exit with "
                             f"status {REFUSED_STATUS})")
    parser.add_argument("--max-timelines", type=_positive, default=MAX_TIMELINES,
                        help="timelines kept at most; a new one beyond evicts the least recently seen")
    parser.add_argument("--earliest-timestamp",
                        help="earliest accepted timestamp, as ingest's reader option (ISO 8601; none: no bound; "
                             "default the Unix epoch)")
    parser.add_argument("--latest-timestamp",
                        help="latest accepted timestamp, as ingest's reader option (ISO 8601; now: now plus one "
                             "day; none: no bound; default now)")
    return parser


def register(sub) -> None:
    p = sub.add_parser("predict", formatter_class=argparse.ArgumentDefaultsHelpFormatter, help="score a stream of JSON posts (one per line) with a trained TempoFormer")
    add_arguments(p)
    p.set_defaults(func=cmd_predict)
