"""Subcommand of the serving stage: predict (score a live stream with a trained TempoFormer)."""

from __future__ import annotations

import sys


def cmd_predict(args):
    from .predict import predict_file

    predict_file(args.model, args.input, sys.stdout, device=args.device, threads=args.threads)


def register(sub) -> None:
    p = sub.add_parser("predict", help="score a stream of JSON posts (one per line) with a trained TempoFormer")
    p.add_argument("--model", required=True, help="a run's model/ folder (written by training)")
    p.add_argument("--input", default="-", help="JSONL posts in arrival order; - = stdin")
    p.add_argument("--threads", type=int)
    p.add_argument("--device")
    p.set_defaults(func=cmd_predict)
