# Dynamic contextualized word embeddings (Hofmann et al. 2021): corpus + Table 1 statistics →
# node2vec (once per graph) → shared CWE warm-up per (dataset, seed) → one MLM training +
# evaluation per (dataset, variant, seed); one sentiment classifier per (dataset, sentiment
# variant, seed) from the backbone directly; each of these once per grid point (lr, lambda_a)
# on the grid seeds (`grid_seeds`), at the first grid seed's best point on the other seeds
# (folder `selected`), evaluated on dev after every epoch → Tables 1-5, the change-score table
# (best dev point) and the grid statistics (Tables 6-8). Beyond the paper, where configured: the
# held-out-month test (a warm-up and training without the last time → dcwe_extrapolation) and
# the diffusion analysis of a trained model (the paper's Figures 4-5 → dcwe_diffusion).
# Config: config["dcwe"] (keys described in config/config.yaml and the schema).
# Needs common.smk (RESULTS, TABLES, code()); a dataset that reads a semantic_change dataset
# needs semantic_change_common.smk (included by the Snakefile before this file). Target: rule dcwe_all.

include: "dcwe_common.smk"


# A run made from other code, settings or data gets this marker as an input (dc_by_status): it
# reruns even where Snakemake has no record of the run (a fresh clone).
localrules:
    dcwe_stale_run,
    dcwe_weights_not_here,


rule dcwe_stale_run:
    output:
        temp(touch(f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/{{dc_run}}/.stale")),
    wildcard_constraints:
        dc_run=r"[\w.-]+(/[\w.-]+)*",


# The weights of a run whose record is current but which was trained in another checkout (they
# are not committed): a job that reads them (the diffusion analysis) stops here, before it runs.
rule dcwe_weights_not_here:
    conda:
        CONDA_ENV
    output:
        f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/{{dc_variant}}/{{dc_point}}/model.pt",
    log:
        f"{RESULTS}/logs/dcwe/{{dc_dataset}}/seed{{seed}}/{{dc_variant}}/{{dc_point}}/weights_not_here.log",
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(100, attempt),
    shell:
        "echo dcwe: {output:q} 'is not here: run records are committed, weights are not. Delete the metrics.json"
        " of that run (git keeps it) and run again to train it here (the same seed, threads and kernels give the"
        " same model on CPU).' | tee {log:q} >&2; exit 1"


rule dcwe_data:
    conda:
        CONDA_ENV
    input:
        unpack(dc_data_inputs),
    output:
        corpus=f"{DC_RESULTS}/{{dc_dataset}}/data/corpus.json",
        docs=f"{DC_RESULTS}/{{dc_dataset}}/data/docs.parquet",
    params:
        data=lambda w: dc_data_spec(w.dc_dataset),
        data_digest=dc_data_digest,
        backbone=DC.get("backbone", "minilm"),
        out_dir=lambda w: dc_data_dir(w.dc_dataset),
        code=code("dcwe-data"),
    resources:
        runtime=lambda w, attempt: runtime_minutes(dc_data_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(dc_data_mem_mb(w), attempt),
    log:
        f"{RESULTS}/logs/dcwe/{{dc_dataset}}/data.log",
    benchmark:
        f"{RESULTS}/benchmarks/dcwe/{{dc_dataset}}/data.tsv"
    shell:
        "exec tempoformer dcwe-data --data {params.data:q} --name {wildcards.dc_dataset:q}"
        " --backbone {params.backbone:q} --out-dir {params.out_dir:q} 2> {log:q}"


rule dcwe_node2vec:
    conda:
        CONDA_ENV
    input:
        corpus=f"{DC_RESULTS}/{{dc_dataset}}/data/corpus.json",
        docs=f"{DC_RESULTS}/{{dc_dataset}}/data/docs.parquet",
    output:
        f"{DC_RESULTS}/{{dc_dataset}}/node2vec.npy",
    params:
        kernels=KERNELS,
        settings=lambda w: dc_node2vec_settings(w.dc_dataset),
        seed=DC.get("node2vec_seed", 0),
        corpus_dir=lambda w: dc_data_dir(w.dc_dataset),
        code=code("dcwe-node2vec"),
    resources:
        runtime=lambda w, attempt: runtime_minutes(dc_node2vec_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(4000, attempt),
    log:
        f"{RESULTS}/logs/dcwe/{{dc_dataset}}/node2vec.log",
    benchmark:
        f"{RESULTS}/benchmarks/dcwe/{{dc_dataset}}/node2vec.tsv"
    shell:
        "exec env {params.kernels} tempoformer dcwe-node2vec --corpus {params.corpus_dir:q} --settings {params.settings:q}"
        " --seed {params.seed} --output {output:q} 2> {log:q}"


rule dcwe_vectors:
    conda:
        CONDA_ENV
    input:
        corpus=f"{DC_RESULTS}/{{dc_dataset}}/data/corpus.json",
        docs=f"{DC_RESULTS}/{{dc_dataset}}/data/docs.parquet",
        vectors=lambda w: external(DC_DATASETS[w.dc_dataset]["vectors"]),
    output:
        f"{DC_RESULTS}/{{dc_dataset}}/vectors.npy",
    params:
        digest=lambda w: content_digest(DC_DATASETS[w.dc_dataset]["vectors"]),
        corpus_dir=lambda w: dc_data_dir(w.dc_dataset),
        code=code("dcwe-vectors"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(2000, attempt),
    log:
        f"{RESULTS}/logs/dcwe/{{dc_dataset}}/vectors.log",
    benchmark:
        f"{RESULTS}/benchmarks/dcwe/{{dc_dataset}}/vectors.tsv"
    shell:
        "exec tempoformer dcwe-vectors --corpus {params.corpus_dir:q} --vectors-file {input.vectors:q}"
        " --output {output:q} 2> {log:q}"


rule dcwe_warmup:
    conda:
        CONDA_ENV
    input:
        corpus=f"{DC_RESULTS}/{{dc_dataset}}/data/corpus.json",
        docs=f"{DC_RESULTS}/{{dc_dataset}}/data/docs.parquet",
    output:
        f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/warmup.pt",
    params:
        kernels=KERNELS,
        settings=lambda w: dc_settings(w.dc_dataset, "warmup"),
        corpus_dir=lambda w: dc_data_dir(w.dc_dataset),
        device=dc_device(),
        code=code("dcwe-warmup"),
    threads: DC_THREADS
    # Cluster requests (resources.smk): time from the steps (or epochs over the estimated
    # documents), batch and max_length; a GPU where the dataset's training is long, unless `device: cpu`.
    resources:
        runtime=lambda w, attempt: runtime_minutes(dc_warmup_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(dc_train_mem_mb(w, "warmup"), attempt),
        gpu=lambda w: stage_gpu(DC, dc_longest_seconds(w.dc_dataset)),
    log:
        f"{RESULTS}/logs/dcwe/{{dc_dataset}}/warmup_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/dcwe/{{dc_dataset}}/warmup_seed{{seed}}.tsv"
    shell:
        "exec env {params.kernels} tempoformer dcwe-warmup --corpus {params.corpus_dir:q} --settings {params.settings:q}"
        " --seed {wildcards.seed:q} --threads {threads} {params.device} --output {output:q} 2> {log:q}"


rule dcwe_train:
    conda:
        CONDA_ENV
    input:
        unpack(dc_train_inputs),
    output:
        metrics=f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/{{dc_variant}}/{{dc_point}}/metrics.json",
        losses=f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/{{dc_variant}}/{{dc_point}}/losses.parquet",
        # model.pt too, not declared: weights are not committed, so a fresh clone would retrain
        # every run for them; the diffusion analysis reads it (dc_diffusion_inputs)
    params:
        kernels=KERNELS,
        settings=lambda w: dc_settings(w.dc_dataset, "model", "training", "evaluation",
                                       point=("training", w.dc_variant, w.dc_point)),
        corpus_dir=lambda w: dc_data_dir(w.dc_dataset),
        vectors=dc_vectors_flag,
        select=dc_select_flag,
        out_dir=lambda w: dc_run_dir(w.dc_dataset, w.dc_variant, w.seed, w.dc_point),
        device=dc_device(),
        code=code("dcwe-train"),
        fingerprint=lambda w: dc_run_fingerprint(w.dc_dataset, "train", w.dc_variant, w.seed, w.dc_point),
    threads: DC_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(dc_train_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(dc_train_mem_mb(w), attempt),
        gpu=lambda w: stage_gpu(DC, dc_longest_seconds(w.dc_dataset)),
    log:
        f"{RESULTS}/logs/dcwe/{{dc_dataset}}/train_{{dc_variant}}_seed{{seed}}_{{dc_point}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/dcwe/{{dc_dataset}}/train_{{dc_variant}}_seed{{seed}}_{{dc_point}}.tsv"
    shell:
        "exec env {params.kernels} tempoformer dcwe-train --corpus {params.corpus_dir:q} --warmup {input.warmup:q}"
        " --variant {wildcards.dc_variant:q} {params.vectors} {params.select} --settings {params.settings:q}"
        " --seed {wildcards.seed:q} --threads {threads} {params.device} --fingerprint {params.fingerprint:q}"
        " --out-dir {params.out_dir:q} 2> {log:q}"


rule dcwe_warmup_holdout:
    conda:
        CONDA_ENV
    input:
        corpus=f"{DC_RESULTS}/{{dc_dataset}}/data/corpus.json",
        docs=f"{DC_RESULTS}/{{dc_dataset}}/data/docs.parquet",
    output:
        f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/extrapolation/warmup.pt",
    params:
        kernels=KERNELS,
        settings=lambda w: dc_settings(w.dc_dataset, "warmup"),
        corpus_dir=lambda w: dc_data_dir(w.dc_dataset),
        device=dc_device(),
        code=code("dcwe-warmup"),
    threads: DC_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(dc_warmup_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(dc_train_mem_mb(w, "warmup"), attempt),
        gpu=lambda w: stage_gpu(DC, dc_longest_seconds(w.dc_dataset)),
    log:
        f"{RESULTS}/logs/dcwe/{{dc_dataset}}/warmup_holdout_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/dcwe/{{dc_dataset}}/warmup_holdout_seed{{seed}}.tsv"
    shell:
        "exec env {params.kernels} tempoformer dcwe-warmup --corpus {params.corpus_dir:q} --settings {params.settings:q}"
        " --seed {wildcards.seed:q} --holdout-last --threads {threads} {params.device} --output {output:q} 2> {log:q}"


rule dcwe_extrapolate:
    conda:
        CONDA_ENV
    input:
        unpack(dc_extrapolate_inputs),
    output:
        metrics=f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/extrapolation/{{dc_variant}}/metrics.json",
        losses=f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/extrapolation/{{dc_variant}}/losses.parquet",
    params:
        kernels=KERNELS,
        settings=lambda w: dc_settings(w.dc_dataset, "model", "training", "evaluation"),
        corpus_dir=lambda w: dc_data_dir(w.dc_dataset),
        vectors=dc_vectors_flag,
        select=dc_select_flag,
        out_dir=lambda w: dc_extrapolation_dir(w.dc_dataset, w.dc_variant, w.seed),
        device=dc_device(),
        code=code("dcwe-extrapolate"),
        fingerprint=lambda w: dc_run_fingerprint(w.dc_dataset, "extrapolate", w.dc_variant, w.seed),
    threads: DC_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(dc_train_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(dc_train_mem_mb(w), attempt),
        gpu=lambda w: stage_gpu(DC, dc_longest_seconds(w.dc_dataset)),
    log:
        f"{RESULTS}/logs/dcwe/{{dc_dataset}}/extrapolate_{{dc_variant}}_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/dcwe/{{dc_dataset}}/extrapolate_{{dc_variant}}_seed{{seed}}.tsv"
    shell:
        "exec env {params.kernels} tempoformer dcwe-extrapolate --corpus {params.corpus_dir:q}"
        " --warmup {input.warmup:q} --variant {wildcards.dc_variant:q} {params.vectors} {params.select}"
        " --settings {params.settings:q} --seed {wildcards.seed:q} --threads {threads} {params.device}"
        " --fingerprint {params.fingerprint:q} --out-dir {params.out_dir:q} 2> {log:q}"


rule dcwe_diffusion:
    conda:
        CONDA_ENV
    input:
        unpack(dc_diffusion_inputs),
    output:
        metrics=f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/diffusion/{{dc_variant}}/metrics.json",
        scores=f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/diffusion/{{dc_variant}}/diffusion.parquet",
        walks=f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/diffusion/{{dc_variant}}/walk_flight.parquet",
        figures=[report(f"{FIGURES}/dcwe/{{dc_dataset}}/figure{n}_{{dc_variant}}_seed{{seed}}.png",
                        category="DCWE", labels={"figure": f"DCWE diffusion, Figure {n}"}) for n in (4, 5)],
    params:
        kernels=KERNELS,
        settings=dc_diffusion_settings,
        corpus_dir=lambda w: dc_data_dir(w.dc_dataset),
        out_dir=lambda w: dc_diffusion_dir(w.dc_dataset, w.dc_variant, w.seed),
        device=dc_device(),
        code=code("dcwe-diffusion"),
        fingerprint=lambda w: dc_diffusion_fingerprint(w.dc_dataset, w.dc_variant, w.seed),
    threads: DC_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(dc_diffusion_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(dc_train_mem_mb(w), attempt),
        gpu=lambda w: stage_gpu(DC, dc_longest_seconds(w.dc_dataset)),
    log:
        f"{RESULTS}/logs/dcwe/{{dc_dataset}}/diffusion_{{dc_variant}}_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/dcwe/{{dc_dataset}}/diffusion_{{dc_variant}}_seed{{seed}}.tsv"
    shell:
        "exec env {params.kernels} tempoformer dcwe-diffusion --corpus {params.corpus_dir:q} --runs {input.runs:q}"
        " --vectors {input.vectors:q} --figures {output.figures:q} --settings {params.settings:q}"
        " --threads {threads} {params.device} --fingerprint {params.fingerprint:q} --out-dir {params.out_dir:q} 2> {log:q}"


rule dcwe_sentiment:
    conda:
        CONDA_ENV
    input:
        unpack(dc_sentiment_inputs),
    output:
        metrics=f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/sentiment/{{dc_variant}}/{{dc_point}}/metrics.json",
        predictions=f"{DC_RESULTS}/{{dc_dataset}}/seed{{seed}}/sentiment/{{dc_variant}}/{{dc_point}}/predictions.parquet",
    params:
        kernels=KERNELS,
        settings=lambda w: dc_settings(w.dc_dataset, "model", "sentiment", "evaluation",
                                       point=("sentiment", w.dc_variant, w.dc_point)),
        corpus_dir=lambda w: dc_data_dir(w.dc_dataset),
        vectors=dc_vectors_flag,
        select=dc_select_flag,
        out_dir=lambda w: dc_sentiment_dir(w.dc_dataset, w.dc_variant, w.seed, w.dc_point),
        device=dc_device(),
        code=code("dcwe-sentiment"),
        fingerprint=lambda w: dc_run_fingerprint(w.dc_dataset, "sentiment", w.dc_variant, w.seed, w.dc_point),
    threads: DC_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(dc_train_seconds(w, "sentiment"), attempt),
        mem_mb=lambda w, attempt: mem_request(dc_train_mem_mb(w, "sentiment"), attempt),
        gpu=lambda w: stage_gpu(DC, dc_longest_seconds(w.dc_dataset)),
    log:
        f"{RESULTS}/logs/dcwe/{{dc_dataset}}/sentiment_{{dc_variant}}_seed{{seed}}_{{dc_point}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/dcwe/{{dc_dataset}}/sentiment_{{dc_variant}}_seed{{seed}}_{{dc_point}}.tsv"
    shell:
        "exec env {params.kernels} tempoformer dcwe-sentiment --corpus {params.corpus_dir:q}"
        " --variant {wildcards.dc_variant:q} {params.vectors} {params.select} --settings {params.settings:q}"
        " --seed {wildcards.seed:q} --threads {threads} {params.device} --fingerprint {params.fingerprint:q}"
        " --out-dir {params.out_dir:q} 2> {log:q}"


rule dcwe_tables:
    conda:
        CONDA_ENV
    input:
        metrics=dc_all_metrics(),
        sentiment=dc_all_sentiment_metrics(),
        extrapolation=dc_all_extrapolation_metrics(),
        diffusion=[metrics for metrics, _ in dc_all_diffusion()],
        # the diffusion figures: `all` makes them through this rule
        figures=[f for _, figures in dc_all_diffusion() for f in figures],
        corpora=[f"{dc_data_dir(name)}/corpus.json" for name in DC_DATASETS],
        sc_metrics=dc_compared_sc_metrics(),
    output:
        expand(f"{TABLES}/{{stem}}.{{ext}}", stem=dc_tables(), ext=("md", "csv", "tex", "html")),
    params:
        datasets=json.dumps({name: spec.get("paper_column") for name, spec in DC_DATASETS.items()}),
        label=DC.get("backbone_label", "MiniLM-L6"),
        sc_metrics=lambda w, input: flag("sc-metrics", *input.sc_metrics),
        sentiment=lambda w, input: flag("sentiment-metrics", *input.sentiment),
        metrics=lambda w, input: flag("metrics", *input.metrics),
        extrapolation=lambda w, input: flag("extrapolation-metrics", *input.extrapolation),
        diffusion=lambda w, input: flag("diffusion-metrics", *input.diffusion),
        out_dir=lambda w, output: os.path.dirname(output[0]),
        code=code("dcwe-tables"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(2000, attempt),
    log:
        f"{RESULTS}/logs/dcwe/tables.log",
    benchmark:
        f"{RESULTS}/benchmarks/dcwe/tables.tsv"
    shell:
        "exec tempoformer dcwe-tables {params.metrics} {params.sentiment} {params.extrapolation} {params.diffusion}"
        " --corpora {input.corpora:q}"
        " --datasets {params.datasets:q} {params.sc_metrics} --backbone-label {params.label:q}"
        " --out-dir {params.out_dir:q} 2> {log:q}"


rule dcwe_all:
    input:
        rules.dcwe_tables.output,
        dc_runs_due(),
