# One job per (dataset, model, window, fold, seed): grid search on dev, test predictions.


def train_inputs(w):
    inputs = {
        "posts": f"{RESULTS}/{w.dataset}/posts.parquet",
        "folds": f"{RESULTS}/{w.dataset}/folds.parquet",
        "code": code(*TRAIN_CODE, *MODEL_CODE[model_type(w.model)]),
    }
    if model_type(w.model) in WINDOW_MODELS:
        inputs["streams"] = f"{RESULTS}/{w.dataset}/streams_w{w.window}.parquet"
    if model_type(w.model) in EMBEDDING_MODELS:
        inputs["embeddings"] = f"{RESULTS}/{w.dataset}/sbert.npy"
    return inputs


def optional_inputs(w, input):
    return " ".join(
        f"--{name} {input[name]}" for name in ("streams", "embeddings") if name in input.keys()
    )


rule train:
    input:
        unpack(train_inputs),
    output:
        metrics=f"{RESULTS}/{{dataset}}/runs/{{model}}/w{{window}}/fold{{fold}}/seed{{seed}}/metrics.json",
        predictions=f"{RESULTS}/{{dataset}}/runs/{{model}}/w{{window}}/fold{{fold}}/seed{{seed}}/predictions.parquet",
    params:
        model_params=lambda w: json.dumps(MODELS[w.model]["params"], sort_keys=True),
        labels=lambda w: json.dumps(DATASETS[w.dataset]["labels"], sort_keys=True),
        model_type=lambda w: model_type(w.model),
        optional=optional_inputs,
        out_dir=lambda w: run_dir(w.dataset, w.model, w.window, w.fold, w.seed),
    threads: lambda w: model_threads(w.model)
    # Cluster requests (profiles/slurm): a GPU for transformer model types only (GPU_MODELS; on
    # a cluster without GPUs: --set-resources train:gpu=0); memory (MB) and time (minutes)
    # double with each retry of a failed job.
    resources:
        gpu=lambda w: 1 if model_type(w.model) in GPU_MODELS else 0,
        mem_mb=lambda w, attempt: 2 ** (attempt - 1) * (8000 if model_type(w.model) in GPU_MODELS else 2000),
        runtime=lambda w, attempt: 2 ** (attempt - 1) * (720 if model_type(w.model) in GPU_MODELS else 60),
    retries: 2
    log:
        f"{RESULTS}/logs/{{dataset}}/train/{{model}}_w{{window}}_fold{{fold}}_seed{{seed}}.log",
    shell:
        "tempoformer train --posts {input.posts} --folds {input.folds} {params.optional}"
        " --model {wildcards.model} --type {params.model_type} --params {params.model_params:q} --labels {params.labels:q}"
        " --window {wildcards.window} --fold {wildcards.fold} --seed {wildcards.seed}"
        " --threads {threads} --out-dir {params.out_dir} 2> {log}"
