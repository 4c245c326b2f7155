"""Subcommand of the serving stage: predict (score a live stream with a trained TempoFormer)."""

from __future__ import annotations

import argparse
import sys


def cmd_predict(args):
    from .predict import predict_file

    predict_file(args.model, args.input, sys.stdout, device=args.device, threads=args.threads)


def register(sub) -> None:
    p = sub.add_parser("predict", formatter_class=argparse.ArgumentDefaultsHelpFormatter, help="score a stream of JSON posts (one per line) with a trained TempoFormer")
    p.add_argument("--model", required=True, help="a run's model/ folder (written by training)")
    p.add_argument("--input", default="-", help="JSONL posts in arrival order; - = stdin")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's own choice)")
    p.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda if available)")
    p.set_defaults(func=cmd_predict)
