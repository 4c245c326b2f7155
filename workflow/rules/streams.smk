# Posts → window streams (indices + log-time gaps) and folds by timeline.


rule windows:
    input:
        posts=f"{RESULTS}/{{dataset}}/posts.parquet",
        code=code("data/windows.py", "data/posts.py"),
    output:
        f"{RESULTS}/{{dataset}}/streams_w{{window}}.parquet",
    log:
        f"{RESULTS}/logs/{{dataset}}/windows_w{{window}}.log",
    shell:
        "tempoformer windows --posts {input.posts} --window {wildcards.window} --output {output} 2> {log}"


rule folds:
    input:
        posts=f"{RESULTS}/{{dataset}}/posts.parquet",
        code=code("data/folds.py", "data/posts.py"),
    output:
        f"{RESULTS}/{{dataset}}/folds.parquet",
    params:
        n_folds=config["n_folds"],
        seed=config["fold_seed"],
        dev_ratio=lambda w: DATASETS[w.dataset].get("dev_ratio", 0.25),
    log:
        f"{RESULTS}/logs/{{dataset}}/folds.log",
    shell:
        "tempoformer folds --posts {input.posts} --output {output} --n-folds {params.n_folds}"
        " --dev-ratio {params.dev_ratio} --seed {params.seed} 2> {log}"
