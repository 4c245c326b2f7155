# Semantic change detection with temporal attention (Rosin & Radinsky 2022): corpus → MLM
# post-pretraining per (dataset, method, seed) → change scores + Pearson/Spearman → Tables 2-4.
# Config: config["semantic_change"] (keys described in config/config.yaml and the schema).
# Needs common.smk (RESULTS, code()). Target: rule semantic_change_all.

include: "semantic_change_common.smk"

rule semantic_change_synthetic:
    conda:
        CONDA_ENV
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
        code=code("semantic-change-synthetic"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(1000, attempt),
    log:
        f"{RESULTS}/logs/semantic_change/{{sc_dataset}}/synthetic.log",
    benchmark:
        f"{RESULTS}/benchmarks/semantic_change/{{sc_dataset}}/synthetic.tsv"
    shell:
        "exec tempoformer semantic-change-synthetic --output {params.out:q} --options {params.options:q} 2> {log:q}"


rule semantic_change_train:
    conda:
        CONDA_ENV
    input:
        unpack(sc_data_inputs),
    output:
        f"{SC_RESULTS}/{{sc_dataset}}/{{sc_method}}/seed{{seed}}/model.pt",
    params:
        kernels=KERNELS,
        data=lambda w: sc_data_spec(w.sc_dataset),
        data_digest=sc_data_digest,
        settings=lambda w: sc_settings(w.sc_dataset, "attention", "training"),
        device=sc_device(),
        code=code("semantic-change-train"),
    threads: SC_THREADS
    # Cluster requests (resources.smk): time from the steps, batch and sentence length; a GPU
    # where the dataset's training is long, unless `device: cpu`; time and memory double with each retry.
    resources:
        runtime=lambda w, attempt: runtime_minutes(sc_train_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(sc_train_mem_mb(w), attempt),
        gpu=lambda w: stage_gpu(SC, sc_longest_seconds(w.sc_dataset)),
    log:
        f"{RESULTS}/logs/semantic_change/{{sc_dataset}}/train_{{sc_method}}_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/semantic_change/{{sc_dataset}}/train_{{sc_method}}_seed{{seed}}.tsv"
    shell:
        "exec env {params.kernels} tempoformer semantic-change-train --data {params.data:q} --name {wildcards.sc_dataset:q}"
        " --method {wildcards.sc_method:q} --settings {params.settings:q} --seed {wildcards.seed:q}"
        " --threads {threads} {params.device} --output {output:q} 2> {log:q}"


rule semantic_change_score:
    conda:
        CONDA_ENV
    input:
        unpack(sc_score_inputs),
    output:
        scores=f"{SC_RESULTS}/{{sc_dataset}}/{{sc_method}}/seed{{seed}}/scores.csv",
        metrics=f"{SC_RESULTS}/{{sc_dataset}}/{{sc_method}}/seed{{seed}}/metrics.json",
    params:
        kernels=KERNELS,
        data=lambda w: sc_data_spec(w.sc_dataset),
        data_digest=sc_data_digest,
        # A trained model carries its attention settings; untrained methods build theirs here.
        settings=lambda w: sc_settings(w.sc_dataset, "attention", "scoring"),
        model=lambda w, input: flag("model", input.model) if "model" in input.keys() else "",
        out_dir=lambda w: sc_run_dir(w.sc_dataset, w.sc_method, w.seed),
        device=sc_device(),
        code=code("semantic-change-score"),
    threads: SC_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(sc_score_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(sc_score_mem_mb(w), attempt),
        gpu=lambda w: stage_gpu(SC, sc_longest_seconds(w.sc_dataset)),
    log:
        f"{RESULTS}/logs/semantic_change/{{sc_dataset}}/score_{{sc_method}}_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/semantic_change/{{sc_dataset}}/score_{{sc_method}}_seed{{seed}}.tsv"
    shell:
        "exec env {params.kernels} tempoformer semantic-change-score --data {params.data:q} --name {wildcards.sc_dataset:q}"
        " --method {wildcards.sc_method:q} --settings {params.settings:q} --seed {wildcards.seed:q}"
        " {params.model} --threads {threads} {params.device} --out-dir {params.out_dir:q} 2> {log:q}"


rule semantic_change_tables:
    conda:
        CONDA_ENV
    input:
        metrics=sc_all_metrics(),
    output:
        expand(f"{TABLES}/temporal_attention_table{{n}}.{{ext}}", n=(2, 3, 4), ext=("md", "csv", "tex")),
        # the HTML rendering goes into `snakemake --report`
        *(report(f"{TABLES}/temporal_attention_table{n}.html", caption=f"../report/temporal_attention_table{n}.rst",
                 category="Temporal attention tables", labels={"table": f"Rosin & Radinsky Table {n}"})
          for n in (2, 3, 4)),
    params:
        datasets=json.dumps({name: spec.get("paper_column") for name, spec in SC_DATASETS.items()}),
        label=SC.get("backbone_label", "MiniLM-L6"),
        out_dir=lambda w, output: os.path.dirname(output[0]),
        code=code("semantic-change-tables"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(1000, attempt),
    log:
        f"{RESULTS}/logs/semantic_change/tables.log",
    benchmark:
        f"{RESULTS}/benchmarks/semantic_change/tables.tsv"
    shell:
        "exec tempoformer semantic-change-tables --metrics {input.metrics:q} --datasets {params.datasets:q}"
        " --backbone-label {params.label:q} --out-dir {params.out_dir:q} 2> {log:q}"


rule semantic_change_all:
    input:
        rules.semantic_change_tables.output,
