# One job per (dataset, model, window, fold, seed): grid search on dev, test predictions.


# A run made from other code, settings or data gets this marker as an input (common.smk,
# train_inputs): it reruns even where Snakemake has no record of the run (a fresh clone).
localrules:
    stale_run,


rule stale_run:
    output:
        temp(touch(f"{RESULTS}/{{dataset}}/runs/{{model}}/w{{window}}/fold{{fold}}/seed{{seed}}/.stale")),


rule train:
    conda:
        CONDA_ENV
    input:
        unpack(train_inputs),
    output:
        metrics=f"{RESULTS}/{{dataset}}/runs/{{model}}/w{{window}}/fold{{fold}}/seed{{seed}}/metrics.json",
        predictions=f"{RESULTS}/{{dataset}}/runs/{{model}}/w{{window}}/fold{{fold}}/seed{{seed}}/predictions.parquet",
    params:
        kernels=KERNELS,
        # torch's threads: the config's, not Snakemake's count scaled to --cores (the numbers depend on it)
        torch_threads=lambda w: model_threads(w.model),
        code=lambda w: code("train", *model_spec(w.model).code_modules()),
        fingerprint=lambda w: run_fingerprint(w.dataset, w.model, w.window, w.fold, w.seed),
        model_params=lambda w: json.dumps(MODELS[w.model]["params"], sort_keys=True),
        labels=lambda w: json.dumps(DATASETS[w.dataset]["labels"], sort_keys=True),
        model_type=lambda w: model_type(w.model),
        optional=optional_inputs,
        out_dir=lambda w: run_dir(w.dataset, w.model, w.window, w.fold, w.seed),
    threads: lambda w: model_threads(w.model)
    # Cluster requests (profiles/slurm): a GPU for model types that want one (the registry's
    # wants_gpu; on a cluster without GPUs: --set-resources train:gpu=0); memory (MB) and time
    # (minutes) double with each retry of a failed job.
    resources:
        gpu=lambda w: 1 if model_spec(w.model).wants_gpu else 0,
        mem_mb=lambda w, attempt: 2 ** (attempt - 1) * (8000 if model_spec(w.model).wants_gpu else 2000),
        runtime=lambda w, attempt: 2 ** (attempt - 1) * (720 if model_spec(w.model).wants_gpu else 60),
    log:
        f"{RESULTS}/logs/{{dataset}}/train/{{model}}_w{{window}}_fold{{fold}}_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/{{dataset}}/train/{{model}}_w{{window}}_fold{{fold}}_seed{{seed}}.tsv"
    # exec: the trainer replaces the shell, so a signal to the job reaches the trainer itself
    shell:
        "exec env {params.kernels} tempoformer train --posts {input.posts:q} --folds {input.folds:q} {params.optional}"
        " --model {wildcards.model:q} --type {params.model_type:q} --params {params.model_params:q} --labels {params.labels:q}"
        " --window {wildcards.window:q} --fold {wildcards.fold:q} --seed {wildcards.seed:q}"
        " --fingerprint {params.fingerprint:q}"
        " --threads {params.torch_threads} --out-dir {params.out_dir:q} 2> {log:q}"
