"""Entry points of the future language modeling stage: plain functions (run_*) and their subcommands.

`register` (called by the `tempoformer` command, src/tempoformer/cli.py) adds
future-lm-corpus, -tokenize, -frequency, -context, -pretrain, -train, -evaluate, -unigram,
-tables and -human-sheet. Settings arrive as JSON (the rules pass config sections through
params). Bad input raises InputError/ValueError, which tempoformer's main() turns into a message.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from ..arguments import json_arg as _json
from ..artefacts import read_json
from ..atomic import write_text_atomic
from ..cli_common import job_setup
from .numerics import numerics, warn_if_unpinned

log = logging.getLogger(__name__)


def _json_dump(path, obj) -> None:
    write_text_atomic(path, json.dumps(obj, indent=1, default=str) + "\n")


def run_corpus(spec: dict, out_dir: str | os.PathLike) -> dict:
    """corpus.parquet + corpus_counts.json of a dataset spec {sources, years, filter, cap}."""
    from .data import load_corpus, write_corpus

    summary = write_corpus(load_corpus(spec), out_dir)
    log.info("%s: used per split %s", out_dir, summary["used_per_split"])
    return summary


def run_tokenize(corpus: str, out_dir: str | os.PathLike, tokenizer: str = "minilm", restrict: bool = True,
                 stopwords: str | None = None, min_count: int = 1) -> dict:
    """tokens.parquet + vocab.json: LM ids, words and content flags of every abstract."""
    from .data import read_corpus
    from .tokens import load_stopwords, load_tokenizer, tokenize_corpus

    info = load_tokenizer(tokenizer)
    frame, vocab, summary = tokenize_corpus(read_corpus(corpus), info, load_stopwords(stopwords), restrict,
                                            min_count)
    out = Path(out_dir)
    from ..atomic import write_with

    write_with(out / "tokens.parquet", lambda tmp: frame.write_parquet(tmp))
    _json_dump(out / "vocab.json", {"tokenizer": tokenizer, "vocab_size": len(vocab), "splits": summary,
                                    "vocab": vocab.to_json()})
    log.info("vocabulary %d entries; per split %s", len(vocab), summary)
    return summary


def run_frequency(tokens: str, vocab_path: str, output: str, smoothing: float = 1.0) -> None:
    from .frequency import compute_frequency, write_frequency
    from .tokens import read_tokens, read_vocab

    vocab = read_vocab(vocab_path)
    freq = compute_frequency(read_tokens(tokens), len(vocab), vocab.eos, smoothing, {vocab.pad, vocab.unk, vocab.bos})
    write_frequency(freq, output)
    log.info("log f for years %s", freq["years"].tolist())


def context_years(counts: dict, window: int, shortcut: bool) -> list[int]:
    """The corpus years some split year's history reads."""
    from .data import YearSplits, history_years

    splits = YearSplits.from_dict(counts["splits"])
    present = {int(y) for y, e in counts["years"].items() if e.get("used")}
    wanted = set()
    for years in splits.split_years().values():
        for y in years:
            wanted |= set(history_years(y, window, splits.train[1], shortcut))
    return sorted(wanted & present)


def run_context(corpus: str, counts_path: str, vocab_path: str, output: str, settings: dict,
                threads: int | None = None, device: str | None = None) -> None:
    """context.npz: V_iw of every year a history needs (settings: tokenizer, encoder, window, ...)."""
    from .context import compute_context, write_context
    from .data import read_corpus
    from .tokens import read_vocab

    device = job_setup(threads, device, quiet_transformers=False)
    warn_if_unpinned(threads, device, "future-lm-context")
    c = dict(settings.get("context") or {})
    counts = read_json(counts_path)
    years = context_years(counts, int(settings["max_window"]), bool(settings.get("shortcut", False)))
    ctx = compute_context(read_corpus(corpus), read_vocab(vocab_path), settings.get("tokenizer", "minilm"),
                          c.get("encoder", "minilm"), years, c.get("cap_per_year"), int(c.get("seed", 0)),
                          int(c.get("max_length", 256)), int(c.get("batch_size", 16)), int(c.get("layer", -1)), device)
    write_context(ctx, output)


def _features(freq_path, ctx_path, counts_path, window: int, shortcut: bool, scaling: str = "none"):
    from .biases import YearFeatures
    from .context import read_context
    from .frequency import read_frequency

    counts = read_json(counts_path)
    ctx = read_context(ctx_path) if ctx_path else None
    return YearFeatures(read_frequency(freq_path), ctx, counts["splits"]["train"][1], window, shortcut, scaling)


def _split_docs(tokens_path, counts_path):
    from .data import YearSplits
    from .evaluate import docs_of
    from .tokens import read_tokens

    tokens = read_tokens(tokens_path)
    splits = YearSplits.from_dict(read_json(counts_path)["splits"])
    return tokens, splits, {name: docs_of(tokens, years=years) for name, years in splits.split_years().items()}


def run_pretrain(tokens: str, vocab_path: str, counts_path: str, output: str, settings: dict, seed: int = 0,
                 threads: int | None = None, device: str | None = None, recent_years: int | None = None) -> dict:
    """pretrained.pt: the base LM trained on the training years (scratch), or the named model.
    `recent_years` n: a scratch LM trained on the n most recent training years only (Baseline-n's
    start point `base`, train.start_checkpoint)."""
    import torch

    from ..causal_lms import weights_record
    from .biases import BiasSpec, TemporalLM
    from .checkpoint import save_pretrained
    from .lm import build_lm
    from .tokens import read_vocab
    from .train import FitSettings, fit

    device = job_setup(threads, device, quiet_transformers=False)
    warn_if_unpinned(threads, device, "future-lm-pretrain")
    base_model = settings.get("base_model", "scratch")
    if recent_years is not None and (base_model != "scratch" or int(recent_years) < 1):
        raise ValueError(f"--recent-years {recent_years}: only a scratch LM (base_model: scratch) is pretrained "
                         f"here, on n >= 1 recent training years; base_model is {base_model!r}")
    vocab = read_vocab(vocab_path)
    _, splits, docs = _split_docs(tokens, counts_path)
    train_docs = docs["train"]
    if recent_years is not None:
        train_docs = [d for d in train_docs if d.year > splits.train[1] - int(recent_years)]
    torch.manual_seed(seed)
    lm = build_lm(base_model, len(vocab), settings.get("lm"))
    info = {"seed": seed, "base_model": base_model, "recent_years": recent_years,
            "train_docs": len(train_docs) if base_model == "scratch" else None,  # a pretrained model: none here
            "params": sum(p.numel() for p in lm.parameters()), "vocab_size": len(vocab),
            "numerics": numerics(device),
            "weights": None if base_model == "scratch" else weights_record(base_model)}
    if base_model == "scratch":
        model = TemporalLM(lm, BiasSpec("baseline"))
        fit_settings = FitSettings.from_dict(settings.get("pretrain"))
        label = "pretrain" if recent_years is None else f"pretrain on the last {recent_years} training years"
        state, record = fit(model, train_docs, docs["dev"], vocab, fit_settings, seed, device, label)
        model.load_state_dict(state)
        info["train_log"] = record
    save_pretrained(lm.cpu(), output, info)
    return info


def grid_points(model_cfg: dict) -> list[dict]:
    """The grid of a model entry: every α (biased models) or n (Baseline-n)."""
    from .model_types import BIASED

    fixed = {k: v for k, v in model_cfg.items() if k not in ("alpha", "n")}
    alphas = model_cfg.get("alpha", [1.0])
    alphas = alphas if isinstance(alphas, list) else [alphas]
    ns = model_cfg.get("n", [None])
    ns = ns if isinstance(ns, list) else [ns]
    if model_cfg.get("type") not in BIASED:
        alphas = [0.0]
    return [{**fixed, "alpha": float(a), "n": n} for a in alphas for n in ns]


def run_train(tokens: str, vocab_path: str, counts_path: str, freq: str, context: str | None, pretrained: str,
              name: str, model_cfg: dict, settings: dict, seed: int, output: str,
              threads: int | None = None, device: str | None = None, recent: dict | None = None) -> dict:
    """model.pt (+ train.json beside it): fine-tune `name` over its grid, keep the best on dev.
    `recent` {n: path}: scratch LMs pretrained on the n most recent training years (Baseline-n's
    start point `base`, train.start_checkpoint)."""
    import torch

    from .biases import BiasSpec, TemporalLM
    from .checkpoint import load_pretrained_lm, save_model
    from .tokens import read_vocab
    from .train import FitSettings, fit, start_checkpoint

    device = job_setup(threads, device, quiet_transformers=False)
    warn_if_unpinned(threads, device, "future-lm-train")
    started = time.perf_counter()
    vocab = read_vocab(vocab_path)
    _, splits, docs = _split_docs(tokens, counts_path)
    fit_settings = FitSettings.from_dict(settings.get("finetune"))
    shortcut = bool(settings.get("shortcut", False))
    scratch = settings.get("base_model", "scratch") == "scratch"
    best, points = None, []
    for point in grid_points(model_cfg):
        spec = BiasSpec.from_dict(point)
        features = _features(freq, context, counts_path, spec.window, shortcut, spec.scaling)
        start = start_checkpoint(spec, pretrained, recent, scratch)
        lm, pretrained_info = load_pretrained_lm(start)
        torch.manual_seed(seed)
        model = TemporalLM(lm, spec, features)
        train_docs = docs["train"]
        if spec.type == "baseline_n":
            first = splits.train[1] - int(spec.n) + 1
            train_docs = [d for d in train_docs if d.year >= first]
        label = f"{name} alpha={spec.alpha} n={spec.n} seed {seed}"
        state, record = fit(model, train_docs, docs["dev"], vocab, fit_settings, seed, device, label)
        points.append({"alpha": spec.alpha, "n": spec.n, "start": spec.start if spec.type == "baseline_n" else None,
                       "start_checkpoint": Path(start).name, "start_train_docs": pretrained_info.get("train_docs"),
                       "best_dev_ppl": record["best_dev_ppl"],
                       "best_epoch": record["best_epoch"], "train_docs": len(train_docs), "log": record})
        if best is None or record["best_dev_ppl"] < best[0]:
            model.load_state_dict(state)
            best = (record["best_dev_ppl"], spec, model.cpu())
    info = {"model": name, "seed": seed, "spec": best[1].to_dict(), "best_dev_ppl": best[0], "grid": points,
            "shortcut": shortcut, "train_seconds": time.perf_counter() - started,
            "params": sum(p.numel() for p in best[2].parameters()),
            "new_params": sum(p.numel() for p in best[2].new_parameters()),
            "numerics": numerics(device), "pretrain_numerics": pretrained_info.get("numerics"),
            "base_weights": pretrained_info.get("weights")}
    save_model(best[2], output, info)
    _json_dump(Path(output).with_name("train.json"), info)
    log.info("%s seed %d: best dev ppl %.2f (alpha %s, n %s)", name, seed, best[0], best[1].alpha, best[1].n)
    return info


def run_evaluate(tokens: str, corpus: str, vocab_path: str, counts_path: str, freq: str, context: str | None,
                 model_path: str, name: str, settings: dict, seed: int, out_dir: str,
                 threads: int | None = None, device: str | None = None, fingerprint: str | None = None) -> dict:
    """scores.parquet (per abstract), generations.jsonl, metrics.json of one trained model;
    fingerprint: what it is made from (the workflow's digest), recorded in metrics.json."""
    import polars as pl

    from .checkpoint import load_model
    from .data import read_corpus
    from .biases import BiasSpec, evaluation_scaling
    from .evaluate import chunked_nll, content_meteor, corpus_metrics, doc_scores, token_nll
    from .generate import DecodeSettings, beam_sample
    from .tokens import load_stopwords, load_tokenizer, read_vocab

    device = job_setup(threads, device, quiet_transformers=False)
    warn_if_unpinned(threads, device, "future-lm-evaluate")
    started = time.perf_counter()
    vocab = read_vocab(vocab_path)
    shortcut = bool(settings.get("shortcut", False))
    ev = dict(settings.get("evaluation") or {})
    frequency_input = ev.get("frequency_input", "as_trained")
    model, info = load_model(model_path, lambda spec: _features(freq, context, counts_path, spec.window, shortcut,
                                                                evaluation_scaling(spec, frequency_input)))
    model.to(device)
    _, splits, docs = _split_docs(tokens, counts_path)
    rows, per_year = [], {}
    for split in ("dev", "test", "future"):
        for year in splits.split_years()[split]:
            mine = [d for d in docs[split] if d.year == year]
            nlls = token_nll(model, mine, vocab.bos, vocab.eos, ev.get("stride"), int(ev.get("batch_size", 8)), device)
            year_rows = [{**r, "split": split} for r in doc_scores(mine, nlls)]
            rows += year_rows
            per_year[str(year)] = {"split": split, **corpus_metrics(year_rows)}
            log.info("%s %d (%s): ppl/token %.2f, ppl/word %.2f, cpl %.2f", name, year, split,
                     per_year[str(year)]["ppl_token"], per_year[str(year)]["ppl_word"], per_year[str(year)]["cpl"] or 0)
    if ev.get("chunked"):  # the authors' perplexity over the joined test abstracts (evaluate.chunked_nll)
        separator = {"eos": [vocab.eos], "none": []}[ev.get("chunk_separator", "eos")]
        chunked = chunked_nll(model, [d for d in docs["test"] if d.year == splits.test], separator,
                              int(ev.get("batch_size", 8)), device)
        per_year[str(splits.test)]["chunked"] = chunked
        log.info("%s %d, the authors' chunks: ppl/token %.2f (their n-factor %.2f), %d of %d chunks cross abstracts",
                 name, splits.test, chunked["ppl"], chunked["ppl_authors"], chunked["chunks_crossing_abstracts"],
                 chunked["n_chunks"])
    out = Path(out_dir)
    scores = pl.DataFrame(rows).with_columns(pl.lit(name).alias("model"), pl.lit(seed).alias("seed"))
    from ..atomic import write_with

    write_with(out / "scores.parquet", lambda tmp: scores.write_parquet(tmp))
    # generation for the test year, and content METEOR against its abstracts
    decode = DecodeSettings.from_dict(settings.get("generation"))
    n_gen = int(ev.get("n_generate", 5))
    info_tok = load_tokenizer(settings.get("tokenizer", "minilm"))
    generations = []
    gen_started = time.perf_counter()
    for i in range(n_gen):
        ids = beam_sample(model, splits.test, vocab.bos, vocab.eos, decode, seed * 100003 + i, device)
        generations.append({"model": name, "seed": seed, "sample": i, "year": splits.test,
                            "text": info_tok.decode(vocab.decode_ids(ids)), "n_tokens": len(ids)})
    gen_seconds = time.perf_counter() - gen_started
    write_text_atomic(out / "generations.jsonl", "".join(json.dumps(g) + "\n" for g in generations))
    texts = read_corpus(corpus).filter(pl.col("year") == splits.test)["text"].to_list()
    refs = texts[: ev["cm_references"]] if ev.get("cm_references") else texts
    cm = content_meteor([g["text"] for g in generations], refs, load_stopwords(settings.get("stopwords")))
    metrics = {"model": name, "seed": seed, "spec": info["spec"], "best_dev_ppl": info["best_dev_ppl"],
               "grid": [{k: v for k, v in p.items() if k != "log"} for p in info["grid"]],
               "years": per_year, "test_year": splits.test, "dev_year": splits.dev,
               "cm": cm["cm"], "cm_per_generation": cm["per_generation"], "cm_references": len(refs),
               "n_generated": n_gen, "generation": decode.to_dict(), "generation_seconds": gen_seconds,
               "params": info["params"], "new_params": info["new_params"], "train_seconds": info["train_seconds"],
               "evaluate_seconds": time.perf_counter() - started, "shortcut": info["shortcut"],
               "frequency_input": frequency_input,
               "evaluated_scaling": evaluation_scaling(BiasSpec.from_dict(info["spec"]), frequency_input),
               "numerics": numerics(device), "train_numerics": info.get("numerics"),
               "pretrain_numerics": info.get("pretrain_numerics"), "base_weights": info.get("base_weights"),
               "fingerprint": fingerprint}
    _json_dump(out / "metrics.json", metrics)
    return metrics


def run_unigram(tokens: str, vocab_path: str, counts_path: str, freq: str, model_path: str, settings: dict,
                output: str, threads: int | None = None, device: str | None = None,
                fingerprint: str | None = None) -> dict:
    """Fixed frequency biases (last year, linear trend, next-year oracle) on a Baseline model;
    fingerprint: what they are made from (the workflow's digest), recorded in the output."""
    from .checkpoint import load_model
    from .frequency import read_frequency
    from .tokens import read_vocab
    from .unigram import evaluate_predictors

    device = job_setup(threads, device, quiet_transformers=False)
    warn_if_unpinned(threads, device, "future-lm-unigram")
    vocab = read_vocab(vocab_path)
    model, info = load_model(model_path, None)
    model.to(device)
    _, splits, docs = _split_docs(tokens, counts_path)
    by_split = {"dev": docs["dev"], "test": docs["test"],
                **{f"future_{y}": [d for d in docs["future"] if d.year == y] for y in splits.future}}
    u = dict(settings.get("unigram") or {})
    ev = dict(settings.get("evaluation") or {})
    reference = u.get("reference", "training_years")
    results = evaluate_predictors(model, read_frequency(freq), by_split, vocab, int(u.get("window", 2)),
                                  splits.train, bool(settings.get("shortcut", False)),
                                  u.get("betas", [0.0, 0.25, 0.5, 1.0]), u.get("trend_years"),
                                  ev.get("stride"), int(ev.get("batch_size", 8)), device, reference)
    out = {"base": info["model"], "seed": info["seed"], "reference": reference,
           "years": {"dev": splits.dev, "test": splits.test,
           **{f"future_{y}": y for y in splits.future}}, "predictors": results,
           "numerics": numerics(device), "train_numerics": info.get("numerics"), "fingerprint": fingerprint}
    _json_dump(output, out)
    return out


def run_tables(counts: str, corpus: str, metrics: list[str], unigram: list[str], out_dir: str, figures_dir: str,
               settings: dict) -> dict:
    from .numerics import check_numerics
    from .tables import write_all

    check_numerics([read_json(m) for m in metrics])
    return write_all(counts, corpus, metrics, unigram, out_dir, figures_dir, settings)


def run_human_sheet(generations: list[str], sheet: str, key: str, per_model: int = 10, seed: int = 0) -> int:
    from .human_eval import write_sheet

    return write_sheet(generations, sheet, key, per_model, seed)


# --------------------------------------------------------------------------- argparse


def cmd_future_lm_corpus(a):
    run_corpus(a.spec, a.out_dir)


def cmd_future_lm_tokenize(a):
    run_tokenize(a.corpus, a.out_dir, a.tokenizer, not a.no_restrict, a.stopwords, a.min_count)


def cmd_future_lm_frequency(a):
    run_frequency(a.tokens, a.vocab, a.output, a.smoothing)


def cmd_future_lm_context(a):
    run_context(a.corpus, a.counts, a.vocab, a.output, a.settings, a.threads, a.device)


def cmd_future_lm_pretrain(a):
    run_pretrain(a.tokens, a.vocab, a.counts, a.output, a.settings, a.seed, a.threads, a.device, a.recent_years)


def cmd_future_lm_train(a):
    run_train(a.tokens, a.vocab, a.counts, a.frequency, a.context, a.pretrained, a.name, a.model, a.settings,
              a.seed, a.output, a.threads, a.device, a.recent_pretrained)


def cmd_future_lm_evaluate(a):
    run_evaluate(a.tokens, a.corpus, a.vocab, a.counts, a.frequency, a.context, a.model, a.name, a.settings,
                 a.seed, a.out_dir, a.threads, a.device, a.fingerprint)


def cmd_future_lm_unigram(a):
    run_unigram(a.tokens, a.vocab, a.counts, a.frequency, a.model, a.settings, a.output, a.threads, a.device,
                a.fingerprint)


def cmd_future_lm_tables(a):
    run_tables(a.counts, a.corpus, a.metrics, a.unigram, a.out_dir, a.figures_dir, a.settings)


def cmd_future_lm_human_sheet(a):
    run_human_sheet(a.generations, a.sheet, a.key, a.per_model, a.seed)


def register(sub) -> None:
    """Add the future-lm-* subcommands to an argparse subparsers object."""
    def runtime(p):
        p.add_argument("--threads", type=int, help="torch threads")
        p.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda if available)")

    def data(p, *names):
        helps = {"tokens": "tokens.parquet (future-lm-tokenize)", "vocab": "vocab.json (future-lm-tokenize)",
                 "counts": "corpus_counts.json (future-lm-corpus)", "corpus": "corpus.parquet (future-lm-corpus)",
                 "frequency": "frequency.npz (future-lm-frequency)"}
        for n in names:
            p.add_argument(f"--{n}", required=True, help=helps[n])

    p = sub.add_parser("future-lm-corpus", help="read, filter (counted) and split the abstracts by year")
    p.add_argument("--spec", type=_json, required=True, help="dataset spec as JSON {sources, years, filter, cap}")
    p.add_argument("--out-dir", required=True, help="folder for corpus.parquet and corpus_counts.json")
    p.set_defaults(func=cmd_future_lm_corpus)

    p = sub.add_parser("future-lm-tokenize", help="LM vocabulary and token ids, words and content flags")
    data(p, "corpus")
    p.add_argument("--tokenizer", default="minilm", help="minilm (offline WordPiece) or a tokenizer folder/name")
    p.add_argument("--no-restrict", action="store_true",
                   help="keep the tokenizer's whole vocabulary (a pretrained base model) instead of the pieces seen in training")
    p.add_argument("--stopwords", default=None, help="stopword list (default: the authors' list, packaged)")
    p.add_argument("--min-count", type=int, default=1, help="pieces seen fewer times in training become UNK")
    p.add_argument("--out-dir", required=True, help="folder for tokens.parquet and vocab.json")
    p.set_defaults(func=cmd_future_lm_tokenize)

    p = sub.add_parser("future-lm-frequency", help="per-year smoothed log frequencies on the LM vocabulary")
    data(p, "tokens", "vocab")
    p.add_argument("--smoothing", type=float, default=1.0, help="add-k smoothing of the counts")
    p.add_argument("--output", required=True, help="frequency.npz to write")
    p.set_defaults(func=cmd_future_lm_frequency)

    p = sub.add_parser("future-lm-context", help="per-year mean contextual embeddings V_iw (frozen encoder)")
    data(p, "corpus", "counts", "vocab")
    p.add_argument("--settings", type=_json, required=True, help='JSON {"tokenizer", "max_window", "shortcut", "context": {...}}')
    p.add_argument("--output", required=True, help="context.npz to write")
    runtime(p)
    p.set_defaults(func=cmd_future_lm_context)

    p = sub.add_parser("future-lm-pretrain", help="pretrain the base LM on the training years (plays GPT-2)")
    data(p, "tokens", "vocab", "counts")
    p.add_argument("--settings", type=_json, required=True, help='JSON {"base_model", "lm", "pretrain"}')
    p.add_argument("--seed", type=int, default=0, help="seed of the initialisation and batch order")
    p.add_argument("--recent-years", type=int, default=None,
                   help="pretrain a scratch LM on the N most recent training years only (Baseline-n's start: base)")
    p.add_argument("--output", required=True, help="pretrained.pt to write")
    runtime(p)
    p.set_defaults(func=cmd_future_lm_pretrain)

    p = sub.add_parser("future-lm-train", help="fine-tune one model (its alpha / n grid) from the pretrained LM")
    data(p, "tokens", "vocab", "counts", "frequency")
    p.add_argument("--context", default=None, help="context.npz (Context and Context² models)")
    p.add_argument("--pretrained", required=True, help="pretrained.pt (future-lm-pretrain)")
    p.add_argument("--recent-pretrained", type=_json, default=None,
                   help='JSON {"n": path}: scratch LMs pretrained on the n most recent training years '
                        "(Baseline-n with start: base on a scratch LM)")
    p.add_argument("--name", required=True, help="model name (the config entry)")
    p.add_argument("--model", type=_json, required=True, help="model entry as JSON {type, alpha: [..], n: [..], ...}")
    p.add_argument("--settings", type=_json, required=True, help='JSON {"finetune", "shortcut", "base_model"}')
    p.add_argument("--seed", type=int, required=True, help="seed of new parameters, batch order, dropout")
    p.add_argument("--output", required=True, help="model.pt to write (train.json beside it)")
    runtime(p)
    p.set_defaults(func=cmd_future_lm_train)

    p = sub.add_parser("future-lm-evaluate", help="perplexities, content perplexity, generation, content METEOR")
    data(p, "tokens", "corpus", "vocab", "counts", "frequency")
    p.add_argument("--context", default=None, help="context.npz (Context and Context² models)")
    p.add_argument("--model", required=True, help="model.pt (future-lm-train)")
    p.add_argument("--name", required=True, help="model name")
    p.add_argument("--settings", type=_json, required=True,
                   help='JSON {"tokenizer", "stopwords", "shortcut", "evaluation", "generation"}')
    p.add_argument("--seed", type=int, required=True, help="the run's seed (also seeds generation)")
    p.add_argument("--out-dir", required=True, help="folder for scores.parquet, generations.jsonl, metrics.json")
    p.add_argument("--fingerprint", help="what it is made from (the workflow's digest of code, settings and "
                   "inputs), recorded in its output: a job whose record matches is not made again")
    runtime(p)
    p.set_defaults(func=cmd_future_lm_evaluate)

    p = sub.add_parser("future-lm-unigram", help="last-year / linear-trend / oracle frequency biases on a Baseline")
    data(p, "tokens", "vocab", "counts", "frequency")
    p.add_argument("--model", required=True, help="a Baseline model.pt")
    p.add_argument("--settings", type=_json, required=True, help='JSON {"unigram", "evaluation", "shortcut"}')
    p.add_argument("--output", required=True, help="unigram.json to write")
    p.add_argument("--fingerprint", help="what it is made from (the workflow's digest of code, settings and "
                   "inputs), recorded in its output: a job whose record matches is not made again")
    runtime(p)
    p.set_defaults(func=cmd_future_lm_unigram)

    p = sub.add_parser("future-lm-tables", help="Table 1, the automatic-metric table, beyond-the-paper tables, figures")
    data(p, "counts", "corpus")
    p.add_argument("--metrics", nargs="+", required=True, help="every run's metrics.json")
    p.add_argument("--unigram", nargs="*", default=[], help="future-lm-unigram outputs")
    p.add_argument("--settings", type=_json, default={}, help='JSON {"dataset", "baselines", "figure1b_words", ...}')
    p.add_argument("--out-dir", required=True, help="tables folder")
    p.add_argument("--figures-dir", required=True, help="figures folder")
    p.set_defaults(func=cmd_future_lm_tables)

    p = sub.add_parser("future-lm-human-sheet", help="blinded random sheet for the paper's human evaluation")
    p.add_argument("--generations", nargs="+", required=True, help="every run's generations.jsonl")
    p.add_argument("--sheet", required=True, help="sheet CSV to write (for raters)")
    p.add_argument("--key", required=True, help="key CSV to write (item -> model)")
    p.add_argument("--per-model", type=int, default=10, help="generations drawn per model")
    p.add_argument("--seed", type=int, default=0, help="seed of the draw and the order")
    p.set_defaults(func=cmd_future_lm_human_sheet)
