"""Entry points of the DCWE stage: plain functions (run_*) and their subcommands.

`register` (called by the `tempoformer` command, src/tempoformer/cli.py) adds `dcwe-data`,
`dcwe-node2vec`, `dcwe-vectors`, `dcwe-warmup`, `dcwe-train`, `dcwe-extrapolate`,
`dcwe-diffusion`, `dcwe-sentiment` and `dcwe-tables`. Bad input raises
InputError/ValueError, which tempoformer's main() turns into an error message; outputs are
written atomically, so a failed job leaves none.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from pathlib import Path

from ..arguments import json_arg as _json
from ..artefacts import load_npy
from ..atomic import write_text_atomic, write_with
from ..backbones import backbone_path
from ..cli_common import job_setup

log = logging.getLogger(__name__)

SETTING_SECTIONS = ("backbone", "max_length", "model", "node2vec", "warmup", "training", "sentiment", "evaluation",
                    "diffusion")


def _check_settings(settings: dict) -> dict:
    unknown = set(settings) - set(SETTING_SECTIONS)
    if unknown:
        raise ValueError(f"unknown dcwe settings {sorted(unknown)}; known: {SETTING_SECTIONS}")
    return settings


def _tokenizer(backbone: str):
    from ..semantic_change.model import load_tokenizer

    return load_tokenizer(backbone)


def piece_counts(texts: list[str], backbone: str) -> list[int]:
    """Word pieces of each text, [CLS] and [SEP] included. Read with the `tokenizers` library from
    the backbone folder's tokenizer.json (what transformers' fast tokenizer runs; truncation and
    padding off: the same ids for MiniLM, tested), so the data job imports neither torch nor
    transformers; with transformers' tokenizer where there is no such file (a hub name)."""
    folder = backbone_path(backbone)
    if (Path(folder) / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return [len(e.ids) for e in tokenizer.encode_batch(texts)]
    return [len(p) for p in _tokenizer(backbone)(texts, add_special_tokens=True)["input_ids"]]


def corpus_stats(corpus, backbone: str = "minilm") -> dict:
    """Table 1 row: |D|, mean words and pieces per text, graph statistics, |T|, documents per time."""
    import numpy as np

    from .graph import graph_stats

    texts = corpus.docs["text"].to_list()
    pieces = piece_counts(texts, backbone)
    counts = corpus.docs.group_by("time").len().sort("time")["len"].to_list()
    return {"dataset": corpus.name, "documents": corpus.docs.height,
            "mean_words": float(np.mean([len(t.split()) for t in texts])),
            "mean_pieces": float(np.mean(pieces)),
            "pieces": int(sum(pieces)), **graph_stats(len(corpus.units), corpus.edges, corpus.directed),
            "times": len(corpus.periods), "first_time": corpus.periods[0], "last_time": corpus.periods[-1],
            "documents_per_time": counts,
            "splits": {s: int(corpus.docs.filter(corpus.docs["split"] == s).height) for s in ("train", "dev", "test")}}


def run_data(data: dict, name: str, out_dir: str | os.PathLike, backbone: str = "minilm") -> dict:
    """Read/build a corpus; write out_dir/docs.parquet and out_dir/corpus.json (with Table 1 stats)."""
    from .data import load_corpus, save_corpus

    corpus = load_corpus(data, name)
    stats = corpus_stats(corpus, backbone)
    save_corpus(corpus, out_dir, stats)
    log.info("%s: %d documents, %d units, %d edges, %d time units %s", name, stats["documents"], stats["units"],
             stats["edges"], stats["times"], stats["documents_per_time"])
    return stats


def run_node2vec(corpus_dir: str | os.PathLike, settings: dict, seed: int, output: str | os.PathLike) -> Path:
    """node2vec vectors of the corpus's units (output: .npy, one row per unit)."""
    import numpy as np

    from ..device import set_threads
    from .data import read_corpus
    from .graph import Node2VecSettings, node2vec

    set_threads(1)  # small sparse updates: one thread (and no transformers import)
    corpus, _ = read_corpus(corpus_dir)
    vectors = node2vec(len(corpus.units), corpus.edges, Node2VecSettings.from_dict(settings), seed, corpus.directed)
    return write_with(output, lambda tmp: np.save(tmp, vectors), suffix=".npy")


def run_vectors(corpus_dir: str | os.PathLike, vectors_file: str | os.PathLike, output: str | os.PathLike) -> Path:
    """Precomputed node vectors (the authors' {name}_vectors_50.txt, word2vec text format) of the
    corpus's units, in unit order (output: .npy, as dcwe-node2vec writes)."""
    import numpy as np

    from .data import read_corpus, read_vectors

    corpus, _ = read_corpus(corpus_dir)
    vectors = read_vectors(vectors_file, corpus.units)
    return write_with(output, lambda tmp: np.save(tmp, vectors), suffix=".npy")


def _docs(corpus, tokenizer, split: str, max_length: int):
    from .train import encode_docs

    return encode_docs(tokenizer, corpus.split(split), max_length)


def run_warmup(corpus_dir: str | os.PathLike, settings: dict, seed: int, output: str | os.PathLike,
               threads: int | None = None, device: str | None = None, holdout_last: bool = False) -> dict:
    """The shared warm-up: CWE MLM fine-tuning from the pretrained backbone with a new MLM head.
    holdout_last: without the last time unit's documents (the extrapolation test's warm-up)."""
    from .data import read_corpus
    from .extrapolation import split_last_time
    from .model import DcweModel, DcweSpec, load_bert, save_model
    from .train import DCWETrainSettings, train_mlm

    device = job_setup(threads, device)
    settings = _check_settings(settings)
    corpus, _ = read_corpus(corpus_dir)
    if holdout_last:
        corpus, _ = split_last_time(corpus)
    backbone = settings.get("backbone", "minilm")
    tokenizer = _tokenizer(backbone)
    spec = DcweSpec(mode="cwe", n_times=len(corpus.periods), backbone=backbone)
    model = DcweModel(load_bert(backbone), spec, [], seed=seed)
    train_log = train_mlm(model, _docs(corpus, tokenizer, "train", settings.get("max_length", 128)), tokenizer,
                          DCWETrainSettings.from_dict(settings.get("warmup")), seed, device, warmup=True)
    info = {"dataset": corpus.name, "seed": seed, "holdout_last": holdout_last, "train_log": train_log}
    save_model(model.cpu(), output, info)
    log.info("warm-up %s seed %d: %d steps, mlm %.3f -> %.3f (%.1f s)", corpus.name, seed, train_log["steps"],
             train_log["first10_mlm"] or float("nan"), train_log["last10_mlm"] or float("nan"), train_log["seconds"])
    return info


def selected_point(metric_paths: list[str], task: str) -> dict:
    """The grid point with the best dev metric among finished runs of one (dataset, variant, seed)
    (tables.select_runs: per-epoch best, then the best point): its lr and lambda_a, for a run of
    another seed at that point."""
    from .tables import load_runs, select_runs

    runs = load_runs(metric_paths)
    if not runs:
        raise ValueError("--select-from names no run")
    chosen = select_runs(runs, task)
    if len(chosen) != 1:
        raise ValueError("--select-from names runs of several datasets, variants or seeds: "
                         + ", ".join(sorted({f"{r['dataset']}/{r['variant']}/seed{r['seed']}" for r in runs})))
    best = chosen[0]
    return {"lr": best["lr"], "lambda_a": best["lambda_a"], "seed": best["seed"], "run": str(best["_dir"]),
            "dev": best["dev"], "best_epoch": best.get("best_epoch"), "candidates": len(runs)}


def _with_point(section: dict | None, select_from: list[str] | None, task: str) -> tuple[dict, dict | None]:
    """A training section with lr and lambda_a of the point chosen on another seed's grid."""
    section = dict(section or {})
    if not select_from:
        return section, None
    chosen = selected_point(select_from, task)
    section.update(lr=chosen["lr"], lambda_a=chosen["lambda_a"])
    return section, chosen


def _identity(*paths) -> list:
    """Size and mtime of a run's input files: a checkpoint made from other inputs is not resumed."""
    return [[str(p), os.stat(p).st_size, os.stat(p).st_mtime_ns] for p in paths if p]


def _variant_inputs(corpus, variant: str, settings: dict, vectors):
    """What a variant's model needs: (spec, social vectors, edge index, tokenizer, dynamic token ids)."""
    import numpy as np
    import torch

    from .model import VARIANTS, DcweSpec
    from .vocab import dynamic_token_ids

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {sorted(VARIANTS)}")
    backbone = settings.get("backbone", "minilm")
    model_settings = dict(settings.get("model") or {})
    top_k, min_id = model_settings.pop("top_words", 100_000), model_settings.pop("min_id", 2100)
    spec = DcweSpec(mode=VARIANTS[variant], n_times=len(corpus.periods), n_units=len(corpus.units),
                    backbone=backbone, **model_settings)
    if spec.social and not corpus.has_social:
        raise ValueError(f"variant {variant} needs social units, but {corpus.name} has one unit (a time-only corpus)")
    social = edge_index = None
    if spec.social:
        if vectors is None:
            raise ValueError(f"variant {variant} needs the node2vec vectors (--vectors)")
        social = torch.from_numpy(load_npy(vectors))
        edge_index = torch.from_numpy(corpus.edge_index())
    tokenizer = _tokenizer(backbone)
    train = corpus.split("train")
    dynamic_ids = dynamic_token_ids(train["text"], train["time"], tokenizer.get_vocab(), top_k, min_id) \
        if spec.mode != "cwe" else []
    return spec, social, edge_index, tokenizer, dynamic_ids


def _train_variant(corpus, corpus_dir, warmup, variant: str, settings: dict, seed: int, vectors, device: str,
                   out: Path, select_from: list[str] | None):
    """Build a variant from the warm-up and train it (per-epoch dev selection, resumable from
    out/checkpoint.pt). Returns (model, spec, tokenizer, dynamic ids, training settings, train
    log, dev losses of the kept epoch, the point chosen on another seed or None)."""
    from .evaluate import document_losses, perplexity
    from .model import load_model
    from .train import DCWETrainSettings, train_mlm

    max_length = settings.get("max_length", 128)
    spec, social, edge_index, tokenizer, dynamic_ids = _variant_inputs(corpus, variant, settings, vectors)
    model, _ = load_model(warmup, spec, social, edge_index, dynamic_ids, seed)
    section, chosen = _with_point(settings.get("training"), select_from, "mlm")
    training = DCWETrainSettings.from_dict(section)
    evaluation = dict(settings.get("evaluation") or {})
    dev_docs = _docs(corpus, tokenizer, "dev", max_length)
    dev_frames = {}

    def dev_losses():
        return document_losses(model, dev_docs, tokenizer, seed, training.mlm_probability,
                               evaluation.get("batch_size", 32), device)

    def dev_perplexity(epoch: int) -> float:
        dev_frames[epoch] = dev_losses()
        return perplexity(dev_frames[epoch], "token")

    key = {"variant": variant, "settings": settings, "selected": chosen,
           "inputs": _identity(Path(corpus_dir) / "docs.parquet", warmup, vectors)}
    train_log = train_mlm(model, _docs(corpus, tokenizer, "train", max_length), tokenizer, training, seed, device,
                          evaluate=dev_perplexity if training.epochs else None, checkpoint=out / "checkpoint.pt",
                          key=key)
    dev_frame = None
    if train_log["best_epoch"] is not None:
        # the kept epoch's dev losses (evaluated again after a resume: the same masks, the same numbers)
        dev_frame = dev_frames.get(train_log["best_epoch"])
        if dev_frame is None:
            dev_frame = dev_losses()
    return model, spec, tokenizer, dynamic_ids, training, train_log, dev_frame, chosen


def _split_metrics(frame, evaluation: dict) -> dict:
    from .evaluate import perplexity

    return {"perplexity": perplexity(frame, "token"), "documents": frame.height, "masked": int(frame["n_masked"].sum()),
            "perplexity_batch_mean": perplexity(frame, "batch_mean", evaluation.get("authors_batch", 4))}


def _train_record(train_log: dict, training, chosen: dict | None) -> dict:
    return {"lr": training.lr, "lambda_a": training.lambda_a, "epochs": train_log["epochs"],
            "best_epoch": train_log["best_epoch"], "epochs_run": len(train_log["epochs"]),
            "stopped_early": train_log["stopped_early"], "train_steps": train_log["steps"],
            "max_steps": train_log["max_steps"], "selected_from": chosen,
            "mlm_first10": train_log["first10_mlm"], "mlm_last10": train_log["last10_mlm"]}


def run_train(corpus_dir: str | os.PathLike, warmup: str | os.PathLike, variant: str, settings: dict, seed: int,
              out_dir: str | os.PathLike, vectors: str | os.PathLike | None = None, threads: int | None = None,
              device: str | None = None, select_from: list[str] | None = None, fingerprint: str | None = None) -> dict:
    """Train one variant from the warm-up checkpoint, then evaluate it: out_dir/{model.pt,
    losses.parquet, metrics.json} (perplexities, sigma_sim, change scores where the corpus has targets).
    select_from: another seed's grid runs (metrics.json) of this variant: train at their best point.
    fingerprint: what the run is made from (the workflow's digest), recorded in metrics.json."""
    import polars as pl

    from ..semantic_change.scoring import correlations
    from ..training.lock import run_lock
    from .data import read_corpus
    from .evaluate import change_scores, document_losses, sigma_sim
    from .model import count_parameters, save_model

    device = job_setup(threads, device)
    settings = _check_settings(settings)
    started = time.perf_counter()
    corpus, _ = read_corpus(corpus_dir)
    max_length = settings.get("max_length", 128)
    evaluation = dict(settings.get("evaluation") or {})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with run_lock(out):  # one trainer per run folder (its checkpoint)
        model, spec, tokenizer, dynamic_ids, training, train_log, dev_frame, chosen = _train_variant(
            corpus, corpus_dir, warmup, variant, settings, seed, vectors, device, out, select_from)
        losses, metrics = [], {}
        for split in ("dev", "test"):
            frame = dev_frame if split == "dev" and dev_frame is not None else document_losses(
                model, _docs(corpus, tokenizer, split, max_length), tokenizer, seed, training.mlm_probability,
                evaluation.get("batch_size", 32), device)
            losses.append(frame.with_columns(pl.lit(split).alias("split")))
            metrics[split] = _split_metrics(frame, evaluation)
        model.cpu()
        sigma = []
        if spec.mode not in ("cwe", "static"):  # static: one offset per word, sigma_sim 0
            sigma = sigma_sim(model, _docs(corpus, tokenizer, "dev", max_length), tokenizer,
                              evaluation.get("sigma_top", 10), evaluation.get("sigma_min_contexts", 2),
                              corpus.periods, corpus.units, words=evaluation.get("sigma_words", "whole"))
        change = None
        if corpus.targets and spec.mode in ("full", "time_only"):
            scores = change_scores(model, tokenizer, corpus.targets, corpus.docs, len(corpus.periods), corpus.graded)
            change = {**correlations(scores), "unscored": scores.filter(pl.col("score").is_null())
                      .select("target", "problem").to_dicts()}
            write_with(out / "change_scores.csv", lambda tmp: scores.write_csv(tmp))
        save_model(model, out / "model.pt", {"dataset": corpus.name, "variant": variant, "seed": seed})
        write_with(out / "losses.parquet", lambda tmp: pl.concat(losses).write_parquet(tmp))
        result = {
            "dataset": corpus.name, "variant": variant, "mode": spec.mode, "seed": seed, **metrics,
            "params": count_parameters(model), "dynamic_params": count_parameters(model, model.dynamic_parameter_names()),
            "dynamic_vocabulary": len(dynamic_ids), "sigma_sim": sigma,
            "sigma_words": evaluation.get("sigma_words", "whole"), "change": change,
            **_train_record(train_log, training, chosen),
            "train_log": train_log, "spec": spec.__dict__, "seconds": time.perf_counter() - started,
            "fingerprint": fingerprint,
        }
        write_text_atomic(out / "metrics.json", json.dumps(result, indent=1, default=str) + "\n")
        (out / "checkpoint.pt").unlink(missing_ok=True)  # the run is done: its 3 x model-sized state goes
    log.info("%s/%s seed %d: perplexity dev %.4f test %.4f after %d epochs (best %s; %d dynamic tokens, %.1f s)",
             corpus.name, variant, seed, metrics["dev"]["perplexity"], metrics["test"]["perplexity"],
             len(train_log["epochs"]), train_log["best_epoch"], len(dynamic_ids), result["seconds"])
    return result


def run_extrapolate(corpus_dir: str | os.PathLike, warmup: str | os.PathLike, variant: str, settings: dict,
                    seed: int, out_dir: str | os.PathLike, vectors: str | os.PathLike | None = None,
                    threads: int | None = None, device: str | None = None,
                    select_from: list[str] | None = None, fingerprint: str | None = None) -> dict:
    """The held-out-month test (extrapolation.py): train a variant on the times before the last
    (warmup: a warm-up made without the last time), then score every document of the last time
    with the last trained component, and the in-time test documents. out_dir/{losses.parquet
    (split heldout | test), metrics.json}."""
    import polars as pl

    from ..training.lock import run_lock
    from .data import read_corpus
    from .evaluate import document_losses
    from .extrapolation import split_last_time
    from .model import count_parameters
    from .train import encode_docs

    device = job_setup(threads, device)
    settings = _check_settings(settings)
    started = time.perf_counter()
    full, _ = read_corpus(corpus_dir)
    corpus, held = split_last_time(full)
    max_length = settings.get("max_length", 128)
    evaluation = dict(settings.get("evaluation") or {})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with run_lock(out):
        model, spec, tokenizer, dynamic_ids, training, train_log, dev_frame, chosen = _train_variant(
            corpus, corpus_dir, warmup, variant, settings, seed, vectors, device, out, select_from)
        losses, metrics = [], {}
        for split, docs in (("heldout", encode_docs(tokenizer, held, max_length)),
                            ("test", _docs(corpus, tokenizer, "test", max_length))):
            frame = document_losses(model, docs, tokenizer, seed, training.mlm_probability,
                                    evaluation.get("batch_size", 32), device)
            losses.append(frame.with_columns(pl.lit(split).alias("split")))
            metrics[split] = _split_metrics(frame, evaluation)
        if dev_frame is not None:
            metrics["dev"] = _split_metrics(dev_frame, evaluation)
        write_with(out / "losses.parquet", lambda tmp: pl.concat(losses).write_parquet(tmp))
        result = {
            "dataset": full.name, "variant": variant, "mode": spec.mode, "seed": seed, "task": "extrapolation",
            "held_out_time": full.periods[-1], "trained_times": corpus.periods,
            "component_used": corpus.periods[-1] if spec.n_components > 1 else None, **metrics,
            "params": count_parameters(model), "dynamic_vocabulary": len(dynamic_ids),
            **_train_record(train_log, training, chosen), "train_log": train_log, "spec": spec.__dict__,
            "seconds": time.perf_counter() - started, "fingerprint": fingerprint,
        }
        write_text_atomic(out / "metrics.json", json.dumps(result, indent=1, default=str) + "\n")
        (out / "checkpoint.pt").unlink(missing_ok=True)
    log.info("%s/%s seed %d: held-out %s perplexity %.4f, in-time test %.4f (%.1f s)", full.name, variant, seed,
             full.periods[-1], metrics["heldout"]["perplexity"], metrics["test"]["perplexity"], result["seconds"])
    return result


def run_diffusion(corpus_dir: str | os.PathLike, runs: list[str], settings: dict, out_dir: str | os.PathLike,
                  figures: list[str] | None = None, vectors: str | os.PathLike | None = None,
                  threads: int | None = None, device: str | None = None, fingerprint: str | None = None) -> dict:
    """The diffusion analysis (diffusion.py; the paper's Figures 4-5) with the best dev point of
    `runs` (metrics.json of one variant and seed, model.pt beside each): out_dir/{diffusion.parquet,
    walk_flight.parquet, metrics.json}; figures: the Figure 4 and Figure 5 PNG files to write
    (unit positions from the node2vec `vectors`)."""
    import numpy as np
    import polars as pl

    from ..artefacts import load_npy
    from ..errors import InputError
    from .data import read_corpus
    from .diffusion import DiffusionSettings, analyse, figure4, figure5, layout
    from .model import load_model
    from .vocab import dynamic_token_ids

    device = job_setup(threads, device)
    settings = _check_settings(settings)
    corpus, _ = read_corpus(corpus_dir)
    if not corpus.has_social:
        raise ValueError(f"{corpus.name}: the diffusion analysis needs social units and a graph; it has one unit")
    chosen = selected_point(runs, "mlm")
    weights = Path(chosen["run"]) / "model.pt"
    if not weights.exists():  # weights are not committed: a run trained in another checkout has none here
        raise InputError(weights, f"the best dev point of {chosen['run']}", "no model.pt: run records are committed, "
                         "weights are not; delete the run's metrics.json (git keeps it) and run again to train it "
                         "here (the same seed, threads and kernels give the same model on CPU)")
    model, _ = load_model(weights)
    run = json.loads((Path(chosen["run"]) / "metrics.json").read_text())
    diffusion = DiffusionSettings.from_dict(settings.get("diffusion"))
    if not diffusion.pairs:
        raise ValueError("diffusion settings name no pair ([word, associate])")
    tokenizer = _tokenizer(model.spec.backbone)
    model_settings = dict(settings.get("model") or {})
    train = corpus.split("train")
    candidates = dynamic_token_ids(train["text"], train["time"], tokenizer.get_vocab(),
                                   model_settings.get("top_words", 100_000), model_settings.get("min_id", 2100))
    scores, walks, info = analyse(model, tokenizer, corpus.docs, candidates, corpus.edges, len(corpus.periods),
                                  diffusion, settings.get("max_length", 128), device, corpus.directed)
    scores = scores.with_columns(pl.col("unit").map_elements(lambda u: corpus.units[u], return_dtype=pl.String)
                                 .alias("unit_name"),
                                 pl.col("time").map_elements(lambda t: corpus.periods[t], return_dtype=pl.String)
                                 .alias("period"))
    walks = walks.with_columns(pl.col("time").map_elements(lambda t: corpus.periods[t], return_dtype=pl.String)
                               .alias("period"))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_with(out / "diffusion.parquet", lambda tmp: scores.write_parquet(tmp))
    write_with(out / "walk_flight.parquet", lambda tmp: walks.write_parquet(tmp))
    label = f"{corpus.name}, {run['variant']} (seed {run['seed']}, lr {chosen['lr']:g})"
    if figures:
        if len(figures) != 2:
            raise ValueError(f"--figures takes two PNG paths (Figure 4, Figure 5), got {len(figures)}")
        positions = layout(load_npy(vectors) if vectors else np.random.default_rng(0).normal(size=(len(corpus.units), 2)))
        figure4(scores, positions, corpus.edges, corpus.periods, diffusion.neighbours, figures[0],
                f"Figure 4 analogue: r̂ per unit and time, {label}")
        figure5(walks, corpus.periods, figures[1], f"Figure 5 analogue: walk vs flight, {label}")
    result = {"dataset": corpus.name, "variant": run["variant"], "seed": run["seed"], "task": "diffusion",
              "selected": chosen, "settings": dataclasses.asdict(diffusion), "pairs": info,
              "periods": corpus.periods, "fingerprint": fingerprint}
    write_text_atomic(out / "metrics.json", json.dumps(result, indent=1, default=str) + "\n")
    log.info("diffusion %s: %s", label, info)
    return result


def _labels(corpus, corpus_dir) -> None:
    """Every document of a sentiment corpus needs a label 0 or 1."""
    from ..errors import InputError

    bad = corpus.docs.filter(~corpus.docs["label"].is_in([0, 1]) | corpus.docs["label"].is_null())
    if bad.height:
        row = bad.row(0, named=True)
        raise InputError(Path(corpus_dir) / "docs.parquet", f"document {row['doc_id']}",
                         f"sentiment label {row['label']!r} is not 0 or 1 ({bad.height} such documents): "
                         "the sentiment task needs a label on every document")
    for split in ("train", "dev", "test"):
        if corpus.split(split).height == 0:
            raise InputError(Path(corpus_dir) / "docs.parquet", f"split {split}", "no document")


def run_sentiment(corpus_dir: str | os.PathLike, variant: str, settings: dict, seed: int, out_dir: str | os.PathLike,
                  vectors: str | os.PathLike | None = None, threads: int | None = None,
                  device: str | None = None, select_from: list[str] | None = None,
                  fingerprint: str | None = None) -> dict:
    """Train one variant as a sentiment classifier from the pretrained backbone (no MLM stage) and
    evaluate it: out_dir/predictions.parquet (doc_id, split, label, prob, pred) and metrics.json.
    select_from: another seed's grid runs of this variant: train at their best dev point."""
    import numpy as np
    import polars as pl

    from ..models.pooling import resolve_post_pooling, warn_if_untrained_pooler
    from ..training.lock import run_lock
    from .data import read_corpus
    from .model import DcweModel, count_parameters, load_bert
    from .metrics import classify, scores
    from .sentiment import SentimentModel, predict, split_settings, train_sentiment

    device = job_setup(threads, device)
    settings = _check_settings(settings)
    started = time.perf_counter()
    corpus, _ = read_corpus(corpus_dir)
    _labels(corpus, corpus_dir)
    classifier, training = split_settings(settings.get("sentiment"))
    chosen = selected_point(select_from, "sentiment") if select_from else None
    if chosen:
        training = dataclasses.replace(training, lr=chosen["lr"], lambda_a=chosen["lambda_a"])
    max_length = settings.get("max_length", 128)
    spec, social, edge_index, tokenizer, dynamic_ids = _variant_inputs(corpus, variant, settings, vectors)
    pooling = resolve_post_pooling(classifier.post_pooling, backbone_path(spec.backbone))
    bert = load_bert(spec.backbone, pooler=pooling == "cls_pooler")
    if pooling == "cls_pooler":
        warn_if_untrained_pooler(bert, spec.backbone, classifier.post_pooling)
    pooler = bert.pooler
    dcwe = DcweModel(bert, spec, dynamic_ids, social, edge_index, seed, mlm_head=False)
    model = SentimentModel(dcwe, pooling, pooler, classifier.hidden, classifier.head_dropout, seed)
    train = corpus.split("train")
    batch_size = (settings.get("evaluation") or {}).get("batch_size", 32)
    encoded = {split: _docs(corpus, tokenizer, split, max_length) for split in ("train", "dev", "test")}

    def dev_f1(epoch: int) -> float:
        probs = predict(model, encoded["dev"], tokenizer.pad_token_id, batch_size, device)
        return scores(corpus.split("dev")["label"].to_numpy(), classify(probs))["macro_f1"]

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    key = {"variant": variant, "settings": settings, "selected": chosen,
           "inputs": _identity(Path(corpus_dir) / "docs.parquet", vectors)}
    with run_lock(out):
        train_log = train_sentiment(model, encoded["train"], train["label"].to_numpy(), tokenizer.pad_token_id,
                                    training, seed, device, evaluate=dev_f1 if training.epochs else None,
                                    checkpoint=out / "checkpoint.pt", key=key)
    frames, metrics = [], {}
    for split in ("dev", "test"):
        docs = corpus.split(split)
        probs = predict(model, encoded[split], tokenizer.pad_token_id, batch_size, device)
        pred = classify(probs)
        gold = docs["label"].to_numpy()
        metrics[split] = scores(gold, pred)
        frames.append(pl.DataFrame({"doc_id": docs["doc_id"], "split": split, "label": gold, "prob": probs,
                                    "pred": pred}))
    write_with(out / "predictions.parquet", lambda tmp: pl.concat(frames).write_parquet(tmp))
    model.cpu()
    result = {
        "dataset": corpus.name, "task": "sentiment", "variant": variant, "mode": spec.mode, "seed": seed, **metrics,
        "pooling": pooling, "post_pooling": classifier.post_pooling, "params": count_parameters(model),
        "dynamic_params": count_parameters(model, model.dynamic_parameter_names()),
        "dynamic_vocabulary": len(dynamic_ids), "train_documents": train.height,
        "train_positive": int(np.sum(train["label"].to_numpy())), "lr": training.lr, "lambda_a": training.lambda_a,
        "epochs": train_log["epochs"], "best_epoch": train_log["best_epoch"], "epochs_run": len(train_log["epochs"]),
        "stopped_early": train_log["stopped_early"], "train_steps": train_log["steps"], "selected_from": chosen,
        "train_log": train_log, "spec": spec.__dict__, "classifier": classifier.__dict__,
        "seconds": time.perf_counter() - started, "fingerprint": fingerprint,
    }
    write_text_atomic(out / "metrics.json", json.dumps(result, indent=1, default=str) + "\n")
    (out / "checkpoint.pt").unlink(missing_ok=True)
    log.info("%s/%s sentiment seed %d: macro-F1 dev %.4f test %.4f (%s pooling, %.1f s)", corpus.name, variant, seed,
             metrics["dev"]["macro_f1"], metrics["test"]["macro_f1"], pooling, result["seconds"])
    return result


def run_tables(metrics: list[str], corpora: list[str], out_dir: str | os.PathLike, datasets: dict,
               backbone_label: str = "MiniLM-L6", sc_metrics: list[str] | None = None,
               sentiment_metrics: list[str] | None = None, extrapolation_metrics: list[str] | None = None,
               diffusion_metrics: list[str] | None = None) -> dict:
    """dcwe_table{1..5}, dcwe_change, dcwe_grid and dcwe_equal_epochs; with extrapolation runs
    dcwe_extrapolation, with diffusion analyses dcwe_diffusion. sc_metrics: semantic-change runs
    to show beside the change scores; sentiment_metrics: the sentiment runs (Table 5)."""
    from .tables import write_tables
    from .training_length import write_equal_epochs_table

    written = write_tables(metrics, corpora, out_dir, datasets, backbone_label, sc_metrics or [],
                           sentiment_metrics or [], extrapolation_metrics or [], diffusion_metrics or [])
    written["dcwe_equal_epochs"] = write_equal_epochs_table(metrics, out_dir, backbone_label)
    return written


# --------------------------------------------------------------------------- argparse


def cmd_dcwe_data(a):
    run_data(a.data, a.name, a.out_dir, a.backbone)


def cmd_dcwe_node2vec(a):
    run_node2vec(a.corpus, a.settings, a.seed, a.output)


def cmd_dcwe_vectors(a):
    run_vectors(a.corpus, a.vectors_file, a.output)


def cmd_dcwe_warmup(a):
    run_warmup(a.corpus, a.settings, a.seed, a.output, a.threads, a.device, a.holdout_last)


def cmd_dcwe_train(a):
    run_train(a.corpus, a.warmup, a.variant, a.settings, a.seed, a.out_dir, a.vectors, a.threads, a.device,
              a.select_from, a.fingerprint)


def cmd_dcwe_extrapolate(a):
    run_extrapolate(a.corpus, a.warmup, a.variant, a.settings, a.seed, a.out_dir, a.vectors, a.threads, a.device,
                    a.select_from, a.fingerprint)


def cmd_dcwe_diffusion(a):
    run_diffusion(a.corpus, a.runs, a.settings, a.out_dir, a.figures, a.vectors, a.threads, a.device, a.fingerprint)


def cmd_dcwe_sentiment(a):
    run_sentiment(a.corpus, a.variant, a.settings, a.seed, a.out_dir, a.vectors, a.threads, a.device, a.select_from,
                  a.fingerprint)


def cmd_dcwe_tables(a):
    run_tables(a.metrics, a.corpora, a.out_dir, a.datasets, a.backbone_label, a.sc_metrics, a.sentiment_metrics,
               a.extrapolation_metrics, a.diffusion_metrics)


def register(sub) -> None:
    """Add the dcwe-* subcommands to an argparse subparsers object."""
    from .model import VARIANTS

    p = sub.add_parser("dcwe-data", help="build/read a DCWE corpus: documents, units, graph, Table 1 statistics")
    p.add_argument("--data", type=_json, required=True, help="dataset spec as JSON (see dcwe.data.load_corpus)")
    p.add_argument("--name", required=True, help="dataset name")
    p.add_argument("--backbone", default="minilm", help="tokenizer for the word-piece counts")
    p.add_argument("--out-dir", required=True, help="folder for docs.parquet and corpus.json")
    p.set_defaults(func=cmd_dcwe_data)

    p = sub.add_parser("dcwe-node2vec", help="node2vec vectors of the social units (p = q = 1)")
    p.add_argument("--corpus", required=True, help="folder written by dcwe-data")
    p.add_argument("--settings", type=_json, default={}, help="Node2VecSettings as JSON")
    p.add_argument("--seed", type=int, required=True, help="seed of walks and training")
    p.add_argument("--output", required=True, help=".npy file to write")
    p.set_defaults(func=cmd_dcwe_node2vec)

    p = sub.add_parser("dcwe-vectors", help="read precomputed node vectors (the authors' {name}_vectors_50.txt, "
                       "word2vec text format) in the order of the corpus's units")
    p.add_argument("--corpus", required=True, help="folder written by dcwe-data")
    p.add_argument("--vectors-file", required=True, help="word2vec text file: 'count dimension', then 'name v1 ... vd'")
    p.add_argument("--output", required=True, help=".npy file to write")
    p.set_defaults(func=cmd_dcwe_vectors)

    def common(p):
        p.add_argument("--corpus", required=True, help="folder written by dcwe-data")
        p.add_argument("--settings", type=_json, default={},
                       help='JSON {"backbone", "max_length", "model", "warmup", "training", "sentiment", "evaluation", '
                            '"diffusion"}')
        p.add_argument("--threads", type=int, help="torch threads")
        p.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda if available)")

    def seeded(p):
        common(p)
        p.add_argument("--seed", type=int, required=True, help="seed of init, batches, masks and dropout")

    def fingerprinted(p):
        p.add_argument("--fingerprint", help="what the run is made from (the workflow's digest of code, settings "
                       "and inputs), recorded in metrics.json: a run whose record matches is not made again")

    def variant(p, select_help):
        fingerprinted(p)
        p.add_argument("--variant", required=True, choices=sorted(VARIANTS), help="cwe, dcwe, sa (time only), ta, static")
        p.add_argument("--vectors", help="node2vec .npy (variants with social units)")
        p.add_argument("--select-from", nargs="*", default=None, help=select_help)
        p.add_argument("--out-dir", required=True, help="output folder")

    select_mlm = ("another seed's grid runs (metrics.json) of this variant: train at the (lr, lambda_a) with the "
                  "best dev perplexity among them")
    p = sub.add_parser("dcwe-warmup", help="shared CWE warm-up checkpoint (MLM from the pretrained backbone)")
    seeded(p)
    p.add_argument("--holdout-last", action="store_true",
                   help="without the last time unit's documents (the warm-up of the extrapolation test)")
    p.add_argument("--output", required=True, help="checkpoint to write (warmup.pt)")
    p.set_defaults(func=cmd_dcwe_warmup)

    p = sub.add_parser("dcwe-train", help="train one variant from the warm-up, evaluate it (perplexity, sigma_sim)")
    seeded(p)
    p.add_argument("--warmup", required=True, help="checkpoint written by dcwe-warmup")
    variant(p, select_mlm)
    p.set_defaults(func=cmd_dcwe_train)

    p = sub.add_parser("dcwe-extrapolate", help="held-out last time: train a variant on the earlier times (from a "
                       "--holdout-last warm-up), score the last time's documents with the last trained component")
    seeded(p)
    p.add_argument("--warmup", required=True, help="checkpoint written by dcwe-warmup --holdout-last")
    variant(p, select_mlm)
    p.set_defaults(func=cmd_dcwe_extrapolate)

    p = sub.add_parser("dcwe-diffusion", help="semantic diffusion through the social network (the paper's "
                       "Figures 4-5) from a trained model: r^ per unit and time, walk vs flight")
    common(p)
    p.add_argument("--runs", nargs="+", required=True,
                   help="metrics.json of one variant and seed (grid points); the best dev point's model.pt is read")
    p.add_argument("--vectors", help="node2vec .npy: the units' positions in Figure 4")
    p.add_argument("--figures", nargs="*", default=None, help="Figure 4 and Figure 5 PNG files to write")
    fingerprinted(p)
    p.add_argument("--out-dir", required=True, help="output folder")
    p.set_defaults(func=cmd_dcwe_diffusion)

    p = sub.add_parser("dcwe-sentiment", help="train one variant as a sentiment classifier from the backbone "
                       "(no MLM stage) and evaluate it (macro-F1, predictions)")
    seeded(p)
    variant(p, "another seed's sentiment grid runs (metrics.json) of this variant: train at the (lr, lambda_a) "
               "with the best dev macro-F1 among them")
    p.set_defaults(func=cmd_dcwe_sentiment)

    p = sub.add_parser("dcwe-tables", help="DCWE tables beside the paper's numbers")
    p.add_argument("--metrics", nargs="*", default=[], help="every MLM run's metrics.json")
    p.add_argument("--sentiment-metrics", nargs="*", default=[], help="every sentiment run's metrics.json (Table 5)")
    p.add_argument("--extrapolation-metrics", nargs="*", default=[],
                   help="every dcwe-extrapolate run's metrics.json (dcwe_extrapolation)")
    p.add_argument("--diffusion-metrics", nargs="*", default=[],
                   help="every dcwe-diffusion metrics.json (dcwe_diffusion)")
    p.add_argument("--corpora", nargs="+", required=True, help="every dataset's corpus.json")
    p.add_argument("--datasets", type=_json, required=True, help='JSON {"dataset": paper column or null}')
    p.add_argument("--sc-metrics", nargs="*", default=[],
                   help="semantic-change metrics.json to show beside the change scores")
    p.add_argument("--backbone-label", default="MiniLM-L6", help="backbone name printed in the tables")
    p.add_argument("--out-dir", required=True, help="output folder")
    p.set_defaults(func=cmd_dcwe_tables)
