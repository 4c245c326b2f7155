# Finished runs → the paper's tables.


rule aggregate:
    input:
        metrics=all_runs(),
        code=code("tables.py", "metrics.py"),
    output:
        md=f"{TABLES}/table2.md",
        csv=f"{TABLES}/table2.csv",
    params:
        labels=json.dumps({name: spec["labels"] for name, spec in DATASETS.items()}, sort_keys=True),
    log:
        f"{RESULTS}/logs/aggregate.log",
    shell:
        "tempoformer aggregate --metrics {input.metrics} --labels {params.labels:q}"
        " --out-dir {TABLES} 2> {log}"


rule table1:
    input:
        posts=expand(f"{RESULTS}/{{dataset}}/posts.parquet", dataset=DATASETS),
        code=code("stats.py", "tables.py"),
    output:
        md=f"{TABLES}/table1.md",
        csv=f"{TABLES}/table1.csv",
    params:
        names=list(DATASETS),
        # labels are listed minority first, majority last
        minority=json.dumps({name: spec["labels"][:-1] for name, spec in DATASETS.items()}, sort_keys=True),
    log:
        f"{RESULTS}/logs/table1.log",
    shell:
        "tempoformer table1 --posts {input.posts} --names {params.names} --minority {params.minority:q}"
        " --out-dir {TABLES} 2> {log}"
