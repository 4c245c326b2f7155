"""Entry points of the DCWE stage: plain functions (run_*) and their subcommands.

`register` (called by the `tempoformer` command, src/tempoformer/cli.py) adds `dcwe-data`,
`dcwe-node2vec`, `dcwe-vectors`, `dcwe-warmup`, `dcwe-train`, `dcwe-sentiment` and `dcwe-tables`. Bad input raises
InputError/ValueError, which tempoformer's main() turns into an error message; outputs are
written atomically, so a failed job leaves none.
"""

from __future__ import annotations

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

SETTING_SECTIONS = ("backbone", "max_length", "model", "node2vec", "warmup", "training", "sentiment", "evaluation")


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
               threads: int | None = None, device: str | None = None) -> dict:
    """The shared warm-up: CWE MLM fine-tuning from the pretrained backbone with a new MLM head."""
    from .data import read_corpus
    from .model import DcweModel, DcweSpec, load_bert, save_model
    from .train import DCWETrainSettings, train_mlm

    device = job_setup(threads, device)
    settings = _check_settings(settings)
    corpus, _ = read_corpus(corpus_dir)
    backbone = settings.get("backbone", "minilm")
    tokenizer = _tokenizer(backbone)
    spec = DcweSpec(mode="cwe", n_times=len(corpus.periods), backbone=backbone)
    model = DcweModel(load_bert(backbone), spec, [], seed=seed)
    train_log = train_mlm(model, _docs(corpus, tokenizer, "train", settings.get("max_length", 128)), tokenizer,
                          DCWETrainSettings.from_dict(settings.get("warmup")), seed, device, warmup=True)
    info = {"dataset": corpus.name, "seed": seed, "train_log": train_log}
    save_model(model.cpu(), output, info)
    log.info("warm-up %s seed %d: %d steps, mlm %.3f -> %.3f (%.1f s)", corpus.name, seed, train_log["steps"],
             train_log["first10_mlm"] or float("nan"), train_log["last10_mlm"] or float("nan"), train_log["seconds"])
    return info


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


def run_train(corpus_dir: str | os.PathLike, warmup: str | os.PathLike, variant: str, settings: dict, seed: int,
              out_dir: str | os.PathLike, vectors: str | os.PathLike | None = None, threads: int | None = None,
              device: str | None = None) -> dict:
    """Train one variant from the warm-up checkpoint, then evaluate it: out_dir/{model.pt,
    losses.parquet, metrics.json} (perplexities, sigma_sim, change scores where the corpus has targets)."""
    import polars as pl

    from ..semantic_change.scoring import correlations
    from .data import read_corpus
    from .evaluate import change_scores, document_losses, perplexity, sigma_sim
    from .model import count_parameters, load_model, save_model
    from .train import DCWETrainSettings, train_mlm

    device = job_setup(threads, device)
    settings = _check_settings(settings)
    started = time.perf_counter()
    corpus, _ = read_corpus(corpus_dir)
    max_length = settings.get("max_length", 128)
    spec, social, edge_index, tokenizer, dynamic_ids = _variant_inputs(corpus, variant, settings, vectors)
    model, _ = load_model(warmup, spec, social, edge_index, dynamic_ids, seed)
    training = DCWETrainSettings.from_dict(settings.get("training"))
    evaluation = dict(settings.get("evaluation") or {})
    dev_frames = {}

    def dev_perplexity(epoch: int) -> float:
        dev_frames[epoch] = document_losses(model, _docs(corpus, tokenizer, "dev", max_length), tokenizer, seed,
                                            training.mlm_probability, evaluation.get("batch_size", 32), device)
        return perplexity(dev_frames[epoch], "token")

    train_log = train_mlm(model, _docs(corpus, tokenizer, "train", max_length), tokenizer, training, seed, device,
                          evaluate=dev_perplexity if training.epochs else None)
    losses, metrics = [], {}
    for split in ("dev", "test"):
        if split == "dev" and train_log["best_epoch"] is not None:
            frame = dev_frames[train_log["best_epoch"]]  # the kept epoch's dev losses
        else:
            frame = document_losses(model, _docs(corpus, tokenizer, split, max_length), tokenizer, seed,
                                    training.mlm_probability, evaluation.get("batch_size", 32), device)
        losses.append(frame.with_columns(pl.lit(split).alias("split")))
        metrics[split] = {"perplexity": perplexity(frame, "token"), "documents": frame.height,
                          "masked": int(frame["n_masked"].sum()),
                          "perplexity_batch_mean": perplexity(frame, "batch_mean", evaluation.get("authors_batch", 4))}
    model.cpu()
    sigma = []
    if spec.mode != "cwe":
        sigma = sigma_sim(model, _docs(corpus, tokenizer, "dev", max_length), tokenizer,
                          evaluation.get("sigma_top", 10), evaluation.get("sigma_min_contexts", 2),
                          corpus.periods, corpus.units)
    change = None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
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
        "dynamic_vocabulary": len(dynamic_ids), "sigma_sim": sigma, "change": change,
        "lr": training.lr, "lambda_a": training.lambda_a, "epochs": train_log["epochs"],
        "best_epoch": train_log["best_epoch"], "train_steps": train_log["steps"],
        "mlm_first10": train_log["first10_mlm"], "mlm_last10": train_log["last10_mlm"],
        "train_log": train_log, "spec": spec.__dict__, "seconds": time.perf_counter() - started,
    }
    write_text_atomic(out / "metrics.json", json.dumps(result, indent=1, default=str) + "\n")
    log.info("%s/%s seed %d: perplexity dev %.4f test %.4f (%d dynamic tokens, %.1f s)", corpus.name, variant, seed,
             metrics["dev"]["perplexity"], metrics["test"]["perplexity"], len(dynamic_ids), result["seconds"])
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
                  device: str | None = None) -> dict:
    """Train one variant as a sentiment classifier from the pretrained backbone (no MLM stage) and
    evaluate it: out_dir/predictions.parquet (doc_id, split, label, prob, pred) and metrics.json."""
    import numpy as np
    import polars as pl

    from ..models.pooling import resolve_post_pooling, warn_if_untrained_pooler
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

    train_log = train_sentiment(model, encoded["train"], train["label"].to_numpy(), tokenizer.pad_token_id, training,
                                seed, device, evaluate=dev_f1 if training.epochs else None)
    frames, metrics = [], {}
    for split in ("dev", "test"):
        docs = corpus.split(split)
        probs = predict(model, encoded[split], tokenizer.pad_token_id, batch_size, device)
        pred = classify(probs)
        gold = docs["label"].to_numpy()
        metrics[split] = scores(gold, pred)
        frames.append(pl.DataFrame({"doc_id": docs["doc_id"], "split": split, "label": gold, "prob": probs,
                                    "pred": pred}))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_with(out / "predictions.parquet", lambda tmp: pl.concat(frames).write_parquet(tmp))
    model.cpu()
    result = {
        "dataset": corpus.name, "task": "sentiment", "variant": variant, "mode": spec.mode, "seed": seed, **metrics,
        "pooling": pooling, "post_pooling": classifier.post_pooling, "params": count_parameters(model),
        "dynamic_params": count_parameters(model, model.dynamic_parameter_names()),
        "dynamic_vocabulary": len(dynamic_ids), "train_documents": train.height,
        "train_positive": int(np.sum(train["label"].to_numpy())), "lr": training.lr, "lambda_a": training.lambda_a,
        "epochs": train_log["epochs"], "best_epoch": train_log["best_epoch"], "train_steps": train_log["steps"],
        "train_log": train_log, "spec": spec.__dict__, "classifier": classifier.__dict__,
        "seconds": time.perf_counter() - started,
    }
    write_text_atomic(out / "metrics.json", json.dumps(result, indent=1, default=str) + "\n")
    log.info("%s/%s sentiment seed %d: macro-F1 dev %.4f test %.4f (%s pooling, %.1f s)", corpus.name, variant, seed,
             metrics["dev"]["macro_f1"], metrics["test"]["macro_f1"], pooling, result["seconds"])
    return result


def run_tables(metrics: list[str], corpora: list[str], out_dir: str | os.PathLike, datasets: dict,
               backbone_label: str = "MiniLM-L6", sc_metrics: list[str] | None = None,
               sentiment_metrics: list[str] | None = None) -> dict:
    """dcwe_table{1..5} and dcwe_change; sc_metrics: semantic-change runs to show beside the change
    scores; sentiment_metrics: the sentiment runs (Table 5)."""
    from .tables import write_tables

    return write_tables(metrics, corpora, out_dir, datasets, backbone_label, sc_metrics or [], sentiment_metrics or [])


# --------------------------------------------------------------------------- argparse


def cmd_dcwe_data(a):
    run_data(a.data, a.name, a.out_dir, a.backbone)


def cmd_dcwe_node2vec(a):
    run_node2vec(a.corpus, a.settings, a.seed, a.output)


def cmd_dcwe_vectors(a):
    run_vectors(a.corpus, a.vectors_file, a.output)


def cmd_dcwe_warmup(a):
    run_warmup(a.corpus, a.settings, a.seed, a.output, a.threads, a.device)


def cmd_dcwe_train(a):
    run_train(a.corpus, a.warmup, a.variant, a.settings, a.seed, a.out_dir, a.vectors, a.threads, a.device)


def cmd_dcwe_sentiment(a):
    run_sentiment(a.corpus, a.variant, a.settings, a.seed, a.out_dir, a.vectors, a.threads, a.device)


def cmd_dcwe_tables(a):
    run_tables(a.metrics, a.corpora, a.out_dir, a.datasets, a.backbone_label, a.sc_metrics, a.sentiment_metrics)


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
                       help='JSON {"backbone", "max_length", "model", "warmup", "training", "sentiment", "evaluation"}')
        p.add_argument("--seed", type=int, required=True, help="seed of init, batches, masks and dropout")
        p.add_argument("--threads", type=int, help="torch threads")
        p.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda if available)")

    p = sub.add_parser("dcwe-warmup", help="shared CWE warm-up checkpoint (MLM from the pretrained backbone)")
    common(p)
    p.add_argument("--output", required=True, help="checkpoint to write (warmup.pt)")
    p.set_defaults(func=cmd_dcwe_warmup)

    p = sub.add_parser("dcwe-train", help="train one variant from the warm-up, evaluate it (perplexity, sigma_sim)")
    common(p)
    p.add_argument("--warmup", required=True, help="checkpoint written by dcwe-warmup")
    p.add_argument("--variant", required=True, choices=sorted(VARIANTS), help="cwe, dcwe, sa (time only), ta")
    p.add_argument("--vectors", help="node2vec .npy (variants with social units)")
    p.add_argument("--out-dir", required=True, help="output folder")
    p.set_defaults(func=cmd_dcwe_train)

    p = sub.add_parser("dcwe-sentiment", help="train one variant as a sentiment classifier from the backbone "
                       "(no MLM stage) and evaluate it (macro-F1, predictions)")
    common(p)
    p.add_argument("--variant", required=True, choices=sorted(VARIANTS), help="cwe, dcwe, sa (time only), ta")
    p.add_argument("--vectors", help="node2vec .npy (variants with social units)")
    p.add_argument("--out-dir", required=True, help="output folder")
    p.set_defaults(func=cmd_dcwe_sentiment)

    p = sub.add_parser("dcwe-tables", help="DCWE tables beside the paper's numbers")
    p.add_argument("--metrics", nargs="*", default=[], help="every MLM run's metrics.json")
    p.add_argument("--sentiment-metrics", nargs="*", default=[], help="every sentiment run's metrics.json (Table 5)")
    p.add_argument("--corpora", nargs="+", required=True, help="every dataset's corpus.json")
    p.add_argument("--datasets", type=_json, required=True, help='JSON {"dataset": paper column or null}')
    p.add_argument("--sc-metrics", nargs="*", default=[],
                   help="semantic-change metrics.json to show beside the change scores")
    p.add_argument("--backbone-label", default="MiniLM-L6", help="backbone name printed in the tables")
    p.add_argument("--out-dir", required=True, help="output folder")
    p.set_defaults(func=cmd_dcwe_tables)
