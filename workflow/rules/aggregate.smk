# Finished runs → the paper's tables.


rule aggregate:
    input:
        metrics=all_runs(),
        code=code("tables.py", "metrics.py"),
    output:
        md=f"{RESULTS}/tables/table2.md",
        csv=f"{RESULTS}/tables/table2.csv",
    params:
        labels=json.dumps({name: spec["labels"] for name, spec in DATASETS.items()}),
    log:
        f"{RESULTS}/logs/aggregate.log",
    shell:
        "tempoformer aggregate --metrics {input.metrics} --labels {params.labels:q}"
        " --out-dir {RESULTS}/tables 2> {log}"
