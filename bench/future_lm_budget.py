"""CPU cost of a future LM config, measured on its own corpus: seconds per training step, per
scored abstract, per generation and per encoded abstract, and the whole run's budget from them.

    python bench/future_lm_budget.py DIR --configfile config/future_lm_acl.yaml [--dataset acl]
        [--steps 6] [--eval-docs 24] [--generations 2] [--context-docs 16] [--lm JSON]
        [--base-model smollm2-135m [--chunk 256]] [--finetune-epochs N] [--types a,b]

DIR holds the dataset's corpus.parquet, corpus_counts.json, tokens.parquet and vocab.json (the
future-lm-corpus and future-lm-tokenize subcommands, a few seconds each; the README's CPU-scale
section has the commands). The LM is random (timing does not depend on its weights); the
contextual vectors are random (the LSTM's cost does not depend on their values), frequencies
are the corpus's. Times are CPU seconds of this process (time.process_time) with one torch
thread: the wall time on one free core. Wall seconds are printed beside them: on a busy machine
they are larger. `--lm` overrides the config's lm section (to size a config).

`--base-model NAME` (a pretrained causal LM, e.g. smollm2-135m: the 4-bit SmolLM2-135M-Instruct,
set up with scripts/setup_backbone.sh) measures that model instead of the config's: the corpus is
tokenised here with its tokenizer and whole vocabulary (restrict: false; DIR's tokens.parquet is
the config tokenizer's), the timed steps are batches of chunks of at most `--chunk` tokens (its
own context is far longer than an abstract), only the Baseline's step is timed unless `--types`
names more (the other types are then costed at the Baseline's rate: their bias layers are not
measured), there is no pretraining, and V_iw is costed as one forward pass of the LM over the
capped abstracts at the scoring rate (an encoder with the LM's tokenizer: the LM itself).
`--finetune-epochs` replaces the config's fine-tuning epochs in the budget (the paper: up to 10
with early stopping).

Budget (one seed), from the measured rates and the run's own counts of batches and pieces:
- pretrain: epochs x (training steps) + (epochs + 1) dev passes;
- per model and grid point: (epochs + 1) dev passes + epochs x training steps on its documents
  (Baseline-n: the n last training years);
- evaluate per model: the dev, test and further years scored once (the test year twice with
  `evaluation.chunked`), n_generate generations of max_tokens each (EOS is never taken: an upper
  bound) and their content METEOR against the test abstracts;
- context (once): the encoder over the capped abstracts of every year a history reads;
- unigram (once per seed): one pass over dev, test and further years.
Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from tempoformer.future_lm.biases import BiasSpec, TemporalLM, YearFeatures  # noqa: E402
from tempoformer.future_lm.data import YearSplits, read_corpus  # noqa: E402
from tempoformer.future_lm.evaluate import docs_of, token_nll  # noqa: E402
from tempoformer.future_lm.frequency import compute_frequency  # noqa: E402
from tempoformer.future_lm.generate import DecodeSettings, beam_sample  # noqa: E402
from tempoformer.future_lm.lm import build_lm  # noqa: E402
from tempoformer.future_lm.tokens import load_stopwords, load_tokenizer, read_tokens, read_vocab, tokenize_corpus  # noqa: E402
from tempoformer.future_lm.train import FitSettings, collate, make_batches  # noqa: E402


def timed(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def section(fl: dict, dataset: dict, key: str):
    value, override = fl.get(key), dataset.get(key)
    if isinstance(value, dict) or isinstance(override, dict):
        return {**(value or {}), **(override or {})}
    return override if override is not None else value


def grid_size(entry: dict) -> int:
    if entry["type"] == "baseline_n":
        return len(entry.get("n", [1]))
    if entry["type"] == "baseline":
        return 1
    return len(entry.get("alpha", [1.0]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--configfile", default=str(REPO / "config" / "future_lm_acl.yaml"))
    ap.add_argument("--dataset", default=None)
    ap.add_argument("--steps", type=int, default=6, help="timed training steps per model type (after one warm-up)")
    ap.add_argument("--eval-docs", type=int, default=24)
    ap.add_argument("--generations", type=int, default=2)
    ap.add_argument("--context-docs", type=int, default=16)
    ap.add_argument("--lm", type=json.loads, default=None, help="lm section override (JSON)")
    ap.add_argument("--types", default=None,
                    help="model types whose step is timed (default: all five; with a pretrained --base-model: baseline)")
    ap.add_argument("--base-model", default=None, help="a pretrained causal LM instead of the config's base_model")
    ap.add_argument("--chunk", type=int, default=256, help="pretrained base model: tokens per timed chunk")
    ap.add_argument("--finetune-epochs", type=int, default=None, help="fine-tuning epochs of the budget")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)

    fl = yaml.safe_load(Path(a.configfile).read_text())["future_lm"]
    name = a.dataset or next(iter(fl["datasets"]))
    ds = fl["datasets"][name]
    lm_cfg = a.lm or section(fl, ds, "lm")
    pre, fine = FitSettings.from_dict(section(fl, ds, "pretrain")), FitSettings.from_dict(section(fl, ds, "finetune"))
    if a.finetune_epochs is not None:
        fine = FitSettings.from_dict({**(section(fl, ds, "finetune") or {}), "epochs": a.finetune_epochs})
    base_model = a.base_model or section(fl, ds, "base_model") or "scratch"
    pretrained = base_model != "scratch"
    types = a.types or ("baseline" if pretrained else "baseline,frequency_nolstm,frequency,context,context2")
    ev, decode = section(fl, ds, "evaluation") or {}, DecodeSettings.from_dict(section(fl, ds, "generation"))
    ctx_cfg = section(fl, ds, "context") or {}
    models = {m: fl["models"][m] for m in ds.get("models", fl["models"])}

    d = Path(a.dir)
    if pretrained:  # its own tokenizer, whole vocabulary
        c0 = time.process_time()
        tokens, vocab, _ = tokenize_corpus(read_corpus(d / "corpus.parquet"), load_tokenizer(base_model),
                                           load_stopwords(None), restrict=False)
        print(f"tokenised {tokens.height} abstracts with {base_model}'s tokenizer: {time.process_time() - c0:.1f} cpu s")
    else:
        vocab = read_vocab(d / "vocab.json")
        tokens = read_tokens(d / "tokens.parquet")
    counts = json.loads((d / "corpus_counts.json").read_text())
    splits = YearSplits.from_dict(counts["splits"])
    docs = {s: docs_of(tokens, years=y) for s, y in splits.split_years().items()}
    freq = compute_frequency(tokens, len(vocab), vocab.eos, 1.0, {vocab.pad, vocab.unk, vocab.bos})
    years = [int(y) for y in freq["years"]]
    ctx = None
    if {"context", "context2"} & set(types.split(",")):  # random vectors, one year at a time (memory)
        rng = np.random.default_rng(0)
        vectors = np.empty((len(years), len(vocab), 384), dtype=np.float16)
        for i in range(len(years)):
            vectors[i] = rng.standard_normal((len(vocab), 384), dtype=np.float32)
        ctx = {"years": np.asarray(years), "vectors": vectors, "counts": freq["counts"]}
    torch.manual_seed(0)
    c0, w0 = time.process_time(), time.perf_counter()
    lm = build_lm(base_model, len(vocab), lm_cfg)
    context = min(lm.context, a.chunk) if pretrained else lm.context
    n_params = sum(p.numel() for p in lm.parameters())
    from tempoformer.backbones import BACKBONES

    what = f"{base_model} ({BACKBONES[base_model].model})" if base_model in BACKBONES else base_model
    print(f"config {a.configfile} dataset {name}; base model {what}" + ("" if pretrained else f", lm {json.dumps(lm_cfg)}")
          + f"; {n_params / 1e6:.2f}M parameters, vocabulary {len(vocab)}, chunks of {context} tokens; "
          f"built in {time.process_time() - c0:.1f} cpu s ({time.perf_counter() - w0:.1f} wall); "
          f"load average {os.getloadavg()[0]:.1f}")

    def batches_of(train_docs, batch_size):
        b = make_batches(train_docs, vocab.bos, vocab.eos, context, batch_size, np.random.default_rng(0))
        return b, sum(sum(len(c) - 1 for c in items) for _, items in b)

    # ---- training steps per model type
    step_cpu, rows = {}, []
    train_batches, train_tokens = batches_of(docs["train"], fine.batch_size)
    for t in types.split(","):
        spec = BiasSpec(type=t, alpha=1.0, alpha_learned=t == "context2")  # the paper: α only in Eq. 10
        model = TemporalLM(lm, spec, YearFeatures(freq, ctx, splits.train[1], 2))
        opt = torch.optim.Adam([{"params": model.lm_parameters(), "lr": 1e-4},
                                {"params": model.new_parameters() or [torch.zeros(1, requires_grad=True)], "lr": 1e-3}])
        model.train()
        cpu, wall, toks = [], [], []
        for i, (year, items) in enumerate(train_batches[:a.steps + 1]):
            def step():
                ids, targets = collate(items, vocab.pad)
                logits, _ = model.logits(ids, year)
                loss = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), targets, ignore_index=-100)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            _, c, w = timed(step)
            if i:  # the first step warms up
                cpu.append(c), wall.append(w), toks.append(sum(len(x) - 1 for x in items))
        step_cpu[t] = sum(cpu) / sum(toks)  # CPU seconds per training token
        rows.append((t, np.mean(cpu), np.mean(wall), np.mean(toks), 1e3 * step_cpu[t]))
        lm.train()
    print(f"\ntraining steps (batch {fine.batch_size} chunks, context {context}; mean over {a.steps} steps)")
    print(f"{'model type':18} {'cpu s/step':>10} {'wall s/step':>11} {'tokens/step':>11} {'cpu ms/token':>12}")
    for r in rows:
        print(f"{r[0]:18} {r[1]:10.3f} {r[2]:11.3f} {r[3]:11.0f} {r[4]:12.3f}")

    # ---- scoring abstracts (dev passes, evaluation)
    base = TemporalLM(lm, BiasSpec("baseline")).eval()
    sample = docs["dev"][:a.eval_docs]
    _, c, w = timed(lambda: token_nll(base, sample, vocab.bos, vocab.eos, ev.get("stride"),
                                      int(ev.get("batch_size", 8))))
    eval_per_token = c / sum(len(x.ids) + 1 for x in sample)
    print(f"\nscoring: {len(sample)} dev abstracts, {c:.2f} cpu s ({w:.2f} wall), {1e3 * eval_per_token:.3f} cpu ms/token")

    # ---- generation
    gens = []
    for i in range(a.generations):
        # EOS never matches (-1): every generation runs to max_tokens, an upper bound
        ids, c, w = timed(lambda i=i: beam_sample(base, splits.test, vocab.bos, -1, decode, i))
        gens.append((c, w, len(ids)))
    gen_cpu = float(np.mean([g[0] for g in gens]))
    print(f"generation ({decode.beams} beams, max {decode.max_tokens} tokens): {gen_cpu:.2f} cpu s per sample "
          f"({np.mean([g[1] for g in gens]):.2f} wall, {np.mean([g[2] for g in gens]):.0f} tokens: no EOS, an upper bound)")

    # ---- content METEOR: each generation against every test abstract (real abstracts stand in for generations)
    from tempoformer.future_lm.evaluate import content_meteor

    corpus = read_corpus(d / "corpus.parquet")
    refs = corpus.filter(corpus["year"] == splits.test)["text"].to_list()
    refs = refs[: ev["cm_references"]] if ev.get("cm_references") else refs
    hyps = corpus.filter(corpus["year"] == splits.dev)["text"].to_list()[:2]
    _, c, w = timed(lambda: content_meteor(hyps, refs, load_stopwords(None)))
    cm_cpu = c / len(hyps)
    print(f"content METEOR: {cm_cpu:.2f} cpu s per generation against {len(refs)} references ({w / len(hyps):.2f} wall)")

    # ---- context encoder
    ctx_years = sorted({y for s in splits.split_years().values() for yy in s for y in range(yy - 2, yy)})
    per_year = {int(y): int(n) for y, n in zip(*np.unique(corpus["year"].to_numpy(), return_counts=True))}
    cap = ctx_cfg.get("cap_per_year")
    ctx_docs = sum(min(per_year.get(y, 0), cap or 10 ** 9) for y in ctx_years)
    ctx_cpu = None
    if pretrained:  # one forward pass of the LM over them, at the scoring rate
        ctx_cpu = eval_per_token * float(np.mean([len(x.ids) + 2 for x in docs["train"]]))
        print(f"context encoder (V_iw) costed as the LM's forward pass: {ctx_cpu:.3f} cpu s per abstract; "
              f"{ctx_docs} abstracts over years {ctx_years[0]}-{ctx_years[-1]}")
    elif a.context_docs:
        from tempoformer.future_lm.context import load_encoder, mean_embeddings

        info = load_tokenizer("minilm")
        enc = load_encoder("minilm")
        texts = corpus.filter(corpus["year"] == splits.dev)["text"].to_list()[:a.context_docs]
        tids = [info.tokenizer.encode(t, add_special_tokens=False).ids for t in texts]
        _, c, w = timed(lambda: mean_embeddings(enc, tids, vocab, info.bos, info.eos, int(ctx_cfg.get("max_length", 256)),
                                                int(ctx_cfg.get("batch_size", 16))))
        ctx_cpu = c / len(texts)
        print(f"context encoder: {ctx_cpu:.3f} cpu s per abstract ({w / len(texts):.3f} wall); "
              f"{ctx_docs} abstracts over years {ctx_years[0]}-{ctx_years[-1]}")

    # ---- budget
    def dev_pass():
        return eval_per_token * sum(len(x.ids) + 1 for x in docs["dev"])

    def fit_cost(train_docs, s: FitSettings, t):
        _, n_tok = batches_of(train_docs, s.batch_size)
        return (s.epochs + 1) * dev_pass() + s.epochs * n_tok * step_cpu.get(t, step_cpu["baseline"])

    score_all = eval_per_token * sum(len(x.ids) + 1 for s in ("dev", "test", "future") for x in docs[s])
    if ev.get("chunked"):  # the authors' chunked perplexity: one more pass over the test year
        score_all += eval_per_token * sum(len(x.ids) + 1 for x in docs["test"])
    n_gen = int(ev.get("n_generate", 0))
    lines = [("pretrain", 0.0 if pretrained else fit_cost(docs["train"], pre, "baseline"))]
    if any(m["type"] in ("context", "context2") for m in models.values()) and ctx_cpu:
        lines.append(("context (V_iw)", ctx_docs * ctx_cpu))
    for m, entry in models.items():
        t = entry["type"]
        step_type = "baseline" if t == "baseline_n" else t
        if t == "baseline_n":
            train = sum(fit_cost([x for x in docs["train"] if x.year > splits.train[1] - n], fine, step_type)
                        for n in entry.get("n", [1]))
        else:
            train = grid_size(entry) * fit_cost(docs["train"], fine, step_type)
        lines.append((f"train {m}", train))
        lines.append((f"evaluate {m}", score_all + n_gen * (gen_cpu + cm_cpu)))
    if (fl.get("unigram") or {}).get("run", True):
        lines.append(("unigram", score_all))
    total = sum(c for _, c in lines)
    print(f"\nbudget for one seed (cpu seconds = wall seconds on one free core), fine-tuning {fine.epochs} epoch(s) "
          f"+ {fine.epochs + 1} dev passes per model and grid point; train {len(docs['train'])} abstracts, "
          f"{train_tokens} training tokens per epoch, {len(train_batches)} batches; dev {len(docs['dev'])}, "
          f"test {len(docs['test'])}, further {len(docs['future'])}")
    for label, c in lines:
        print(f"  {label:28} {c / 60:8.1f} min")
    seeds = len(fl.get("seeds", [0]))
    per_seed = total - lines[0][1] - sum(c for label, c in lines if label.startswith("context"))
    print(f"  {'total, 1 seed':28} {total / 3600:8.2f} h")
    print(f"  {'total, 3 seeds':28} {(total + 2 * per_seed) / 3600:8.2f} h   (pretrain and context once)")
    print(f"  (config seeds: {seeds})")
    unmeasured = sorted({m["type"] for m in models.values()} - set(step_cpu) - {"baseline_n"})
    if unmeasured:
        print(f"  (steps of {', '.join(unmeasured)} costed at the Baseline's rate: not timed, see --types)")


if __name__ == "__main__":
    main()
