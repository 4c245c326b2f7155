# Settings and input functions of the DCWE stage (rules: dcwe.smk).
from types import SimpleNamespace

from tempoformer.dcwe.options import VARIANTS as DC_VARIANT_MODES, DCWETrainSettings as DcTrainSettings
from tempoformer.dcwe.cli import selected_point as dc_selected_point

DC = config.get("dcwe", {})
DC_RESULTS = f"{RESULTS}/dcwe"
DC_DATASETS = DC.get("datasets", {})
DC_SEEDS = DC.get("seeds", [0])
# The seeds that search the grid (null: every seed). Every other seed trains each variant once,
# at the point with the best dev metric on the first of them (run folder `selected`).
DC_GRID_SEEDS = DC.get("grid_seeds") or DC_SEEDS
DC_THREADS = DC.get("threads", config.get("threads", 1))
DC_SECTIONS = ("model", "node2vec", "warmup", "training", "sentiment", "evaluation")
# Keys of a dataset entry that are not part of the reader's spec.
DC_DATASET_EXTRA = ("paper_column", "variants", "sentiment_variants", "semantic_change_dataset", "max_length",
                    "vectors", "grid", "extrapolation", "diffusion", *DC_SECTIONS)
DC_SELECTED = "selected"  # the run folder of a seed that trains at another seed's best grid point


def dc_variants(name):
    """MLM variants of a dataset (Tables 2-4)."""
    return DC_DATASETS[name].get("variants", DC.get("variants", []))


def dc_sentiment_variants(name):
    """Sentiment variants of a dataset (Table 5); a dataset with labels names them."""
    return DC_DATASETS[name].get("sentiment_variants", [])


def dc_extrapolation(name):
    """{variants, seeds} of the held-out-month test of a dataset (the dataset's, else dcwe's; none by default)."""
    spec = {**(DC.get("extrapolation") or {}), **(DC_DATASETS[name].get("extrapolation") or {})}
    return {"variants": spec.get("variants", []), "seeds": spec.get("seeds", DC_SEEDS[:1])}


def dc_diffusion(name):
    """The diffusion analysis of a dataset: {variants, seeds} and its settings (dcwe/diffusion.py),
    the dataset's updating dcwe's; no variant by default."""
    spec = {**(DC.get("diffusion") or {}), **(DC_DATASETS[name].get("diffusion") or {})}
    return {"variants": spec.get("variants", []), "seeds": spec.get("seeds", DC_SEEDS[:1]),
            "settings": {k: v for k, v in spec.items() if k not in ("variants", "seeds")}}


if not set(DC_GRID_SEEDS) <= set(DC_SEEDS):
    raise ValueError(f"dcwe.grid_seeds {DC_GRID_SEEDS} must be among dcwe.seeds {DC_SEEDS}")
for _name, _spec in DC_DATASETS.items():
    for _what, _get in (("extrapolation", dc_extrapolation), ("diffusion", dc_diffusion)):
        _extra = [v for v in _get(_name)["variants"] if v not in _spec.get("variants", DC.get("variants", []))]
        if _extra:
            raise ValueError(f"dcwe.datasets.{_name}.{_what}: variants {_extra} are not among the dataset's "
                             "MLM variants (the test trains at their best grid point)")
        _seeds = [s for s in _get(_name)["seeds"] if s not in DC_SEEDS]
        if _seeds:
            raise ValueError(f"dcwe.datasets.{_name}.{_what}: seeds {_seeds} are not among dcwe.seeds {DC_SEEDS}")
    if dc_diffusion(_name)["variants"] and (_spec.get("semantic_change_dataset")
                                            or _spec.get("format") == "semantic_change"):
        raise ValueError(f"dcwe.datasets.{_name}.diffusion: a semantic_change corpus has no social units")
    if dc_diffusion(_name)["variants"] and not dc_diffusion(_name)["settings"].get("pairs"):
        raise ValueError(f"dcwe.datasets.{_name}.diffusion: no pairs ([word, associate]) to analyse")
    _ref = _spec.get("semantic_change_dataset")
    if _ref is not None and _ref not in config.get("semantic_change", {}).get("datasets", {}):
        raise ValueError(f"dcwe.datasets.{_name}.semantic_change_dataset: {_ref!r} is not a semantic_change dataset")
    if (_ref is not None or _spec.get("format") == "semantic_change") and any(
            DC_VARIANT_MODES[v] in ("full", "social_only") for v in dc_variants(_name) + dc_sentiment_variants(_name)):
        raise ValueError(f"dcwe.datasets.{_name}: a semantic_change corpus has no social units; "
                         "variants dcwe and ta need them (use cwe, sa)")


wildcard_constraints:
    dc_dataset="|".join(DC_DATASETS) or "(?!)",
    dc_variant="|".join(DC_VARIANT_MODES),
    dc_point=rf"lr[^/]+|{DC_SELECTED}",


def dc_points(name, variant, section):
    """{point: (lr, lambda_a)} of one (dataset, variant); section: training (MLM) or sentiment.

    A point is a (lr, lambda_a) pair of the grid (`grid` of the dataset, else of the dcwe section)
    when the grid names the variant (grid.variants for MLM, grid.sentiment_variants for the
    sentiment task), else the one pair of the section's settings. CWE has no lambda_a."""
    grid = DC_DATASETS[name].get("grid", DC.get("grid")) or {}
    base = {**DC.get(section, {}), **DC_DATASETS[name].get(section, {})}
    searched = variant in grid.get("variants" if section == "training" else "sentiment_variants", [])
    fields = DcTrainSettings.__dataclass_fields__
    lrs = grid.get("lr") if searched and grid.get("lr") else [base.get("lr", fields["lr"].default)]
    lambdas = grid.get("lambda_a") if searched and grid.get("lambda_a") and variant != "cwe" \
        else [base.get("lambda_a", fields["lambda_a"].default)]
    return {f"lr{lr:g}" + ("" if variant == "cwe" else f"_la{la:g}"): (lr, la) for lr in lrs for la in lambdas}


def dc_seed_points(name, variant, section, seed):
    """The run folders of one (dataset, variant, seed): every grid point on a grid seed, else `selected`."""
    if int(seed) in DC_GRID_SEEDS:
        return list(dc_points(name, variant, section))
    return [DC_SELECTED]


def dc_grid_metrics(name, variant, section="training"):
    """The first grid seed's runs of a variant: a `selected` run trains at their best point."""
    seed = DC_GRID_SEEDS[0]
    if section == "training":
        return [f"{dc_run_dir(name, variant, seed, p)}/metrics.json" for p in dc_points(name, variant, section)]
    return [f"{dc_sentiment_dir(name, variant, seed, p)}/metrics.json" for p in dc_points(name, variant, section)]


def dc_data_dir(name):
    return f"{DC_RESULTS}/{name}/data"


def dc_data_spec(name):
    """The reader's spec (dcwe.data.load_corpus) as JSON."""
    spec = DC_DATASETS[name]
    if spec.get("semantic_change_dataset"):
        return json.dumps({"format": "semantic_change", "data": json.loads(sc_data_spec(spec["semantic_change_dataset"])),
                           **{k: v for k, v in spec.items() if k == "split_seed"}})
    return json.dumps({k: v for k, v in spec.items() if k not in DC_DATASET_EXTRA})


def dc_external_files(name):
    spec = DC_DATASETS[name]
    if spec["format"] == "csv":
        return [spec["docs"]] + ([spec["edges"]] if spec.get("edges") else [])
    if spec["format"] == "release":
        return [spec["path"]]
    if spec["format"] in ("chitchat", "chitchat_rating") and spec.get("path"):
        return [spec["path"]]
    if spec["format"] == "semantic_change":  # a load_dataset spec: its release and corpus folders
        data = spec["data"]
        return [p for p in (data.get("release") or data.get("path"),
                            f"{data['small_dir']}/{data['language']}" if data.get("small_dir") else None,
                            *(data.get("corpora") or [])) if p]
    return []  # the packaged chitchat corpus: its version is pinned with the environment


def dc_data_inputs(w):
    spec = DC_DATASETS[w.dc_dataset]
    if spec.get("semantic_change_dataset"):
        return sc_data_inputs(SimpleNamespace(sc_dataset=spec["semantic_change_dataset"]))
    return {"data": external(dc_external_files(w.dc_dataset))}


def dc_data_digest(w):
    spec = DC_DATASETS[w.dc_dataset]
    if spec.get("semantic_change_dataset"):
        return sc_data_digest(SimpleNamespace(sc_dataset=spec["semantic_change_dataset"]))
    return content_digest(dc_external_files(w.dc_dataset))


def dc_settings(name, *sections, point=None):
    """Settings JSON: the global sections, each updated by the dataset's own; `point` (section,
    variant, point name) sets that section's lr and lambda_a to the grid point's."""
    spec = DC_DATASETS[name]
    settings = {"backbone": DC.get("backbone", "minilm"),
                "max_length": spec.get("max_length", DC.get("max_length", 128)),
                **{key: {**DC.get(key, {}), **spec.get(key, {})} for key in sections}}
    if point is not None and point[2] != DC_SELECTED:  # `selected`: the job reads the point from --select-from
        section, variant, point_name = point
        lr, lambda_a = dc_points(name, variant, section)[point_name]
        settings[section].update(lr=lr, lambda_a=lambda_a)
    return json.dumps(settings)


def dc_device():
    return flag("device", DC.get("device"))


def dc_run_dir(name, variant, seed, point):
    return f"{DC_RESULTS}/{name}/seed{seed}/{variant}/{point}"


def dc_all_metrics():
    return [f"{dc_run_dir(name, variant, seed, point)}/metrics.json"
            for name in DC_DATASETS for variant in dc_variants(name) for seed in DC_SEEDS
            for point in dc_seed_points(name, variant, "training", seed)]


def dc_sentiment_dir(name, variant, seed, point):
    return f"{DC_RESULTS}/{name}/seed{seed}/sentiment/{variant}/{point}"


def dc_all_sentiment_metrics():
    return [f"{dc_sentiment_dir(name, variant, seed, point)}/metrics.json"
            for name in DC_DATASETS for variant in dc_sentiment_variants(name) for seed in DC_SEEDS
            for point in dc_seed_points(name, variant, "sentiment", seed)]


def dc_extrapolation_dir(name, variant, seed):
    return f"{DC_RESULTS}/{name}/seed{seed}/extrapolation/{variant}"


def dc_all_extrapolation_metrics():
    return [f"{dc_extrapolation_dir(name, variant, seed)}/metrics.json" for name in DC_DATASETS
            for variant in dc_extrapolation(name)["variants"] for seed in dc_extrapolation(name)["seeds"]]


def dc_diffusion_dir(name, variant, seed):
    return f"{DC_RESULTS}/{name}/seed{seed}/diffusion/{variant}"


def dc_diffusion_figures(name, variant, seed):
    return [f"{FIGURES}/dcwe/{name}/figure{n}_{variant}_seed{seed}.png" for n in (4, 5)]


def dc_all_diffusion():
    """(metrics.json, figures) of every configured diffusion analysis."""
    out = []
    for name in DC_DATASETS:
        for variant in dc_diffusion(name)["variants"]:
            for seed in dc_diffusion(name)["seeds"]:
                out.append((f"{dc_diffusion_dir(name, variant, seed)}/metrics.json",
                            dc_diffusion_figures(name, variant, seed)))
    return out


def dc_vectors_path(name):
    """The units' input vectors: node2vec computed here, or read from the dataset's `vectors` file."""
    stem = "vectors" if DC_DATASETS[name].get("vectors") else "node2vec"
    return f"{DC_RESULTS}/{name}/{stem}.npy"


def dc_vector_inputs(w):
    if DC_VARIANT_MODES[w.dc_variant] in ("full", "social_only"):
        return {"vectors": dc_vectors_path(w.dc_dataset)}
    return {}


def dc_select_inputs(w, section="training"):
    """A `selected` run reads the first grid seed's runs of its variant."""
    return {"select": dc_grid_metrics(w.dc_dataset, w.dc_variant, section)} if w.dc_point == DC_SELECTED else {}


# Fingerprints (as the train stage's, common.smk): what a DCWE run is made from, chained along the
# stage's DAG (data -> node2vec / warm-up -> run -> a `selected` run, the extrapolation, the
# diffusion analysis). A finished run records its fingerprint in metrics.json; one whose record
# equals today's is up to date whatever the files' dates and whether or not its inputs exist (a
# fresh clone has the committed records, not the warm-ups nor the weights), so it is never
# planned; one made from other code, settings or data reruns (marker `.stale`).
def dc_data_fingerprint(name):
    return settings_digest("dcwe-data", code("dcwe-data"), dc_data_spec(name),
                           dc_data_digest(SimpleNamespace(dc_dataset=name)), DC.get("backbone", "minilm"))


def dc_node2vec_settings(name):
    return json.dumps({**DC.get("node2vec", {}), **DC_DATASETS[name].get("node2vec", {})})


def dc_vectors_fingerprint(name):
    if DC_DATASETS[name].get("vectors"):
        return settings_digest("dcwe-vectors", code("dcwe-vectors"), dc_data_fingerprint(name),
                               content_digest(DC_DATASETS[name]["vectors"]))
    return settings_digest("dcwe-node2vec", code("dcwe-node2vec"), dc_data_fingerprint(name),
                           dc_node2vec_settings(name), DC.get("node2vec_seed", 0), KERNELS)


def dc_numerics():
    """What else decides a trained model's numbers: threads, kernels, the device setting."""
    return [DC_THREADS, KERNELS, DC.get("device")]


def dc_warmup_fingerprint(name, seed, holdout=False):
    return settings_digest("dcwe-warmup", code("dcwe-warmup"), dc_data_fingerprint(name),
                           dc_settings(name, "warmup"), int(seed), holdout, dc_numerics())


def dc_run_fingerprint(name, kind, variant, seed, point=None):
    """A training run's: kind train (MLM, Tables 2-4), sentiment (Table 5) or extrapolate."""
    section = "sentiment" if kind == "sentiment" else "training"
    if kind == "extrapolate":
        settings, warmup = dc_settings(name, "model", "training", "evaluation"), dc_warmup_fingerprint(name, seed, True)
    else:
        settings = dc_settings(name, "model", section, "evaluation", point=(section, variant, point))
        warmup = dc_warmup_fingerprint(name, seed) if kind == "train" else None
    vectors = dc_vectors_fingerprint(name) if DC_VARIANT_MODES[variant] in ("full", "social_only") else None
    chosen_from = None  # the grid runs whose best point a `selected` run or the extrapolation trains at
    if point == DC_SELECTED or kind == "extrapolate":
        grid_kind = "sentiment" if kind == "sentiment" else "train"
        chosen_from = [dc_run_fingerprint(name, grid_kind, variant, DC_GRID_SEEDS[0], p)
                       for p in dc_points(name, variant, section)]
    return settings_digest(f"dcwe-{kind}", code(f"dcwe-{kind}"), dc_data_fingerprint(name), variant, int(seed),
                           settings, warmup, vectors, chosen_from, dc_numerics())


def dc_diffusion_fingerprint(name, variant, seed):
    runs = [dc_run_fingerprint(name, "train", variant, seed, p)
            for p in dc_seed_points(name, variant, "training", seed)]
    return settings_digest("dcwe-diffusion", code("dcwe-diffusion"), dc_diffusion_settings(SimpleNamespace(
        dc_dataset=name)), runs, dc_vectors_fingerprint(name), dc_numerics())


def dc_by_status(inputs, folder, fingerprint, records):
    """A run's inputs as its metrics.json says (common.smk, inputs_by_record)."""
    return inputs_by_record(inputs, f"{folder}/metrics.json", fingerprint, [f"{folder}/{r}" for r in records],
                            f"{folder}/.stale")


DC_TRAIN_RECORDS = ("metrics.json", "losses.parquet")
DC_SENTIMENT_RECORDS = ("metrics.json", "predictions.parquet")
DC_DIFFUSION_RECORDS = ("metrics.json", "diffusion.parquet", "walk_flight.parquet")


def dc_train_inputs(w):
    inputs = {"corpus": f"{dc_data_dir(w.dc_dataset)}/corpus.json", "docs": f"{dc_data_dir(w.dc_dataset)}/docs.parquet",
              "warmup": f"{DC_RESULTS}/{w.dc_dataset}/seed{w.seed}/warmup.pt", **dc_vector_inputs(w),
              **dc_select_inputs(w)}
    return dc_by_status(inputs, dc_run_dir(w.dc_dataset, w.dc_variant, w.seed, w.dc_point),
                        dc_run_fingerprint(w.dc_dataset, "train", w.dc_variant, w.seed, w.dc_point), DC_TRAIN_RECORDS)


def dc_sentiment_inputs(w):
    inputs = {"corpus": f"{dc_data_dir(w.dc_dataset)}/corpus.json", "docs": f"{dc_data_dir(w.dc_dataset)}/docs.parquet",
              **dc_vector_inputs(w), **dc_select_inputs(w, "sentiment")}
    return dc_by_status(inputs, dc_sentiment_dir(w.dc_dataset, w.dc_variant, w.seed, w.dc_point),
                        dc_run_fingerprint(w.dc_dataset, "sentiment", w.dc_variant, w.seed, w.dc_point),
                        DC_SENTIMENT_RECORDS)


def dc_extrapolate_inputs(w):
    """The held-out warm-up, and the first grid seed's runs of the variant (its best point)."""
    inputs = {"corpus": f"{dc_data_dir(w.dc_dataset)}/corpus.json", "docs": f"{dc_data_dir(w.dc_dataset)}/docs.parquet",
              "warmup": f"{DC_RESULTS}/{w.dc_dataset}/seed{w.seed}/extrapolation/warmup.pt", **dc_vector_inputs(w),
              "select": dc_grid_metrics(w.dc_dataset, w.dc_variant)}
    return dc_by_status(inputs, dc_extrapolation_dir(w.dc_dataset, w.dc_variant, w.seed),
                        dc_run_fingerprint(w.dc_dataset, "extrapolate", w.dc_variant, w.seed), DC_TRAIN_RECORDS)


def dc_diffusion_inputs(w):
    """The variant's runs of this seed (the best dev point's model.pt is analysed: where a
    current run's is missing, rule dcwe_weights_not_here stops the plan) and the node2vec vectors."""
    points = dc_seed_points(w.dc_dataset, w.dc_variant, "training", w.seed)
    runs = [dc_run_dir(w.dc_dataset, w.dc_variant, w.seed, p) for p in points]
    inputs = {"corpus": f"{dc_data_dir(w.dc_dataset)}/corpus.json", "docs": f"{dc_data_dir(w.dc_dataset)}/docs.parquet",
              "runs": [f"{r}/metrics.json" for r in runs], "vectors": dc_vectors_path(w.dc_dataset)}
    folder, fingerprint = dc_diffusion_dir(w.dc_dataset, w.dc_variant, w.seed), \
        dc_diffusion_fingerprint(w.dc_dataset, w.dc_variant, w.seed)
    if not record_is_current(f"{folder}/metrics.json", fingerprint, [f"{folder}/{r}" for r in DC_DIFFUSION_RECORDS]):
        # to be made: the weights of runs that are current here but were trained elsewhere are
        # not committed (rule dcwe_weights_not_here says so before this job deletes anything);
        # once every point's record is current, only the best point's weights are read (chosen
        # by the command's own selected_point)
        current = [r for r, p in zip(runs, points)
                   if recorded_fingerprint(r) == dc_run_fingerprint(w.dc_dataset, "train", w.dc_variant, w.seed, p)]
        read = [dc_selected_point(inputs["runs"], "mlm")["run"]] if len(current) == len(runs) else current
        inputs["weights"] = [f"{r}/model.pt" for r in read if not os.path.exists(f"{r}/model.pt")]
    return dc_by_status(inputs, folder, fingerprint, DC_DIFFUSION_RECORDS)


def dc_configured_runs():
    """(folder, fingerprint) of every run and analysis the config asks for."""
    runs = []
    for name in DC_DATASETS:
        for seed in DC_SEEDS:
            runs += [(dc_run_dir(name, v, seed, p), dc_run_fingerprint(name, "train", v, seed, p))
                     for v in dc_variants(name) for p in dc_seed_points(name, v, "training", seed)]
            runs += [(dc_sentiment_dir(name, v, seed, p), dc_run_fingerprint(name, "sentiment", v, seed, p))
                     for v in dc_sentiment_variants(name) for p in dc_seed_points(name, v, "sentiment", seed)]
        spec = dc_extrapolation(name)
        runs += [(dc_extrapolation_dir(name, v, seed), dc_run_fingerprint(name, "extrapolate", v, seed))
                 for v in spec["variants"] for seed in spec["seeds"]]
        spec = dc_diffusion(name)
        runs += [(dc_diffusion_dir(name, v, seed), dc_diffusion_fingerprint(name, v, seed))
                 for v in spec["variants"] for seed in spec["seeds"]]
    return runs


def dc_runs_due():
    """The stale runs' markers and the missing runs' records (common.smk, records_due)."""
    return records_due((f"{folder}/metrics.json", fingerprint) for folder, fingerprint in dc_configured_runs())


def dc_vectors_flag(w, input):
    return flag("vectors", input.vectors) if "vectors" in input.keys() else ""


def dc_select_flag(w, input):
    return flag("select-from", *input.select) if "select" in input.keys() else ""


def dc_diffusion_settings(w):
    return json.dumps({"backbone": DC.get("backbone", "minilm"),
                       "max_length": DC_DATASETS[w.dc_dataset].get("max_length", DC.get("max_length", 128)),
                       "model": {**DC.get("model", {}), **DC_DATASETS[w.dc_dataset].get("model", {})},
                       "diffusion": dc_diffusion(w.dc_dataset)["settings"]})


def dc_diffusion_seconds(w):
    """A forward pass with every layer's states over the documents read (the default: all)."""
    return encoder_seconds(DC.get("backbone"), dc_documents(w.dc_dataset), dc_max_length(w.dc_dataset), train=False)


def dc_compared_sc_metrics():
    """The semantic-change runs of the corpora a DCWE dataset reads, shown beside its change scores."""
    sc = config.get("semantic_change", {})
    return [f"{RESULTS}/semantic_change/{spec['semantic_change_dataset']}/{method}/seed{seed}/metrics.json"
            for spec in DC_DATASETS.values() if spec.get("semantic_change_dataset")
            for method in sc.get("methods", []) if method == "temporal_attention"
            for seed in sc.get("seeds", [0])]


DC_TABLES = ("dcwe_table1", "dcwe_table2", "dcwe_table3", "dcwe_table4", "dcwe_table5", "dcwe_change", "dcwe_grid",
             "dcwe_equal_epochs")


def dc_tables():
    """The tables the config makes: the fixed ones, the extrapolation and diffusion tables when configured."""
    return (*DC_TABLES, *(("dcwe_extrapolation",) if dc_all_extrapolation_metrics() else ()),
            *(("dcwe_diffusion",) if dc_all_diffusion() else ()))


def dc_intermediates(name):
    """The Parquet, JSON and .npy files the stage's jobs write and later jobs read."""
    files = [f"{dc_data_dir(name)}/corpus.json", f"{dc_data_dir(name)}/docs.parquet", dc_vectors_path(name)]
    for variant in dc_variants(name):
        for seed in DC_SEEDS:
            for point in dc_seed_points(name, variant, "training", seed):
                files += [f"{dc_run_dir(name, variant, seed, point)}/{f}" for f in ("metrics.json", "losses.parquet")]
    for variant in dc_sentiment_variants(name):
        for seed in DC_SEEDS:
            for point in dc_seed_points(name, variant, "sentiment", seed):
                files += [f"{dc_sentiment_dir(name, variant, seed, point)}/{f}" for f in ("metrics.json", "predictions.parquet")]
    for variant in dc_extrapolation(name)["variants"]:
        for seed in dc_extrapolation(name)["seeds"]:
            files += [f"{dc_extrapolation_dir(name, variant, seed)}/{f}" for f in ("metrics.json", "losses.parquet")]
    for variant in dc_diffusion(name)["variants"]:
        for seed in dc_diffusion(name)["seeds"]:
            files += [f"{dc_diffusion_dir(name, variant, seed)}/{f}"
                      for f in ("metrics.json", "diffusion.parquet", "walk_flight.parquet")]
    return files


# Damaged intermediates (common.smk, set_aside_damaged): set aside before any job is planned, so
# the job that writes one runs again when a job that reads it runs.
for _name in DC_DATASETS:
    set_aside_damaged(*dc_intermediates(_name))
