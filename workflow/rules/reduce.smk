# SBERT vectors → the same vectors with a low-dimensional reduction appended as the last columns:
# the authors' input path of SWNU / Seq-Sig-Net (model params `path_reduction: umap`,
# `path_dimension`, `path_seed`; common.smk, embeddings_file, gives those runs this file). As in
# sig-networks the reduction is fitted once on every post of the dataset, test posts included
# (it sees the unlabelled test texts: the authors' behaviour, kept to reproduce their input).
# UMAP needs the optional extra: pip install -e .[umap].


rule reduce_embeddings:
    conda:
        CONDA_ENV
    input:
        f"{RESULTS}/{{dataset}}/sbert.npy",
    output:
        f"{RESULTS}/{{dataset}}/sbert_{{method}}{{dimension}}_seed{{seed}}.npy",
    wildcard_constraints:
        method="umap",
        dimension=r"\d+",
        seed=r"\d+",
    params:
        kernels=KERNELS,
        code=code("reduce-embeddings"),
    # One thread: UMAP with a fixed random_state is deterministic on one (the command also holds
    # numba and BLAS to one thread).
    threads: 1
    # Cluster requests (profiles/slurm): a CPU job; UMAP of LRS's 5,568 SBERT vectors takes ~50 s
    # and a few hundred MB (numba's compilation included); doubled with each retry.
    resources:
        mem_mb=lambda w, attempt: 4000 * 2 ** (attempt - 1),
        runtime=lambda w, attempt: 30 * 2 ** (attempt - 1),
        gpu=0,
    log:
        f"{RESULTS}/logs/{{dataset}}/reduce_embeddings_{{method}}{{dimension}}_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/{{dataset}}/reduce_embeddings_{{method}}{{dimension}}_seed{{seed}}.tsv"
    shell:
        "exec env {params.kernels} NUMBA_NUM_THREADS=1 tempoformer reduce-embeddings --embeddings {input:q}"
        " --method {wildcards.method:q} --dimension {wildcards.dimension:q} --seed {wildcards.seed:q}"
        " --output {output:q} 2> {log:q}"
