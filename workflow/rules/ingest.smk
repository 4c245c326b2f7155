# Raw corpus → canonical post table (DESIGN.md §3).


rule synthetic_lrs:
    output:
        directory(f"{RESULTS}/raw/{{dataset}}"),
    params:
        n_threads=lambda w: DATASETS[w.dataset]["synthetic"]["n_threads"],
        seed=lambda w: DATASETS[w.dataset]["synthetic"]["seed"],
    input:
        code("data/ingest/synthetic_lrs.py"),
    log:
        f"{RESULTS}/logs/{{dataset}}/synthetic_lrs.log",
    shell:
        "tempoformer synthetic-lrs --output {output} --n-threads {params.n_threads}"
        " --seed {params.seed} 2> {log}"


def raw_input(wildcards):
    spec = DATASETS[wildcards.dataset]
    if "synthetic" in spec:
        return f"{RESULTS}/raw/{wildcards.dataset}"
    return external(spec["path"]) if spec.get("path") else []


def raw_digest(wildcards):
    spec = DATASETS[wildcards.dataset]
    return content_digest(spec["path"]) if spec.get("path") and "synthetic" not in spec else ""


rule ingest:
    input:
        raw=raw_input,
        code=lambda w: code(
            "data/posts.py", "data/ingest/__init__.py", f"data/ingest/{DATASETS[w.dataset]['format']}.py"
        ),
    output:
        f"{RESULTS}/{{dataset}}/posts.parquet",
    params:
        fmt=lambda w: DATASETS[w.dataset]["format"],
        options=lambda w: json.dumps(DATASETS[w.dataset].get("options", {}), sort_keys=True),
        raw=lambda w, input: f"--input {input.raw}" if input.raw else "",
        raw_digest=raw_digest,
    log:
        f"{RESULTS}/logs/{{dataset}}/ingest.log",
    shell:
        "tempoformer ingest --format {params.fmt} {params.raw} --dataset {wildcards.dataset}"
        " --options {params.options:q} --output {output} 2> {log}"
