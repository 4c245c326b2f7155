# Posts → window streams (indices + log-time gaps) and folds by timeline.


rule windows:
    conda:
        CONDA_ENV
    input:
        posts=f"{RESULTS}/{{dataset}}/posts.parquet",
    output:
        f"{RESULTS}/{{dataset}}/streams_w{{window}}.parquet",
    params:
        code=code("windows"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(WINDOWS_MEM_MB, attempt),
    log:
        f"{RESULTS}/logs/{{dataset}}/windows_w{{window}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/{{dataset}}/windows_w{{window}}.tsv"
    shell:
        "exec tempoformer windows --posts {input.posts:q} --window {wildcards.window:q} --output {output:q} 2> {log:q}"


rule folds:
    conda:
        CONDA_ENV
    input:
        posts=f"{RESULTS}/{{dataset}}/posts.parquet",
    output:
        f"{RESULTS}/{{dataset}}/folds.parquet",
    params:
        settings=lambda w: folds_settings(w.dataset),
        code=code("folds"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(1000, attempt),
    log:
        f"{RESULTS}/logs/{{dataset}}/folds.log",
    benchmark:
        f"{RESULTS}/benchmarks/{{dataset}}/folds.tsv"
    shell:
        "exec tempoformer folds --posts {input.posts:q} --output {output:q} --n-folds {params.settings[n_folds]}"
        " --dev-ratio {params.settings[dev_ratio]} --seed {params.settings[seed]} 2> {log:q}"
