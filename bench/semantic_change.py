"""Benchmark / real-data run: semantic change on SemEval-2020 English (or the embedded corpus).

For each method, in one process: build the model from the pretrained backbone (all-MiniLM-L6-v2),
post-pretrain it (`--steps` MLM steps of `--batch-size` sentences; none for `plain`), score every
target (Algorithm 1, `--n-sentences` per period) and write scores.csv + metrics.json under
OUT/<method>/seed<seed>/, then Tables 2-4 under OUT/tables/. Models are not saved. Wall times of
loading, training and scoring are measured per method and written to OUT/timings.json.

    python bench/semantic_change.py [--dataset semeval_eng|chitchat_graded]
        [--methods plain plain_mlm temporal_attention ...] [--steps 100] [--batch-size 16]
        [--max-length 128] [--n-sentences 100] [--last-layers all] [--seed 0] [--threads 2]
        [--out results/semantic_change/bench]

semeval_eng reads ../shared/data/semeval2020_task1 (small-corpora English sample, 37 targets).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# bench/tempoformer.py would shadow the package when this script runs from bench/.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
SHARED = REPO.parent / "shared" / "data" / "semeval2020_task1"
ALL_METHODS = ["plain", "plain_mlm", "temporal_attention", "scaled_linear", "scaled_exp", "scaled_doc",
               "prepend", "prepend_attention"]


def dataset_spec(name: str, workdir: Path) -> tuple[dict, str | None]:
    if name == "semeval_eng":
        return {"format": "small_corpora", "small_dir": str(SHARED / "derived_small-corpora-scd_downsampled"),
                "language": "english", "release": str(SHARED / "semeval2020_ulscd_eng"),
                "pos_tags": "strip"}, "Eng"
    if name == "chitchat_graded":
        from tempoformer.semantic_change.cli import run_synthetic

        path = workdir / "chitchat_graded_data"
        if not (path / "targets.txt").exists():
            run_synthetic(path, {"seed": 0})
        return {"format": "synthetic", "path": str(path)}, None
    raise SystemExit(f"unknown dataset {name}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="semeval_eng")
    parser.add_argument("--methods", nargs="+", default=ALL_METHODS)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--time-lr", type=float, default=1e-3)
    parser.add_argument("--n-sentences", type=int, default=100)
    parser.add_argument("--last-layers", default="all")
    parser.add_argument("--time-norm", default="sequence")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "results" / "semantic_change" / "bench")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch
    from transformers.utils import logging as hf_logging

    from tempoformer.semantic_change.cli import METHODS, _spec, _write_json
    from tempoformer.semantic_change.data import load_dataset
    from tempoformer.semantic_change.encoding import WordPieceEncoder
    from tempoformer.semantic_change.model import build_model, count_parameters
    from tempoformer.semantic_change.pretrain import MLMPretrainSettings, post_pretrain
    from tempoformer.semantic_change.scoring import ScoreSettings, change_scores, correlations
    from tempoformer.semantic_change.tables import write_tables

    hf_logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    data, column = dataset_spec(args.dataset, args.out)
    last_layers = args.last_layers if args.last_layers == "all" else int(args.last_layers)
    settings = {"backbone": "minilm", "attention": {"time_norm": args.time_norm},
                "training": {"steps": args.steps, "batch_size": args.batch_size, "max_length": args.max_length,
                             "lr": args.lr, "time_lr": args.time_lr},
                "scoring": {"n_sentences": args.n_sentences, "last_layers": last_layers, "max_length": 128,
                            "sample_seed": args.seed}}
    timings_path = args.out / "timings.json"
    timings = json.loads(timings_path.read_text()) if timings_path.exists() else {}
    t0 = time.perf_counter()
    corpus = load_dataset(data, args.dataset)
    load_seconds = time.perf_counter() - t0
    print(f"{args.dataset}: {corpus.summary()['sentences']} sentences, {len(corpus.targets)} targets, "
          f"read in {load_seconds:.1f} s", flush=True)
    for method in args.methods:
        started = time.perf_counter()
        spec = _spec(corpus, method, settings)
        model, tokenizer, time_ids = build_model("minilm", spec, seed=args.seed)
        training = MLMPretrainSettings.from_dict(settings["training"])
        train_log = {"steps": 0, "seconds": 0.0}
        if METHODS[method]["train"]:
            encoder = WordPieceEncoder(tokenizer, training.max_length, time_ids)
            train_log = post_pretrain(model, encoder, corpus, training, args.seed)
        scoring = ScoreSettings.from_dict(settings["scoring"])
        encoder = WordPieceEncoder(tokenizer, scoring.max_length, time_ids)
        score_started = time.perf_counter()
        scores = change_scores(model, encoder, corpus, scoring)
        result = correlations(scores)
        score_seconds = time.perf_counter() - score_started
        out = args.out / method / f"seed{args.seed}"
        out.mkdir(parents=True, exist_ok=True)
        scores.write_csv(out / "scores.csv")
        metrics = {"dataset": args.dataset, "method": method, "seed": args.seed, **result,
                   "params": count_parameters(model), "train_seconds": train_log["seconds"],
                   "train_steps": train_log["steps"], "mlm_loss_first10": train_log.get("first10_loss"),
                   "mlm_loss_last10": train_log.get("last10_loss"), "score_seconds": score_seconds,
                   "total_seconds": time.perf_counter() - started, "scoring": asdict(scoring),
                   "time_diagnostics": model.time_diagnostics(),
                   "training": asdict(training) if METHODS[method]["train"] else None, "spec": asdict(spec)}
        _write_json(out / "metrics.json", metrics)
        timings[f"{method}/seed{args.seed}"] = {k: metrics[k] for k in ("train_seconds", "score_seconds", "total_seconds",
                                                   "train_steps", "params")}
        timings[f"{method}/seed{args.seed}"]["load_average"] = os.getloadavg()
        _write_json(timings_path, timings)
        print(f"{method}: r={result['pearson']} rho={result['spearman']} scored={result['n_scored']} "
              f"unscored={result['n_unscored']} train {train_log['seconds']:.0f} s score {score_seconds:.0f} s "
              f"loss {train_log.get('first10_loss')} -> {train_log.get('last10_loss')}", flush=True)
        del model
    paths = sorted(args.out.glob("*/seed*/metrics.json"))
    write_tables(paths, args.out / "tables", {args.dataset: column})
    print((args.out / "tables" / "table2.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
