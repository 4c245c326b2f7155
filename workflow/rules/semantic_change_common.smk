# Settings and input functions of the semantic change stage (rules: semantic_change.smk).
from tempoformer.semantic_change.methods import METHODS as SC_METHOD_SPECS

SC = config.get("semantic_change", {})
SC_RESULTS = f"{RESULTS}/semantic_change"
SC_DATASETS = SC.get("datasets", {})
SC_METHODS = SC.get("methods", [])
SC_SEEDS = SC.get("seeds", [0])
SC_THREADS = SC.get("threads", config.get("threads", 1))
# Keys of a dataset entry that are not part of the reader's spec.
SC_DATASET_EXTRA = ("paper_column", "synthetic", "training", "scoring", "attention")

for _m in SC_METHODS:
    if _m not in SC_METHOD_SPECS:
        raise ValueError(f"semantic_change.methods: unknown method {_m!r}; one of {sorted(SC_METHOD_SPECS)}")


wildcard_constraints:
    sc_dataset="|".join(SC_DATASETS) or "(?!)",
    sc_method="|".join(SC_METHODS) or "(?!)",


def sc_is_synthetic(name):
    return SC_DATASETS[name].get("format") == "synthetic"


def sc_data_dir(name):
    return f"{SC_RESULTS}/{name}/data"


def sc_data_spec(name):
    """The reader's spec (data.load_dataset) as JSON."""
    if sc_is_synthetic(name):
        return json.dumps({"format": "synthetic", "path": sc_data_dir(name)})
    spec = {k: v for k, v in SC_DATASETS[name].items() if k not in SC_DATASET_EXTRA}
    return json.dumps(spec)


def sc_external_files(name):
    """The files a real dataset is read from (the release's truth, its corpora)."""
    spec = SC_DATASETS[name]
    files = []
    if spec.get("release"):
        files += [f"{spec['release']}/targets.txt"]
    if spec.get("format") == "small_corpora":
        from tempoformer.semantic_change.data import SMALL_CORPORA

        files += [f"{spec['small_dir']}/{spec['language']}/{f}" for f in SMALL_CORPORA[spec["language"]]["files"]]
    return files + [c for c in spec.get("corpora") or [] if os.path.isfile(c)]


def sc_data_inputs(w):
    """The files a dataset is read from: editing the truth or a corpus reruns its jobs."""
    if sc_is_synthetic(w.sc_dataset):
        return {"data": f"{sc_data_dir(w.sc_dataset)}/targets.txt"}
    return {"data": external(sc_external_files(w.sc_dataset))}


def sc_data_digest(w):
    return "" if sc_is_synthetic(w.sc_dataset) else content_digest(sc_external_files(w.sc_dataset))


def sc_section(name, key):
    """A settings section (training, scoring, attention): global, then the dataset's overrides."""
    return {**SC.get(key, {}), **SC_DATASETS[name].get(key, {})}


def sc_settings(name, *sections):
    return json.dumps({"backbone": SC.get("backbone", "minilm"),
                       **{key: sc_section(name, key) for key in sections}})


def sc_device():
    return flag("device", SC.get("device"))


def sc_run_dir(name, method, seed):
    return f"{SC_RESULTS}/{name}/{method}/seed{seed}"


def sc_all_metrics():
    return [f"{sc_run_dir(name, method, seed)}/metrics.json"
            for name in SC_DATASETS for method in SC_METHODS for seed in SC_SEEDS]


def sc_score_inputs(w):
    inputs = sc_data_inputs(w)
    if SC_METHOD_SPECS[w.sc_method]["train"]:
        inputs["model"] = f"{sc_run_dir(w.sc_dataset, w.sc_method, w.seed)}/model.pt"
    return inputs


# Damaged run records (common.smk, set_aside_damaged): a truncated or garbled metrics.json is set
# aside before any job is planned, so the job that writes it runs again when the tables read it.
set_aside_damaged(*sc_all_metrics())
