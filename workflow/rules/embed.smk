# Posts → SBERT embeddings, each distinct text encoded once per dataset.


rule embed:
    conda:
        CONDA_ENV
    input:
        posts=f"{RESULTS}/{{dataset}}/posts.parquet",
    output:
        f"{RESULTS}/{{dataset}}/sbert.npy",
    params:
        kernels=KERNELS,
        torch_threads=config["threads"],
        model=config["embedding_model"],
        # Outlives the rule's output: a rerun (e.g. after an ingest change) encodes only new texts.
        cache=lambda w: f"{RESULTS}/{w.dataset}/sbert_cache.npz",
        code=code("embed"),
    threads: config["threads"]
    # Cluster requests (profiles/slurm): a CPU job (no GPU: each distinct text is encoded once per
    # dataset, and this stage has no `device` setting to turn a request off); memory (MB) and
    # time (minutes) double with each retry of a failed job.
    resources:
        mem_mb=lambda w, attempt: 4000 * 2 ** (attempt - 1),
        runtime=lambda w, attempt: 120 * 2 ** (attempt - 1),
        gpu=0,
    log:
        f"{RESULTS}/logs/{{dataset}}/embed.log",
    benchmark:
        f"{RESULTS}/benchmarks/{{dataset}}/embed.tsv"
    shell:
        "exec env {params.kernels} tempoformer embed --posts {input.posts:q} --model {params.model:q} --threads {params.torch_threads}"
        " --cache {params.cache:q} --output {output:q} 2> {log:q}"
