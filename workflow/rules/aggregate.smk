# Finished runs and datasets → the paper's tables (Markdown, CSV, LaTeX, HTML), Figure 3 and the
# coverage table (each TempoFormer-family cell's runs, and the runs of the paper's protocol left).
# The HTML rendering of each table and the figure are marked for `snakemake --report`.

# Table 5's BERTScore and the significance test; a `diversity:` / `bootstrap:` config section
# overrides these keys.
DIVERSITY = config["diversity"]  # defaults filled in by the schema
BOOTSTRAP = config["bootstrap"]
PAPER_COLUMNS = json.dumps({name: spec.get("paper_column") for name, spec in DATASETS.items()}, sort_keys=True)

rule aggregate:
    conda:
        CONDA_ENV
    input:
        metrics=all_runs(),
    output:
        **table_files(2),
        **table_files(3),
        **table_files(4),
        **table_files(6),
        **table_files(11),
        **named_table_files("coverage", "Coverage"),
        **causes_outputs(),
        figure3=report(f"{FIGURES}/figure3.png", caption="../report/figure3.rst", category="Figures",
                       labels={"figure": "Figure 3"}),
    params:
        code=code("aggregate"),
        datasets=json.dumps({name: {"labels": spec["labels"], "paper_column": spec.get("paper_column")}
                             for name, spec in DATASETS.items()}, sort_keys=True),
        resamples=BOOTSTRAP["resamples"],
        seed=BOOTSTRAP["seed"],
        unit=BOOTSTRAP["unit"],
        # the backbone each transformer entry's runs used (the models' default: minilm), for the labels
        backbones=json.dumps({m: MODELS[m]["params"].get("backbone", "minilm") for m in MODELS
                              if model_spec(m).kind in ("window_transformer", "post_transformer")}, sort_keys=True),
        tables=lambda w, output: os.path.dirname(output.table2_md),
        figures=lambda w, output: os.path.dirname(output.figure3),
        **causes_params(),
    resources:
        # every run's predictions and the bootstrap
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(4000, attempt),
    log:
        f"{RESULTS}/logs/aggregate.log",
    benchmark:
        f"{RESULTS}/benchmarks/aggregate.tsv"
    shell:
        AGGREGATE_SHELL


rule table1:
    conda:
        CONDA_ENV
    input:
        posts=expand(f"{RESULTS}/{{dataset}}/posts.parquet", dataset=DATASETS),
    output:
        **table_files(1),
    params:
        code=code("table1"),
        names=list(DATASETS),
        # labels are listed minority first, majority last
        minority=json.dumps({name: spec["labels"][:-1] for name, spec in DATASETS.items()}, sort_keys=True),
        paper=PAPER_COLUMNS,
        tables=lambda w, output: os.path.dirname(output.table1_md),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(2000, attempt),
    log:
        f"{RESULTS}/logs/table1.log",
    benchmark:
        f"{RESULTS}/benchmarks/table1.tsv"
    shell:
        "exec tempoformer table1 --posts {input.posts:q} --names {params.names:q} --minority {params.minority:q}"
        " --paper-columns {params.paper:q} --out-dir {params.tables:q} 2> {log:q}"


rule diversity:
    conda:
        CONDA_ENV
    input:
        posts=f"{RESULTS}/{{dataset}}/posts.parquet",
        embeddings=f"{RESULTS}/{{dataset}}/sbert.npy",
        folds=f"{RESULTS}/{{dataset}}/folds.parquet",
    output:
        f"{RESULTS}/{{dataset}}/diversity.json",
    params:
        kernels=KERNELS,
        torch_threads=config["threads"],
        code=code("diversity"),
        **DIVERSITY,
    threads: config["threads"]
    resources:
        runtime=lambda w, attempt: runtime_minutes(diversity_seconds(), attempt),
        mem_mb=lambda w, attempt: mem_request(diversity_mem_mb(), attempt),
    log:
        f"{RESULTS}/logs/{{dataset}}/diversity.log",
    benchmark:
        f"{RESULTS}/benchmarks/{{dataset}}/diversity.tsv"
    shell:
        "exec env {params.kernels} tempoformer diversity --posts {input.posts:q} --embeddings {input.embeddings:q} --folds {input.folds:q}"
        " --backbone {params.backbone:q} --layer {params.layer} --max-pairs {params.max_pairs}"
        " --max-tokens {params.max_tokens} --seed {params.seed} --threads {params.torch_threads}"
        " --output {output:q} 2> {log:q}"


rule table5:
    conda:
        CONDA_ENV
    input:
        diversity=expand(f"{RESULTS}/{{dataset}}/diversity.json", dataset=DATASETS),
    output:
        **table_files(5),
    params:
        code=code("table5"),
        names=list(DATASETS),
        paper=PAPER_COLUMNS,
        tables=lambda w, output: os.path.dirname(output.table5_md),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(1000, attempt),
    log:
        f"{RESULTS}/logs/table5.log",
    benchmark:
        f"{RESULTS}/benchmarks/table5.tsv"
    shell:
        "exec tempoformer table5 --diversity {input.diversity:q} --names {params.names:q}"
        " --paper-columns {params.paper:q} --out-dir {params.tables:q} 2> {log:q}"
