# Semantic change detection with temporal attention (Rosin & Radinsky 2022): corpus → MLM
# post-pretraining per (dataset, method, seed) → change scores + Pearson/Spearman → Tables 2-4.
# Config: config["semantic_change"] (keys described in config/config.yaml and the schema).
# Needs common.smk (RESULTS, code()). Target: rule semantic_change_all.
from tempoformer.semantic_change.cli import METHODS as SC_METHOD_SPECS

SC = config.get("semantic_change", {})
SC_RESULTS = f"{RESULTS}/semantic_change"
SC_DATASETS = SC.get("datasets", {})
SC_METHODS = SC.get("methods", [])
SC_SEEDS = SC.get("seeds", [0])
SC_THREADS = SC.get("threads", config.get("threads", 1))
# Keys of a dataset entry that are not part of the reader's spec.
SC_DATASET_EXTRA = ("paper_column", "synthetic", "training", "scoring", "attention")
SC_READ_CODE = ["data/posts.py", "semantic_change/__init__.py", "semantic_change/data.py",
                "semantic_change/synthetic.py", "semantic_change/cli.py", "device.py", "data/embed.py"]
SC_MODEL_CODE = ["semantic_change/model.py", "semantic_change/attention.py", "semantic_change/encoding.py"]

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
    return f"--device {SC['device']}" if SC.get("device") else ""


def sc_run_dir(name, method, seed):
    return f"{SC_RESULTS}/{name}/{method}/seed{seed}"


def sc_all_metrics():
    return [f"{sc_run_dir(name, method, seed)}/metrics.json"
            for name in SC_DATASETS for method in SC_METHODS for seed in SC_SEEDS]


rule semantic_change_synthetic:
    input:
        code=code("semantic_change/synthetic.py", "semantic_change/cli.py"),
    output:
        targets=f"{SC_RESULTS}/{{sc_dataset}}/data/targets.txt",
        corpus1=f"{SC_RESULTS}/{{sc_dataset}}/data/corpus1/lemma/chitchat1.txt.gz",
        corpus2=f"{SC_RESULTS}/{{sc_dataset}}/data/corpus2/lemma/chitchat2.txt.gz",
        graded=f"{SC_RESULTS}/{{sc_dataset}}/data/truth/graded.txt",
        binary=f"{SC_RESULTS}/{{sc_dataset}}/data/truth/binary.txt",
        periods=f"{SC_RESULTS}/{{sc_dataset}}/data/periods.txt",
    params:
        options=lambda w: json.dumps(SC_DATASETS[w.sc_dataset].get("synthetic", {})),
        out=lambda w: sc_data_dir(w.sc_dataset),
    log:
        f"{RESULTS}/logs/semantic_change/{{sc_dataset}}/synthetic.log",
    shell:
        "tempoformer semantic-change-synthetic --output {params.out} --options {params.options:q} 2> {log}"


rule semantic_change_train:
    input:
        unpack(sc_data_inputs),
        code=code(*SC_READ_CODE, *SC_MODEL_CODE, "semantic_change/pretrain.py"),
    output:
        f"{SC_RESULTS}/{{sc_dataset}}/{{sc_method}}/seed{{seed}}/model.pt",
    params:
        data=lambda w: sc_data_spec(w.sc_dataset),
        data_digest=sc_data_digest,
        settings=lambda w: sc_settings(w.sc_dataset, "attention", "training"),
        device=sc_device(),
    threads: SC_THREADS
    log:
        f"{RESULTS}/logs/semantic_change/{{sc_dataset}}/train_{{sc_method}}_seed{{seed}}.log",
    shell:
        "tempoformer semantic-change-train --data {params.data:q} --name {wildcards.sc_dataset}"
        " --method {wildcards.sc_method} --settings {params.settings:q} --seed {wildcards.seed}"
        " --threads {threads} {params.device} --output {output} 2> {log}"


def sc_score_inputs(w):
    inputs = {**sc_data_inputs(w), "code": code(*SC_READ_CODE, *SC_MODEL_CODE, "semantic_change/scoring.py")}
    if SC_METHOD_SPECS[w.sc_method]["train"]:
        inputs["model"] = f"{sc_run_dir(w.sc_dataset, w.sc_method, w.seed)}/model.pt"
    return inputs


rule semantic_change_score:
    input:
        unpack(sc_score_inputs),
    output:
        scores=f"{SC_RESULTS}/{{sc_dataset}}/{{sc_method}}/seed{{seed}}/scores.csv",
        metrics=f"{SC_RESULTS}/{{sc_dataset}}/{{sc_method}}/seed{{seed}}/metrics.json",
    params:
        data=lambda w: sc_data_spec(w.sc_dataset),
        data_digest=sc_data_digest,
        # A trained model carries its attention settings; untrained methods build theirs here.
        settings=lambda w: sc_settings(w.sc_dataset, "attention", "scoring"),
        model=lambda w, input: f"--model {input.model}" if "model" in input.keys() else "",
        out_dir=lambda w: sc_run_dir(w.sc_dataset, w.sc_method, w.seed),
        device=sc_device(),
    threads: SC_THREADS
    log:
        f"{RESULTS}/logs/semantic_change/{{sc_dataset}}/score_{{sc_method}}_seed{{seed}}.log",
    shell:
        "tempoformer semantic-change-score --data {params.data:q} --name {wildcards.sc_dataset}"
        " --method {wildcards.sc_method} --settings {params.settings:q} --seed {wildcards.seed}"
        " {params.model} --threads {threads} {params.device} --out-dir {params.out_dir} 2> {log}"


rule semantic_change_tables:
    input:
        metrics=sc_all_metrics(),
        code=code("semantic_change/tables.py", "semantic_change/paper_numbers.csv", "semantic_change/cli.py", "reporting/render.py"),
    output:
        expand(f"{TABLES}/temporal_attention_table{{n}}.{{ext}}", n=(2, 3, 4), ext=("md", "csv", "tex")),
        # the HTML rendering goes into `snakemake --report`
        *(report(f"{TABLES}/temporal_attention_table{n}.html", caption=f"../report/temporal_attention_table{n}.rst",
                 category="Temporal attention tables", labels={"table": f"Rosin & Radinsky Table {n}"})
          for n in (2, 3, 4)),
    params:
        datasets=json.dumps({name: spec.get("paper_column") for name, spec in SC_DATASETS.items()}),
        label=SC.get("backbone_label", "MiniLM-L6"),
        out_dir=TABLES,
    log:
        f"{RESULTS}/logs/semantic_change/tables.log",
    shell:
        "tempoformer semantic-change-tables --metrics {input.metrics} --datasets {params.datasets:q}"
        " --backbone-label {params.label:q} --out-dir {params.out_dir} 2> {log}"


rule semantic_change_all:
    input:
        rules.semantic_change_tables.output,
