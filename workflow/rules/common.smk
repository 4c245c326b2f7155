# Input functions, wildcard constraints and paths shared by every stage.
import functools
import json
import os

RESULTS = config["results"]
# Tables of this config: configs that share `results` (and so their cached runs) write their
# tables to different folders.
TABLES = config.get("tables", f"{RESULTS}/tables")
FIGURES = config.get("figures", f"{RESULTS}/figures")
DATASETS = config.get("datasets", {})
MODELS = config.get("models", {})
PACKAGE = os.path.join(workflow.basedir, "src", "tempoformer")


wildcard_constraints:
    dataset="|".join(DATASETS) or "(?!)",
    model="|".join(MODELS) or "(?!)",
    window=r"\d+",
    fold=r"\d+",
    seed=r"\d+",


def code(*modules):
    """Package modules a rule runs: editing one reruns exactly the rules that list it."""
    return [os.path.join(PACKAGE, m) for m in modules]


def _as_list(paths):
    return [paths] if isinstance(paths, str) else list(paths)


def external(paths):
    """Data from outside the workflow (a config path): judged by content, not mtime.

    A copied or re-mounted corpus gets new mtimes with the same bytes; by mtime alone that
    would rerun every job downstream of it. So the path is `ancient` and the rule carries
    `content_digest` of it as a param, which reruns the rule when a byte changes."""
    return [ancient(p) for p in _as_list(paths)]


def content_digest(paths):
    """sha1 over every file under `paths` (relative names and bytes), in a stable order."""
    return _content_digest(tuple(_as_list(paths)))


@functools.lru_cache(maxsize=None)
def _content_digest(paths):
    # Every job of a dataset asks for the same digest while the DAG is built: read the files once.
    import hashlib

    digest = hashlib.sha1()
    for root in paths:
        if os.path.isfile(root):
            files, base = [root], os.path.dirname(root)
        else:
            files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
            base = root
        for path in files:
            digest.update(os.path.relpath(path, base).encode() + b"\0")
            with open(path, "rb") as handle:
                digest.update(hashlib.sha1(handle.read()).digest())
    return digest.hexdigest()


# What each model type's training job runs, beyond the shared training code.
MODEL_CODE = {
    "random": [],
    "llm": ["llm/__init__.py", "llm/predict.py", "llm/prompts.py", "llm/generate.py", "llm/bucketing.py"],
    "bert": ["models/post_transformer.py", "models/padding.py"],
    "roberta": ["models/post_transformer.py", "models/padding.py"],
    "ffn_history": ["models/ffn_history.py"],
    "bilstm": ["models/bilstm.py"],
    "swnu": ["models/swnu.py", "models/signature.py"],
    "seqsignet": ["models/seqsignet.py", "models/swnu.py", "models/signature.py"],
    "tempoformer": ["models/tempoformer.py", "models/rotary.py", "models/padding.py"],
}
TRAIN_CODE = ["training/run.py", "training/loop.py", "training/losses.py", "training/metrics.py", "device.py"]
EMBEDDING_MODELS = {"ffn_history", "bilstm", "swnu", "seqsignet"}
WINDOW_MODELS = EMBEDDING_MODELS | {"tempoformer", "llm"}
GPU_MODELS = {"tempoformer", "bert", "roberta", "llm"}


def model_type(model):
    """A model entry's type: its `type` key, or its name (`tempoformer_no_rope: {type: tempoformer}`)."""
    return MODELS[model].get("type", model)


def model_threads(model):
    return MODELS[model].get("threads", config["threads"])


for _dataset, _spec in DATASETS.items():
    for _model in _spec["models"]:
        if _model not in MODELS:
            raise ValueError(f"config: datasets.{_dataset}.models names {_model!r}, which has no entry under models")
        for _fold in MODELS[_model].get("folds", []):
            if _fold >= config["n_folds"]:
                raise ValueError(f"config: models.{_model}.folds has {_fold}; folds are 0..{config['n_folds'] - 1}")
        if model_type(_model) not in MODEL_CODE:
            raise ValueError(f"config: models.{_model}.type {model_type(_model)!r} is not one of {sorted(MODEL_CODE)}")


def run_dir(dataset, model, window, fold, seed):
    return f"{RESULTS}/{dataset}/runs/{model}/w{window}/fold{fold}/seed{seed}"


def model_folds(model):
    """Folds a model runs: all, or its `folds` (a CPU budget: the tables count the runs per cell)."""
    return MODELS[model].get("folds", list(range(config["n_folds"])))


def model_seeds(model):
    return MODELS[model].get("seeds", config["seeds"])


def all_runs():
    return [
        f"{run_dir(dataset, model, window, fold, seed)}/metrics.json"
        for dataset, spec in DATASETS.items()
        for model in spec["models"]
        for window in MODELS[model]["windows"]
        for fold in model_folds(model)
        for seed in model_seeds(model)
    ]
