# Input functions, wildcard constraints and paths shared by every stage.
import json
import os
import shlex

RESULTS = config["results"]
# Tables of this config: configs that share `results` (and so their cached runs) write their
# tables to different folders.
TABLES = config.get("tables", f"{RESULTS}/tables")
FIGURES = config.get("figures", f"{RESULTS}/figures")
DATASETS = config.get("datasets", {})
MODELS = config.get("models", {})
PACKAGE = os.path.join(workflow.basedir, "src", "tempoformer")
# `--use-conda` (cluster users): the pinned environment, with this package installed into it by
# envs/tempoformer.post-deploy.sh. Relative to the rule files.
CONDA_ENV = "../../envs/tempoformer.yaml"
# Numeric jobs start through `env` with these variables: the same kernels (and so the same
# numbers) on every x86-64 CPU with AVX2 (README, "What matches across machines").
from tempoformer import artefacts
from tempoformer.fingerprint import RunFingerprints, content_digest, settings_digest
from tempoformer.models.registry import MODEL_TYPES, validate_params

# The fingerprint chain of this config's runs (src/tempoformer/fingerprint.py).
FINGERPRINTS = RunFingerprints(config, PACKAGE)
KERNELS = FINGERPRINTS.kernels


wildcard_constraints:
    dataset="|".join(DATASETS) or "(?!)",
    model="|".join(MODELS) or "(?!)",
    window=r"\d+",
    fold=r"\d+",
    seed=r"\d+",


def code(subcommand, *modules):
    """What decides a rerun of a job running `tempoformer <subcommand>`: a digest of the code it
    runs, derived from the package's import graph (src/tempoformer/fingerprint.py), plus
    `modules` (those the model registry names for a model type). A rule carries it as a param."""
    return FINGERPRINTS.code(subcommand, *modules)


def _as_list(paths):
    return [paths] if isinstance(paths, str) else list(paths)


def external(paths):
    """Data from outside the workflow (a config path): judged by content, not mtime.

    A copied or re-mounted corpus gets new mtimes with the same bytes; by mtime alone that
    would rerun every job downstream of it. So the path is `ancient` and the rule carries
    `content_digest` of it as a param, which reruns the rule when a byte changes."""
    return [ancient(p) for p in _as_list(paths)]


model_type = FINGERPRINTS.model_type
model_spec = FINGERPRINTS.model_spec
model_threads = FINGERPRINTS.model_threads
switched_off = FINGERPRINTS.switched_off
dataset_models = FINGERPRINTS.dataset_models


# Start-up checks: every model a dataset runs exists, has a known type and valid params.
for _dataset, _spec in DATASETS.items():
    for _model in _spec["models"]:
        if _model not in MODELS:
            raise ValueError(f"config: datasets.{_dataset}.models names {_model!r}, which has no entry under models")
        for _fold in MODELS[_model].get("folds", []):
            if _fold >= config["n_folds"]:
                raise ValueError(f"config: models.{_model}.folds has {_fold}; folds are 0..{config['n_folds'] - 1}")
        if model_type(_model) not in MODEL_TYPES:
            raise ValueError(f"config: models.{_model}.type {model_type(_model)!r} is not one of {sorted(MODEL_TYPES)}")
        try:
            validate_params(_model, model_type(_model), MODELS[_model].get("params", {}))
        except ValueError as error:
            raise ValueError(f"config: {error}") from None
# Reader options against the reader's signature, the stage settings sections against their
# settings classes (names and ranges; src/tempoformer/config_checks.py).
from tempoformer.config_checks import check_dataset_overrides, check_encoder_backbones, check_reader_options
from tempoformer.config_checks import check_stage_settings

try:
    check_encoder_backbones(config)
    check_reader_options(DATASETS)
    check_stage_settings(config)
    check_dataset_overrides(config, os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml"))
except ValueError as error:
    raise ValueError(f"config: {error}") from None


run_dir = FINGERPRINTS.run_dir
model_folds = FINGERPRINTS.model_folds
model_seeds = FINGERPRINTS.model_seeds
configured_runs = FINGERPRINTS.configured_runs


def all_runs():
    return [f"{run_dir(*run)}/metrics.json" for run in configured_runs()]


# Fingerprints: what a file was made from (code, settings, the raw corpus's content), chained
# along the DAG. A finished run records its fingerprint in metrics.json; a run whose recorded
# fingerprint equals the current one is up to date whatever the files' dates, and whether or
# not the intermediate files exist (a fresh clone has the committed runs, not the posts), so
# it is never planned. Each rule's settings come from the same functions as its fingerprint.
ingest_settings = FINGERPRINTS.ingest_settings
folds_settings = FINGERPRINTS.folds_settings
train_settings = FINGERPRINTS.train_settings
raw_fingerprint = FINGERPRINTS.raw
posts_fingerprint = FINGERPRINTS.posts
run_fingerprint = FINGERPRINTS.run


def recorded_fingerprint(run):
    """The fingerprint a finished run recorded (None: not finished, or made before fingerprints)."""
    return fingerprint_in(f"{run}/metrics.json")


def fingerprint_in(record):
    """The fingerprint a job recorded in its JSON `record` (None: no such file, or none recorded)."""
    try:
        with open(record) as handle:
            return json.load(handle).get("fingerprint")
    except (FileNotFoundError, json.JSONDecodeError, AttributeError):
        return None


def record_is_current(record, fingerprint, files=()):
    """The job's JSON `record` holds today's `fingerprint` and its other `files` exist."""
    return fingerprint_in(record) == fingerprint and all(os.path.exists(f) for f in files)


def inputs_by_record(inputs, record, fingerprint, files, stale_marker):
    """A job's inputs as its record says (the other stages' training jobs; the train stage's
    own: train_inputs): all `ancient` and only those that exist where it is current
    (record_is_current: never planned again, whatever the inputs' dates or presence, as in a
    fresh clone), with `stale_marker` added where it was made from something else (planned
    again even where Snakemake has no record of it), as they are where it has no record."""
    if record_is_current(record, fingerprint, files):
        kept = {}
        for key, paths in inputs.items():
            present = [p for p in _as_list(paths) if os.path.exists(p)]
            if present:
                kept[key] = [ancient(p) for p in present] if isinstance(paths, list) else ancient(present[0])
        return kept
    if fingerprint_in(record) is not None:
        inputs["stale"] = stale_marker
    return inputs


def records_due(records):
    """Of (record, fingerprint) pairs, the stale ones' markers (`.stale` beside a run's record,
    `<name>.stale` for a record of its own) and the missing records: the tables alone do not make
    Snakemake remake a job whose record exists (runs_due)."""
    due = []
    for record, fingerprint in records:
        recorded = fingerprint_in(record)
        if recorded is not None and recorded != fingerprint:
            due.append(stale_marker(record))
        elif not os.path.exists(record):
            due.append(record)
    return due


def stale_marker(record):
    folder, name = os.path.split(record)
    return f"{folder}/.stale" if name == "metrics.json" else f"{record[:-len('.json')]}.stale"


def run_status(dataset, model, window, fold, seed):
    """"current" (its recorded fingerprint is today's and its predictions exist), "stale" (made
    from other code, settings or data, or its predictions lost) or "unfinished" (no recorded
    fingerprint: not run, or made before fingerprints; or its metrics.json or predictions.parquet
    found damaged and set aside while this DAG is built)."""
    run = run_dir(dataset, model, window, fold, seed)
    if set_aside_damaged(f"{run}/metrics.json", f"{run}/predictions.parquet"):
        return "unfinished"
    recorded = recorded_fingerprint(run)
    if recorded is None:
        return "unfinished"
    if recorded == run_fingerprint(dataset, model, window, fold, seed) \
            and os.path.exists(f"{run}/predictions.parquet"):
        return "current"
    return "stale"


def runs_due():
    """The files that make `all` train every configured run that is missing or stale.

    Snakemake does not remake a missing intermediate file whose consumer is up to date: with
    the committed tables newer than every input, a run added to the config (a fold, a seed) or
    made stale by a changed setting would never be planned through the aggregate rule alone.
    So `all` names them: a missing run's metrics.json, a stale run's marker (train_inputs), the
    record of a run whose metrics.json or predictions.parquet was damaged (set aside: it retrains),
    and a dataset's intermediate set aside as damaged (posts, folds, streams, embeddings), which
    is made again whether or not a run needs it now."""
    due = []
    for run in configured_runs():
        folder = run_dir(*run)
        status = run_status(*run)
        if status == "stale":
            due.append(f"{folder}/.stale")
        elif not os.path.exists(f"{folder}/metrics.json"):
            due.append(f"{folder}/metrics.json")
        elif status == "unfinished" and not os.path.exists(f"{folder}/predictions.parquet"):
            due.append(f"{folder}/predictions.parquet")
    due += [path for dataset in DATASETS for path in dataset_intermediates(dataset) if artefacts.was_set_aside(path)]
    return due


# Damaged artefacts (src/tempoformer/artefacts.py): a truncated or garbled Parquet, JSON or .npy
# file that a job wrote would pass for up to date, and the next job reading it would fail, again
# at every try. So while the DAG is built, each one the DAG relies on is checked (cheaply: a
# Parquet footer, a JSON parse, an .npy header and size; once per file) and a damaged one is
# renamed to <file>.damaged with a warning, so that Snakemake plans the job that makes it.
# Only the main Snakemake process does so: a job's own process (a cluster job) leaves files alone.
def set_aside_damaged(*paths):
    """Whether any of `paths` is damaged (each damaged one is set aside, now or earlier in this
    DAG build)."""
    if not workflow.is_main_process:
        return False
    return any([artefacts.set_aside_if_damaged(path) is not None for path in paths])


def dataset_intermediates(dataset):
    """The files the jobs make of a dataset's posts and later jobs read."""
    windows = sorted({int(window) for d, model, window, *_ in configured_runs()
                      if d == dataset and model_spec(model).needs_window})
    names = ["posts.parquet", "folds.parquet", "sbert.npy", "diversity.json"]
    return [f"{RESULTS}/{dataset}/{name}" for name in names + [f"streams_w{w}.parquet" for w in windows]]


# Before any job is planned: the rules that read these name them as plain inputs.
for _dataset in DATASETS:
    set_aside_damaged(*dataset_intermediates(_dataset))


# ingest stage
def raw_input(wildcards):
    spec = DATASETS[wildcards.dataset]
    if "synthetic" in spec:
        return f"{RESULTS}/raw/{wildcards.dataset}"
    return external(spec["path"]) if spec.get("path") else []


def raw_digest(wildcards):
    spec = DATASETS[wildcards.dataset]
    return content_digest(spec["path"]) if spec.get("path") and "synthetic" not in spec else ""


# train stage
def embeddings_file(dataset, model):
    """The embeddings a stream run reads: sbert.npy, or for a model whose path reads a reduction
    (`path_reduction: umap`, SWNU / Seq-Sig-Net) sbert.npy with that reduction appended, the
    reduce_embeddings rule's file (reduce.smk)."""
    reduction = FINGERPRINTS.path_reduction(model)
    if reduction is None:
        return f"{RESULTS}/{dataset}/sbert.npy"
    return f"{RESULTS}/{dataset}/sbert_{reduction['method']}{reduction['dimension']}_seed{reduction['seed']}.npy"


def train_inputs(w):
    spec = model_spec(w.model)
    inputs = {
        "posts": f"{RESULTS}/{w.dataset}/posts.parquet",
        "folds": f"{RESULTS}/{w.dataset}/folds.parquet",
    }
    if spec.needs_window:
        inputs["streams"] = f"{RESULTS}/{w.dataset}/streams_w{w.window}.parquet"
    if spec.needs_embeddings:
        inputs["embeddings"] = embeddings_file(w.dataset, w.model)
    status = run_status(w.dataset, w.model, w.window, w.fold, w.seed)
    set_aside_damaged(*inputs.values())
    if status == "current":
        # Up to date by content: the inputs' dates do not matter, nor whether they exist. One set
        # aside as damaged stays (it is made again, runs_due): the job keeps its inputs, and
        # Snakemake reruns it, as for any input remade under it.
        return {name: ancient(path) for name, path in inputs.items()
                if os.path.exists(path) or artefacts.was_set_aside(path)}
    if status == "stale":
        # Made from other code, settings or data: rerun, also where Snakemake's own record of
        # the run is missing (a fresh clone) and file dates would not tell.
        inputs["stale"] = f"{run_dir(w.dataset, w.model, w.window, w.fold, w.seed)}/.stale"
    return inputs


def flag(name, *values):
    """`--name v1 v2 ...` with each value quoted for the shell ("" without values): every path
    and name a rule passes to a shell is quoted (a results folder with spaces, a name from the
    config), here and with `:q` in the rules' shell commands."""
    values = [str(v) for v in values if v is not None and str(v) != ""]
    return f"--{name} " + " ".join(shlex.quote(v) for v in values) if values else ""


def optional_inputs(w, input):
    return " ".join(flag(name, input[name]) for name in ("streams", "embeddings") if name in input.keys())


# aggregate stage
def table_files(n):
    """Table n's files: md, csv and tex as data; html into the report with its caption."""
    return named_table_files(f"table{n}", f"Table {n}")


def named_table_files(stem, label):
    """{stem}.md, .csv and .tex as data; {stem}.html into the report, captioned by report/{stem}.rst."""
    files = {f"{stem}_{ext}": f"{TABLES}/{stem}.{ext}" for ext in ("md", "csv", "tex")}
    files[f"{stem}_html"] = report(f"{TABLES}/{stem}.html", caption=f"../report/{stem}.rst",
                                   category="TempoFormer tables", labels={"table": label})
    return files
