# Finished runs and datasets → the paper's tables (Markdown, CSV, LaTeX, HTML) and Figure 3.
# The HTML rendering of each table and the figure are marked for `snakemake --report`.

# Table 5's BERTScore and the significance test; a `diversity:` / `bootstrap:` config section
# overrides these keys.
DIVERSITY = config["diversity"]  # defaults filled in by the schema
BOOTSTRAP = config["bootstrap"]
PAPER_COLUMNS = json.dumps({name: spec.get("paper_column") for name, spec in DATASETS.items()}, sort_keys=True)


def table_files(n):
    """Table n's files: md, csv and tex as data; html into the report with its caption."""
    files = {f"table{n}_{ext}": f"{TABLES}/table{n}.{ext}" for ext in ("md", "csv", "tex")}
    files[f"table{n}_html"] = report(f"{TABLES}/table{n}.html", caption=f"../report/table{n}.rst",
                                     category="TempoFormer tables", labels={"table": f"Table {n}"})
    return files


def paper_csv(*tables):
    return code(*(f"reporting/paper/tempoformer_table{t}.csv" for t in tables))


rule aggregate:
    input:
        metrics=all_runs(),
        code=code("reporting/tables.py", "training/metrics.py", "reporting/render.py", "reporting/paper_numbers.py", "reporting/significance.py", "reporting/figures.py"),
        paper=paper_csv("2", "3_ablations", "4_recurrence", "6_roberta", "11_window"),
    output:
        **table_files(2),
        **table_files(3),
        **table_files(4),
        **table_files(6),
        **table_files(11),
        figure3=report(f"{FIGURES}/figure3.png", caption="../report/figure3.rst", category="Figures",
                       labels={"figure": "Figure 3"}),
    params:
        datasets=json.dumps({name: {"labels": spec["labels"], "paper_column": spec.get("paper_column")}
                             for name, spec in DATASETS.items()}, sort_keys=True),
        resamples=BOOTSTRAP["resamples"],
        seed=BOOTSTRAP["seed"],
    log:
        f"{RESULTS}/logs/aggregate.log",
    shell:
        "tempoformer aggregate --metrics {input.metrics} --datasets {params.datasets:q}"
        " --resamples {params.resamples} --bootstrap-seed {params.seed}"
        " --out-dir {TABLES} --figures-dir {FIGURES} 2> {log}"


rule table1:
    input:
        posts=expand(f"{RESULTS}/{{dataset}}/posts.parquet", dataset=DATASETS),
        code=code("reporting/dataset_tables.py", "reporting/dataset_stats.py", "reporting/render.py", "reporting/paper_numbers.py"),
        paper=paper_csv("1_datasets"),
    output:
        **table_files(1),
    params:
        names=list(DATASETS),
        # labels are listed minority first, majority last
        minority=json.dumps({name: spec["labels"][:-1] for name, spec in DATASETS.items()}, sort_keys=True),
        paper=PAPER_COLUMNS,
    log:
        f"{RESULTS}/logs/table1.log",
    shell:
        "tempoformer table1 --posts {input.posts} --names {params.names} --minority {params.minority:q}"
        " --paper-columns {params.paper:q} --out-dir {TABLES} 2> {log}"


rule diversity:
    input:
        posts=f"{RESULTS}/{{dataset}}/posts.parquet",
        embeddings=f"{RESULTS}/{{dataset}}/sbert.npy",
        folds=f"{RESULTS}/{{dataset}}/folds.parquet",
        code=code("reporting/diversity.py", "data/folds.py", "data/embed.py"),
    output:
        f"{RESULTS}/{{dataset}}/diversity.json",
    params:
        **DIVERSITY,
    threads: config["threads"]
    log:
        f"{RESULTS}/logs/{{dataset}}/diversity.log",
    shell:
        "tempoformer diversity --posts {input.posts} --embeddings {input.embeddings} --folds {input.folds}"
        " --backbone {params.backbone:q} --layer {params.layer} --max-pairs {params.max_pairs}"
        " --max-tokens {params.max_tokens} --seed {params.seed} --threads {threads}"
        " --output {output} 2> {log}"


rule table5:
    input:
        diversity=expand(f"{RESULTS}/{{dataset}}/diversity.json", dataset=DATASETS),
        code=code("reporting/dataset_tables.py", "reporting/render.py", "reporting/paper_numbers.py"),
        paper=paper_csv("5_diversity"),
    output:
        **table_files(5),
    params:
        names=list(DATASETS),
        paper=PAPER_COLUMNS,
    log:
        f"{RESULTS}/logs/table5.log",
    shell:
        "tempoformer table5 --diversity {input.diversity} --names {params.names}"
        " --paper-columns {params.paper:q} --out-dir {TABLES} 2> {log}"
