"""Entry points of the semantic change stage: plain functions (run_*) and their subcommands.

`register` (called by the `tempoformer` command, src/tempoformer/cli.py) adds `semantic-change-synthetic`, `semantic-change-train`, `semantic-change-score` and
`semantic-change-tables`. Bad input raises InputError/ValueError, which tempoformer's main()
turns into an error message.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict
from pathlib import Path

from ..arguments import json_arg as _json
from ..atomic import write_text_atomic
from ..cli_common import job_setup
from .methods import METHODS

log = logging.getLogger(__name__)

ATTENTION_KEYS = ("time_norm", "form", "time_init_std")


def method_spec(method: str) -> dict:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; one of {sorted(METHODS)}")
    return METHODS[method]


def _spec(corpus, method: str, settings: dict):
    from .model import TemporalSpec

    m = method_spec(method)
    attention = dict(settings.get("attention") or {})
    unknown = set(attention) - set(ATTENTION_KEYS)
    if unknown:
        raise ValueError(f"unknown attention settings {sorted(unknown)}")
    return TemporalSpec(periods=corpus.periods, time=m["time"], prepend=m["prepend"],
                        doc_counts=corpus.doc_counts(), backbone=settings.get("backbone", "minilm"),
                        **attention)


def run_synthetic(output: str | os.PathLike, options: dict | None = None) -> Path:
    """Write the embedded graded-change corpus (synthetic.build_synthetic options) as a release."""
    from .synthetic import build_synthetic, write_release

    corpus = build_synthetic(**(options or {}))
    out = write_release(corpus, output)
    log.info("%s: %s sentences per period, graded truth %s", out,
             [len(s) for s in corpus.sentences], corpus.graded)
    return out


def run_train(data: dict, name: str, method: str, settings: dict, seed: int, output: str | os.PathLike,
              threads: int | None = None, device: str | None = None) -> dict:
    """Post-pretrain `method` on dataset `data` (a load_dataset spec); save the model to `output`."""
    from .data import load_dataset
    from .encoding import WordPieceEncoder
    from .model import build_model, count_parameters, save_model
    from .pretrain import MLMPretrainSettings, post_pretrain

    device = job_setup(threads, device)
    if not method_spec(method)["train"]:
        raise ValueError(f"method {method!r} is not post-pretrained: score it without a model")
    started = time.perf_counter()
    corpus = load_dataset(data, name)
    training = MLMPretrainSettings.from_dict(settings.get("training"))
    spec = _spec(corpus, method, settings)
    model, tokenizer, time_ids = build_model(spec.backbone, spec, seed=seed)
    encoder = WordPieceEncoder(tokenizer, training.max_length, time_ids)
    log.info("%s/%s seed %d: %d parameters (%d new), %d steps", name, method, seed,
             count_parameters(model), sum(p.numel() for n, p in model.named_parameters()
                                          if n in model.new_parameter_names()), training.steps)
    train_log = post_pretrain(model, encoder, corpus, training, seed, device)
    info = {"dataset": name, "method": method, "seed": seed, "train_seconds": time.perf_counter() - started,
            "train_log": train_log, "corpus": corpus.summary(), "params": count_parameters(model)}
    save_model(model.cpu(), output, info)
    log.info("saved %s (training %.1f s, mlm loss %.3f -> %.3f)", output, train_log["seconds"],
             train_log.get("first10_loss", float("nan")), train_log.get("last10_loss", float("nan")))
    return info


def run_score(data: dict, name: str, method: str, settings: dict, seed: int, out_dir: str | os.PathLike,
              model_path: str | os.PathLike | None = None, threads: int | None = None,
              device: str | None = None) -> dict:
    """Algorithm 1 for every target: out_dir/scores.csv and out_dir/metrics.json."""
    from .data import load_dataset
    from .encoding import WordPieceEncoder
    from .model import build_model, count_parameters, load_model
    from .scoring import ScoreSettings, change_scores, correlations

    device = job_setup(threads, device)
    started = time.perf_counter()
    corpus = load_dataset(data, name)
    scoring = ScoreSettings.from_dict(settings.get("scoring"))
    if scoring.sample_seed is None:
        scoring.sample_seed = seed
    info: dict = {}
    if model_path is not None:
        model, tokenizer, time_ids, info = load_model(model_path)
        if model.spec.periods != corpus.periods:
            raise ValueError(f"model {model_path} was trained on periods {model.spec.periods}, "
                             f"the corpus has {corpus.periods}")
    elif method_spec(method)["train"]:
        raise ValueError(f"method {method!r} needs a post-pretrained model (--model)")
    else:
        model, tokenizer, time_ids = build_model(settings.get("backbone", "minilm"),
                                                 _spec(corpus, method, settings), seed=seed)
    encoder = WordPieceEncoder(tokenizer, scoring.max_length, time_ids)
    scores = change_scores(model.to(device), encoder, corpus, scoring, device)
    result = correlations(scores)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    scores.write_csv(out / "scores.csv")
    train_log = info.get("train_log", {})
    metrics = {
        "dataset": name, "method": method, "seed": seed, **result,
        "params": count_parameters(model), "train_seconds": info.get("train_seconds", 0.0),
        "train_steps": train_log.get("steps", 0), "mlm_loss_first10": train_log.get("first10_loss"),
        "mlm_loss_last10": train_log.get("last10_loss"),
        "score_seconds": time.perf_counter() - started, "scoring": asdict(scoring),
        "time_diagnostics": model.time_diagnostics(),
        "training": train_log.get("settings"), "spec": asdict(model.spec),
        "unscored": scores.filter(scores["score"].is_null()).select("target", "problem").to_dicts(),
        "corpus": corpus.summary(),
    }
    write_text_atomic(out / "metrics.json", json.dumps(metrics, indent=1, default=str) + "\n")
    log.info("%s/%s seed %d: Pearson %s, Spearman %s over %d targets (%d unscored)", name, method, seed,
             result["pearson"], result["spearman"], result["n_scored"], result["n_unscored"])
    return metrics


def run_tables(metrics: list[str | os.PathLike], out_dir: str | os.PathLike, datasets: dict,
               backbone_label: str = "MiniLM-L6") -> dict:
    """Tables 2-4 (md + csv); datasets: {dataset name: paper column ('Eng', 'Lat', 'Ger') or None}."""
    from .tables import write_tables

    return write_tables(metrics, out_dir, datasets, backbone_label)


# --------------------------------------------------------------------------- argparse


def cmd_semantic_change_synthetic(a):
    run_synthetic(a.output, a.options)


def cmd_semantic_change_train(a):
    run_train(a.data, a.name, a.method, a.settings, a.seed, a.output, a.threads, a.device)


def cmd_semantic_change_score(a):
    run_score(a.data, a.name, a.method, a.settings, a.seed, a.out_dir, a.model, a.threads, a.device)


def cmd_semantic_change_tables(a):
    run_tables(a.metrics, a.out_dir, a.datasets, a.backbone_label)


def register(sub) -> None:
    """Add the semantic-change-* subcommands to an argparse subparsers object."""
    p = sub.add_parser("semantic-change-synthetic", help="write the embedded graded-change corpus (release layout)")
    p.add_argument("--output", required=True, help="folder to write")
    p.add_argument("--options", type=_json, default={}, help="build_synthetic options as JSON")
    p.set_defaults(func=cmd_semantic_change_synthetic)

    def common(p):
        p.add_argument("--data", type=_json, required=True, help="dataset spec as JSON (see load_dataset)")
        p.add_argument("--name", required=True, help="dataset name")
        p.add_argument("--method", required=True, choices=sorted(METHODS), help="how time enters the model")
        p.add_argument("--settings", type=_json, default={},
                       help='JSON {"backbone", "attention": {...}, "training": {...}, "scoring": {...}}')
        p.add_argument("--seed", type=int, required=True, help="seed of training and sampling")
        p.add_argument("--threads", type=int, help="torch threads")
        p.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda if available)")

    p = sub.add_parser("semantic-change-train", help="MLM post-pretraining with time (one method, one seed)")
    common(p)
    p.add_argument("--output", required=True, help="model file to write (model.pt)")
    p.set_defaults(func=cmd_semantic_change_train)

    p = sub.add_parser("semantic-change-score", help="change score per target, Pearson/Spearman vs truth")
    common(p)
    p.add_argument("--model", help="post-pretrained model.pt (methods that train)")
    p.add_argument("--out-dir", required=True, help="output folder")
    p.set_defaults(func=cmd_semantic_change_score)

    p = sub.add_parser("semantic-change-tables", help="Tables 2-4 of Rosin & Radinsky 2022, paper beside ours")
    p.add_argument("--metrics", nargs="+", required=True, help="every run's metrics.json")
    p.add_argument("--datasets", type=_json, required=True, help='JSON {"dataset": "Eng" | null}')
    p.add_argument("--backbone-label", default="MiniLM-L6", help="backbone name printed in the tables")
    p.add_argument("--out-dir", required=True, help="output folder")
    p.set_defaults(func=cmd_semantic_change_tables)
