# Settings and input functions of the future language modeling stage (rules: future_lm.smk).
from tempoformer.future_lm.model_types import MODEL_TYPES as FL_MODEL_TYPES, NEEDS_CONTEXT as FL_NEEDS_CONTEXT
from tempoformer.future_lm.model_types import check_model_entry as fl_check_model_entry
from tempoformer.future_lm.model_types import resolve_baselines as fl_resolve_baselines

FL = config.get("future_lm", {})
FL_RESULTS = f"{RESULTS}/future_lm"
FL_DATASETS = FL.get("datasets", {})
FL_MODELS = FL.get("models", {})
FL_SEEDS = FL.get("seeds", [0])
FL_THREADS = FL.get("threads", config.get("threads", 1))
# every model is tested against each of these; the first also gets the fixed-bias (unigram) checks
FL_BASELINES = fl_resolve_baselines(FL, FL_MODELS) if FL else []
FL_BASELINE = FL_BASELINES[0] if FL_BASELINES else None
# Keys of a dataset entry that are the reader's spec (data.load_corpus); the rest are overrides.
FL_SPEC_KEYS = ("sources", "years", "filter", "cap")

for _name, _m in FL_MODELS.items():
    if _m.get("type") not in FL_MODEL_TYPES:
        raise ValueError(f"future_lm.models.{_name}: type {_m.get('type')!r} is not one of {FL_MODEL_TYPES}")
    fl_check_model_entry(_m, f"future_lm.models.{_name}")
for _name, _d in FL_DATASETS.items():
    for _m in _d.get("models", FL_MODELS):
        if _m not in FL_MODELS:
            raise ValueError(f"future_lm.datasets.{_name}.models names {_m!r}, which has no entry under future_lm.models")


wildcard_constraints:
    fl_dataset="|".join(FL_DATASETS) or "(?!)",
    fl_model="|".join(FL_MODELS) or "(?!)",
    fl_recent="[1-9][0-9]*",


def fl_dir(name):
    return f"{FL_RESULTS}/{name}"


def fl_path(path):
    """A source path: relative to the working directory, or else to the workflow (the embedded sample)."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    inside = os.path.join(workflow.basedir, path)
    return inside if os.path.exists(inside) else path


def fl_spec(name):
    spec = {k: v for k, v in FL_DATASETS[name].items() if k in FL_SPEC_KEYS}
    spec["sources"] = [{**s, "path": fl_path(s["path"])} for s in spec.get("sources", [])]
    return spec


def fl_source_paths(name):
    return [s["path"] for s in fl_spec(name)["sources"]]


def fl_models(name):
    return list(FL_DATASETS[name].get("models", FL_MODELS))


def fl_section(name, key):
    """A settings section: global, then the dataset's overrides."""
    value = FL.get(key)
    override = FL_DATASETS[name].get(key)
    if isinstance(value, dict) or isinstance(override, dict):
        return {**(value or {}), **(override or {})}
    return override if override is not None else value


def fl_settings(name, *keys):
    return json.dumps({key: fl_section(name, key) for key in keys}, sort_keys=True)


def fl_max_window(name):
    return max([int(FL_MODELS[m].get("window", 2)) for m in fl_models(name) if FL_MODELS[m]["type"] in FL_NEEDS_CONTEXT]
               or [2])


def fl_needs_context(name):
    return any(FL_MODELS[m]["type"] in FL_NEEDS_CONTEXT for m in fl_models(name))


def fl_device():
    return flag("device", FL.get("device"))


def fl_run_dir(name, model, seed):
    return f"{fl_dir(name)}/runs/{model}/seed{seed}"


def fl_all_metrics(name):
    return [f"{fl_run_dir(name, m, s)}/metrics.json" for m in fl_models(name) for s in FL_SEEDS]


def fl_all_generations(name):
    return [f"{fl_run_dir(name, m, s)}/generations.jsonl" for m in fl_models(name) for s in FL_SEEDS]


def fl_unigram_outputs(name):
    if FL_BASELINE not in fl_models(name) or not FL.get("unigram", {}).get("run", True):
        return []
    return [f"{fl_dir(name)}/unigram/seed{s}.json" for s in FL_SEEDS]


def fl_recent_years(name, model):
    """n of each grid point of a Baseline-n entry that starts from a scratch LM pretrained on the
    n most recent training years only (start: base with base_model: scratch; train.start_checkpoint)."""
    entry = FL_MODELS[model]
    if entry["type"] != "baseline_n" or entry.get("start", "base") != "base" \
            or (fl_section(name, "base_model") or "scratch") != "scratch":
        return []
    ns = entry.get("n", [])
    return sorted({int(n) for n in (ns if isinstance(ns, list) else [ns])})


def fl_pretrain_recent_seconds(w):
    """Pretraining (resources.smk's estimate) on the n most recent of the training years."""
    first, last = FL_DATASETS[w.fl_dataset].get("years", {}).get("train", [0, 0])
    return fl_fit_seconds(w.fl_dataset, "pretrain", min(int(w.fl_recent), last - first + 1) / (last - first + 1))


def fl_recent_pretrained(name, model):
    """{n: the checkpoint pretrained on the n most recent training years} of a Baseline-n entry."""
    return {n: f"{fl_dir(name)}/pretrained_recent{n}.pt" for n in fl_recent_years(name, model)}


def fl_model_inputs(w):
    d = fl_dir(w.fl_dataset)
    inputs = {"tokens": f"{d}/tokens.parquet", "vocab": f"{d}/vocab.json", "counts": f"{d}/corpus_counts.json",
              "frequency": f"{d}/frequency.npz"}
    if FL_MODELS[w.fl_model]["type"] in FL_NEEDS_CONTEXT:
        inputs["context"] = f"{d}/context.npz"
    return inputs


def fl_train_inputs(w):
    """fl_model_inputs, and Baseline-n's recent-years checkpoints (recent1, recent2, ...)."""
    recent = {f"recent{n}": path for n, path in fl_recent_pretrained(w.fl_dataset, w.fl_model).items()}
    return {**fl_model_inputs(w), **recent}


def fl_recent_flag(w):
    recent = fl_recent_pretrained(w.fl_dataset, w.fl_model)
    if not recent:
        return ""
    return flag("recent-pretrained", json.dumps({str(n): p for n, p in recent.items()}, sort_keys=True))


def fl_model_entry(w):
    return json.dumps({k: v for k, v in FL_MODELS[w.fl_model].items()}, sort_keys=True)


def fl_context_settings(name):
    return json.dumps({"tokenizer": fl_section(name, "tokenizer") or "minilm", "max_window": fl_max_window(name),
                       "shortcut": bool(fl_section(name, "shortcut")), "context": fl_section(name, "context")},
                      sort_keys=True)


# Fingerprints (as the train stage's, common.smk): what each job is made from, chained along the
# stage's DAG. A model's evaluation (metrics.json) and the unigram baselines (unigram/seed*.json)
# record theirs; one whose record is today's is never planned again, whatever the files' dates
# and whether the weights it was made from exist (they are not committed), and nor is its
# training; one made from other code, settings or data is (marker `.stale`).
def fl_numerics():
    """What else decides a trained model's numbers: threads, kernels, the device setting."""
    return [FL_THREADS, KERNELS, FL.get("device")]


def fl_corpus_fingerprint(name):
    return settings_digest("future-lm-corpus", code("future-lm-corpus"), json.dumps(fl_spec(name), sort_keys=True),
                           content_digest(fl_source_paths(name)))


def fl_tokens_fingerprint(name):
    return settings_digest("future-lm-tokenize", code("future-lm-tokenize"), fl_corpus_fingerprint(name),
                           *(fl_section(name, key) for key in ("tokenizer", "base_model", "min_count", "stopwords")))


def fl_frequency_fingerprint(name):
    return settings_digest("future-lm-frequency", code("future-lm-frequency"), fl_tokens_fingerprint(name),
                           fl_section(name, "smoothing"))


def fl_context_fingerprint(name):
    return settings_digest("future-lm-context", code("future-lm-context"), fl_tokens_fingerprint(name),
                           fl_context_settings(name), fl_numerics())


def fl_pretrain_fingerprint(name, recent=None):
    return settings_digest("future-lm-pretrain", code("future-lm-pretrain"), fl_tokens_fingerprint(name),
                           fl_settings(name, "base_model", "lm", "pretrain"), fl_section(name, "pretrain_seed") or 0,
                           recent, fl_numerics())


def fl_train_fingerprint(name, model, seed):
    context = fl_context_fingerprint(name) if FL_MODELS[model]["type"] in FL_NEEDS_CONTEXT else None
    return settings_digest("future-lm-train", code("future-lm-train"), fl_frequency_fingerprint(name), context,
                           fl_pretrain_fingerprint(name), [fl_pretrain_fingerprint(name, n)
                                                           for n in fl_recent_years(name, model)],
                           json.dumps(FL_MODELS[model], sort_keys=True), model,
                           fl_settings(name, "finetune", "shortcut", "base_model"), int(seed), fl_numerics())


def fl_evaluate_settings(name):
    return fl_settings(name, "tokenizer", "stopwords", "shortcut", "evaluation", "generation")


def fl_run_fingerprint(name, model, seed):
    """A model's evaluation (its metrics.json): its training's and the evaluation's own."""
    return settings_digest("future-lm-evaluate", code("future-lm-evaluate"), fl_train_fingerprint(name, model, seed),
                           fl_evaluate_settings(name), int(seed), fl_numerics())


def fl_unigram_settings(name):
    return fl_settings(name, "unigram", "evaluation", "shortcut")


def fl_unigram_fingerprint(name, seed):
    return settings_digest("future-lm-unigram", code("future-lm-unigram"),
                           fl_train_fingerprint(name, FL_BASELINE, seed), fl_unigram_settings(name), fl_numerics())


def fl_evaluate_inputs(w):
    d, run = fl_dir(w.fl_dataset), fl_run_dir(w.fl_dataset, w.fl_model, w.seed)
    inputs = {**fl_model_inputs(w), "corpus": f"{d}/corpus.parquet", "model": f"{run}/model.pt"}
    return inputs_by_record(inputs, f"{run}/metrics.json", fl_run_fingerprint(w.fl_dataset, w.fl_model, w.seed),
                            [f"{run}/scores.parquet", f"{run}/generations.jsonl"], f"{run}/.stale")


def fl_unigram_inputs(w):
    d = fl_dir(w.fl_dataset)
    inputs = {"tokens": f"{d}/tokens.parquet", "vocab": f"{d}/vocab.json", "counts": f"{d}/corpus_counts.json",
              "frequency": f"{d}/frequency.npz", "model": f"{fl_run_dir(w.fl_dataset, FL_BASELINE, w.seed)}/model.pt"}
    record = f"{d}/unigram/seed{w.seed}.json"
    return inputs_by_record(inputs, record, fl_unigram_fingerprint(w.fl_dataset, w.seed), [], stale_marker(record))


def fl_records_due():
    """The stale markers and missing records of every evaluation and unigram run (records_due)."""
    records = []
    for name in FL_DATASETS:
        records += [(f"{fl_run_dir(name, m, s)}/metrics.json", fl_run_fingerprint(name, m, s))
                    for m in fl_models(name) for s in FL_SEEDS]
        records += [(path, fl_unigram_fingerprint(name, s)) for path, s in zip(fl_unigram_outputs(name), FL_SEEDS)]
    return records_due(records)


def fl_tables(name):
    return [f"{TABLES}/{name}/future_lm_{t}.{ext}" for t in ("table1", "years", "table3", "beyond")
            for ext in ("md", "csv", "tex", "html")]


def fl_figures(name):
    return [f"{FIGURES}/{name}/future_lm_{f}.png" for f in ("figure3", "figure1b", "ppl_by_year")]


def fl_intermediates(name):
    """The Parquet, JSON and .npz files the stage's jobs write and later jobs read."""
    d = fl_dir(name)
    files = [f"{d}/{f}" for f in ("corpus.parquet", "corpus_counts.json", "tokens.parquet", "vocab.json",
                                  "frequency.npz", "context.npz")]
    files += [f"{fl_run_dir(name, m, s)}/{f}" for m in fl_models(name) for s in FL_SEEDS
              for f in ("train.json", "scores.parquet", "metrics.json")]
    return files + fl_unigram_outputs(name)


# Damaged intermediates (common.smk, set_aside_damaged): set aside before any job is planned, so
# the job that writes one runs again when a job that reads it runs.
for _name in FL_DATASETS:
    set_aside_damaged(*fl_intermediates(_name))
