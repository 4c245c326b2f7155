# Raw corpus → canonical post table (src/tempoformer/data/posts.py: POST_SCHEMA, validate_posts).


rule synthetic_lrs:
    conda:
        CONDA_ENV
    output:
        directory(f"{RESULTS}/raw/{{dataset}}"),
    params:
        n_threads=lambda w: DATASETS[w.dataset]["synthetic"]["n_threads"],
        seed=lambda w: DATASETS[w.dataset]["synthetic"]["seed"],
        code=code("synthetic-lrs"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(1000, attempt),
    log:
        f"{RESULTS}/logs/{{dataset}}/synthetic_lrs.log",
    benchmark:
        f"{RESULTS}/benchmarks/{{dataset}}/synthetic_lrs.tsv"
    shell:
        "exec tempoformer synthetic-lrs --output {output:q} --n-threads {params.n_threads}"
        " --seed {params.seed} 2> {log:q}"


rule ingest:
    conda:
        CONDA_ENV
    input:
        raw=raw_input,
    output:
        f"{RESULTS}/{{dataset}}/posts.parquet",
    params:
        fmt=lambda w: ingest_settings(w.dataset)["format"],
        options=lambda w: json.dumps(ingest_settings(w.dataset)["options"], sort_keys=True),
        # the reader refuses a post whose label is not one of these, naming the record
        labels=lambda w: json.dumps(ingest_settings(w.dataset)["labels"]),
        raw=lambda w, input: flag("input", *_as_list(input.raw)) if input.raw else "",
        raw_digest=raw_digest,
        code=code("ingest"),
    resources:
        # a raw corpus read whole into a data frame
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(4000, attempt),
    log:
        f"{RESULTS}/logs/{{dataset}}/ingest.log",
    benchmark:
        f"{RESULTS}/benchmarks/{{dataset}}/ingest.tsv"
    shell:
        "exec tempoformer ingest --format {params.fmt:q} {params.raw} --dataset {wildcards.dataset:q}"
        " --options {params.options:q} --labels {params.labels:q} --output {output:q} 2> {log:q}"
