# Future language modeling (Li & Flanigan 2024): abstracts by year -> corpus (filter counted) ->
# tokens + vocabulary -> per-year log frequencies and mean contextual embeddings -> base LM
# pretrained once -> each (model, seed) fine-tuned from it -> perplexities, generation, CM ->
# Table 1, Table 3, beyond-the-paper table, Figures 3 and 1b, the human-evaluation sheet.
# Config: config["future_lm"] (keys described in config/config.yaml and the schema).
# Needs common.smk (RESULTS, TABLES, FIGURES, code(), external(), content_digest()).
# Target: rule future_lm_all.

include: "future_lm_common.smk"


# An evaluation or unigram run made from other code, settings or data gets this marker as an
# input (inputs_by_record): it reruns even where Snakemake has no record of it (a fresh clone).
localrules:
    future_lm_stale_run,


rule future_lm_stale_run:
    output:
        temp(touch(f"{FL_RESULTS}/{{fl_dataset}}/{{fl_record}}.stale")),
    wildcard_constraints:
        fl_record=r"runs/[^/]+/seed\d+/|unigram/seed\d+",


rule future_lm_corpus:
    conda:
        CONDA_ENV
    input:
        sources=lambda w: external(fl_source_paths(w.fl_dataset)),
    output:
        corpus=f"{FL_RESULTS}/{{fl_dataset}}/corpus.parquet",
        counts=f"{FL_RESULTS}/{{fl_dataset}}/corpus_counts.json",
    params:
        spec=lambda w: json.dumps(fl_spec(w.fl_dataset), sort_keys=True),
        digest=lambda w: content_digest(fl_source_paths(w.fl_dataset)),
        out_dir=lambda w: fl_dir(w.fl_dataset),
        code=code("future-lm-corpus"),
    resources:
        # the sources read whole (the Anthology: 2000-2022)
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(4000, attempt),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/corpus.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/corpus.tsv"
    shell:
        "exec tempoformer future-lm-corpus --spec {params.spec:q} --out-dir {params.out_dir:q} 2> {log:q}"


rule future_lm_tokenize:
    conda:
        CONDA_ENV
    input:
        corpus=rules.future_lm_corpus.output.corpus,
    output:
        tokens=f"{FL_RESULTS}/{{fl_dataset}}/tokens.parquet",
        vocab=f"{FL_RESULTS}/{{fl_dataset}}/vocab.json",
    params:
        tokenizer=lambda w: fl_section(w.fl_dataset, "tokenizer") or "minilm",
        # a pretrained base model keeps its tokenizer's whole vocabulary
        restrict=lambda w: "" if (fl_section(w.fl_dataset, "base_model") or "scratch") == "scratch" else "--no-restrict",
        min_count=lambda w: fl_section(w.fl_dataset, "min_count") or 1,
        stopwords=lambda w: flag("stopwords", fl_section(w.fl_dataset, "stopwords")),
        out_dir=lambda w: fl_dir(w.fl_dataset),
        code=code("future-lm-tokenize"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(4000, attempt),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/tokenize.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/tokenize.tsv"
    shell:
        "exec tempoformer future-lm-tokenize --corpus {input.corpus:q} --tokenizer {params.tokenizer:q} {params.restrict}"
        " --min-count {params.min_count} {params.stopwords} --out-dir {params.out_dir:q} 2> {log:q}"


rule future_lm_frequency:
    conda:
        CONDA_ENV
    input:
        tokens=rules.future_lm_tokenize.output.tokens,
        vocab=rules.future_lm_tokenize.output.vocab,
    output:
        f"{FL_RESULTS}/{{fl_dataset}}/frequency.npz",
    params:
        smoothing=lambda w: fl_section(w.fl_dataset, "smoothing") or 1.0,
        code=code("future-lm-frequency"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(2000, attempt),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/frequency.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/frequency.tsv"
    shell:
        "exec tempoformer future-lm-frequency --tokens {input.tokens:q} --vocab {input.vocab:q}"
        " --smoothing {params.smoothing} --output {output:q} 2> {log:q}"


rule future_lm_context:
    conda:
        CONDA_ENV
    input:
        corpus=rules.future_lm_corpus.output.corpus,
        counts=rules.future_lm_corpus.output.counts,
        vocab=rules.future_lm_tokenize.output.vocab,
    output:
        f"{FL_RESULTS}/{{fl_dataset}}/context.npz",
    params:
        kernels=KERNELS,
        # torch's threads, and MKL's and OpenMP's (which Snakemake sets to its count, scaled to --cores):
        # the config's; the numbers depend on them
        torch_threads=FL_THREADS,
        settings=lambda w: fl_context_settings(w.fl_dataset),
        device=fl_device(),
        code=code("future-lm-context"),
    threads: FL_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(fl_context_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(fl_context_mem_mb(w), attempt),
        gpu=lambda w: stage_gpu(FL, fl_longest_seconds(w.fl_dataset)),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/context.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/context.tsv"
    shell:
        "exec env {params.kernels} OMP_NUM_THREADS={params.torch_threads} MKL_NUM_THREADS={params.torch_threads} tempoformer future-lm-context --corpus {input.corpus:q} --counts {input.counts:q}"
        " --vocab {input.vocab:q} --settings {params.settings:q} --threads {params.torch_threads} {params.device}"
        " --output {output:q} 2> {log:q}"


rule future_lm_pretrain:
    conda:
        CONDA_ENV
    input:
        tokens=rules.future_lm_tokenize.output.tokens,
        vocab=rules.future_lm_tokenize.output.vocab,
        counts=rules.future_lm_corpus.output.counts,
    output:
        f"{FL_RESULTS}/{{fl_dataset}}/pretrained.pt",
    params:
        kernels=KERNELS,
        # torch's threads, and MKL's and OpenMP's (which Snakemake sets to its count, scaled to --cores):
        # the config's; the numbers depend on them
        torch_threads=FL_THREADS,
        settings=lambda w: fl_settings(w.fl_dataset, "base_model", "lm", "pretrain"),
        seed=lambda w: fl_section(w.fl_dataset, "pretrain_seed") or 0,
        device=fl_device(),
        code=code("future-lm-pretrain"),
    threads: FL_THREADS
    # Cluster requests (resources.smk): time from the epochs, the capped training years and
    # the LM's size (the measured ACL times scaled); a GPU where the dataset's training is long,
    # unless `device: cpu`.
    resources:
        runtime=lambda w, attempt: runtime_minutes(fl_pretrain_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(fl_lm_mem_mb(w, "pretrain"), attempt),
        gpu=lambda w: stage_gpu(FL, fl_longest_seconds(w.fl_dataset)),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/pretrain.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/pretrain.tsv"
    shell:
        "exec env {params.kernels} OMP_NUM_THREADS={params.torch_threads} MKL_NUM_THREADS={params.torch_threads} tempoformer future-lm-pretrain --tokens {input.tokens:q} --vocab {input.vocab:q}"
        " --counts {input.counts:q} --settings {params.settings:q} --seed {params.seed} --threads {params.torch_threads}"
        " {params.device} --output {output:q} 2> {log:q}"


rule future_lm_pretrain_recent:
    # Baseline-n's start point `base` on a scratch LM (train.start_checkpoint): the same LM, settings
    # and seed as future_lm_pretrain, trained on the n most recent training years only.
    conda:
        CONDA_ENV
    input:
        tokens=rules.future_lm_tokenize.output.tokens,
        vocab=rules.future_lm_tokenize.output.vocab,
        counts=rules.future_lm_corpus.output.counts,
    output:
        f"{FL_RESULTS}/{{fl_dataset}}/pretrained_recent{{fl_recent}}.pt",
    params:
        kernels=KERNELS,
        torch_threads=FL_THREADS,
        settings=lambda w: fl_settings(w.fl_dataset, "base_model", "lm", "pretrain"),
        seed=lambda w: fl_section(w.fl_dataset, "pretrain_seed") or 0,
        device=fl_device(),
        code=code("future-lm-pretrain"),
    threads: FL_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(fl_pretrain_recent_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(fl_lm_mem_mb(w, "pretrain"), attempt),
        gpu=lambda w: stage_gpu(FL, fl_longest_seconds(w.fl_dataset)),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/pretrain_recent{{fl_recent}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/pretrain_recent{{fl_recent}}.tsv"
    shell:
        "exec env {params.kernels} OMP_NUM_THREADS={params.torch_threads} MKL_NUM_THREADS={params.torch_threads} tempoformer future-lm-pretrain --tokens {input.tokens:q} --vocab {input.vocab:q}"
        " --counts {input.counts:q} --settings {params.settings:q} --seed {params.seed} --recent-years {wildcards.fl_recent:q}"
        " --threads {params.torch_threads} {params.device} --output {output:q} 2> {log:q}"


rule future_lm_train:
    conda:
        CONDA_ENV
    input:
        unpack(fl_train_inputs),
        pretrained=rules.future_lm_pretrain.output,
    output:
        model=f"{FL_RESULTS}/{{fl_dataset}}/runs/{{fl_model}}/seed{{seed}}/model.pt",
        info=f"{FL_RESULTS}/{{fl_dataset}}/runs/{{fl_model}}/seed{{seed}}/train.json",
    params:
        kernels=KERNELS,
        # torch's threads, and MKL's and OpenMP's (which Snakemake sets to its count, scaled to --cores):
        # the config's; the numbers depend on them
        torch_threads=FL_THREADS,
        model=fl_model_entry,
        settings=lambda w: fl_settings(w.fl_dataset, "finetune", "shortcut", "base_model"),
        recent=fl_recent_flag,
        context=lambda w, input: flag("context", input.context) if "context" in input.keys() else "",
        device=fl_device(),
        code=code("future-lm-train"),
    threads: FL_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(fl_train_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(fl_lm_mem_mb(w), attempt),
        gpu=lambda w: stage_gpu(FL, fl_longest_seconds(w.fl_dataset)),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/train_{{fl_model}}_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/train_{{fl_model}}_seed{{seed}}.tsv"
    shell:
        "exec env {params.kernels} OMP_NUM_THREADS={params.torch_threads} MKL_NUM_THREADS={params.torch_threads} tempoformer future-lm-train --tokens {input.tokens:q} --vocab {input.vocab:q}"
        " --counts {input.counts:q} --frequency {input.frequency:q} {params.context} --pretrained {input.pretrained:q}"
        " {params.recent} --name {wildcards.fl_model:q} --model {params.model:q} --settings {params.settings:q}"
        " --seed {wildcards.seed:q} --threads {params.torch_threads} {params.device} --output {output.model:q} 2> {log:q}"


rule future_lm_evaluate:
    conda:
        CONDA_ENV
    input:
        unpack(fl_evaluate_inputs),
    output:
        scores=f"{FL_RESULTS}/{{fl_dataset}}/runs/{{fl_model}}/seed{{seed}}/scores.parquet",
        generations=f"{FL_RESULTS}/{{fl_dataset}}/runs/{{fl_model}}/seed{{seed}}/generations.jsonl",
        metrics=f"{FL_RESULTS}/{{fl_dataset}}/runs/{{fl_model}}/seed{{seed}}/metrics.json",
    params:
        kernels=KERNELS,
        # torch's threads, and MKL's and OpenMP's (which Snakemake sets to its count, scaled to --cores):
        # the config's; the numbers depend on them
        torch_threads=FL_THREADS,
        settings=lambda w: fl_evaluate_settings(w.fl_dataset),
        context=lambda w, input: flag("context", input.context) if "context" in input.keys() else "",
        out_dir=lambda w: fl_run_dir(w.fl_dataset, w.fl_model, w.seed),
        device=fl_device(),
        code=code("future-lm-evaluate"),
        fingerprint=lambda w: fl_run_fingerprint(w.fl_dataset, w.fl_model, w.seed),
    threads: FL_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(fl_evaluate_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(fl_lm_mem_mb(w), attempt),
        gpu=lambda w: stage_gpu(FL, fl_longest_seconds(w.fl_dataset)),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/evaluate_{{fl_model}}_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/evaluate_{{fl_model}}_seed{{seed}}.tsv"
    shell:
        "exec env {params.kernels} OMP_NUM_THREADS={params.torch_threads} MKL_NUM_THREADS={params.torch_threads} tempoformer future-lm-evaluate --tokens {input.tokens:q} --corpus {input.corpus:q}"
        " --vocab {input.vocab:q} --counts {input.counts:q} --frequency {input.frequency:q} {params.context}"
        " --model {input.model:q} --name {wildcards.fl_model:q} --settings {params.settings:q} --seed {wildcards.seed:q}"
        " --threads {params.torch_threads} {params.device} --fingerprint {params.fingerprint:q}"
        " --out-dir {params.out_dir:q} 2> {log:q}"


rule future_lm_unigram:
    conda:
        CONDA_ENV
    input:
        unpack(fl_unigram_inputs),
    output:
        f"{FL_RESULTS}/{{fl_dataset}}/unigram/seed{{seed}}.json",
    params:
        kernels=KERNELS,
        # torch's threads, and MKL's and OpenMP's (which Snakemake sets to its count, scaled to --cores):
        # the config's; the numbers depend on them
        torch_threads=FL_THREADS,
        settings=lambda w: fl_unigram_settings(w.fl_dataset),
        device=fl_device(),
        code=code("future-lm-unigram"),
        fingerprint=lambda w: fl_unigram_fingerprint(w.fl_dataset, w.seed),
    threads: FL_THREADS
    resources:
        runtime=lambda w, attempt: runtime_minutes(fl_unigram_seconds(w), attempt),
        mem_mb=lambda w, attempt: mem_request(fl_lm_mem_mb(w), attempt),
        gpu=lambda w: stage_gpu(FL, fl_longest_seconds(w.fl_dataset)),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/unigram_seed{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/unigram_seed{{seed}}.tsv"
    shell:
        "exec env {params.kernels} OMP_NUM_THREADS={params.torch_threads} MKL_NUM_THREADS={params.torch_threads} tempoformer future-lm-unigram --tokens {input.tokens:q} --vocab {input.vocab:q}"
        " --counts {input.counts:q} --frequency {input.frequency:q} --model {input.model:q}"
        " --settings {params.settings:q} --threads {params.torch_threads} {params.device}"
        " --fingerprint {params.fingerprint:q} --output {output:q} 2> {log:q}"


rule future_lm_tables:
    conda:
        CONDA_ENV
    input:
        counts=rules.future_lm_corpus.output.counts,
        corpus=rules.future_lm_corpus.output.corpus,
        metrics=lambda w: fl_all_metrics(w.fl_dataset),
        unigram=lambda w: fl_unigram_outputs(w.fl_dataset),
    output:
        [f"{TABLES}/{{fl_dataset}}/future_lm_{t}.{ext}" for t in ("table1", "years", "table3", "beyond")
         for ext in ("md", "csv", "tex")],
        # the HTML renderings and the figures go into `snakemake --report`
        *(report(f"{TABLES}/{{fl_dataset}}/future_lm_{t}.html", category="Future language modeling",
                 labels={"table": f"future LM {t}"}) for t in ("table1", "years", "table3", "beyond")),
        *(report(f"{FIGURES}/{{fl_dataset}}/future_lm_{f}.png", category="Future language modeling",
                 labels={"figure": f"future LM {f}"}) for f in ("figure3", "figure1b", "ppl_by_year")),
    params:
        settings=lambda w: json.dumps({"dataset": w.fl_dataset, "baselines": FL_BASELINES, "model_order": fl_models(w.fl_dataset),
                                       "figure1b_words": fl_section(w.fl_dataset, "figure1b_words"),
                                       "bootstrap": fl_section(w.fl_dataset, "bootstrap")}, sort_keys=True),
        unigram=lambda w, input: " ".join(shlex.quote(path) for path in input.unigram),
        out_dir=lambda w: f"{TABLES}/{w.fl_dataset}",
        figures_dir=lambda w: f"{FIGURES}/{w.fl_dataset}",
        code=code("future-lm-tables"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(2000, attempt),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/tables.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/tables.tsv"
    shell:
        "exec tempoformer future-lm-tables --counts {input.counts:q} --corpus {input.corpus:q} --metrics {input.metrics:q}"
        " --unigram {params.unigram} --settings {params.settings:q} --out-dir {params.out_dir:q}"
        " --figures-dir {params.figures_dir:q} 2> {log:q}"


rule future_lm_human_sheet:
    conda:
        CONDA_ENV
    input:
        generations=lambda w: fl_all_generations(w.fl_dataset),
    output:
        sheet=f"{TABLES}/{{fl_dataset}}/future_lm_human_eval_sheet.csv",
        key=f"{TABLES}/{{fl_dataset}}/future_lm_human_eval_KEY.csv",
    params:
        per_model=lambda w: (fl_section(w.fl_dataset, "human_eval") or {}).get("per_model", 10),
        seed=lambda w: (fl_section(w.fl_dataset, "human_eval") or {}).get("seed", 0),
        code=code("future-lm-human-sheet"),
    resources:
        runtime=short_runtime,
        mem_mb=lambda w, attempt: mem_request(1000, attempt),
    log:
        f"{RESULTS}/logs/future_lm/{{fl_dataset}}/human_sheet.log",
    benchmark:
        f"{RESULTS}/benchmarks/future_lm/{{fl_dataset}}/human_sheet.tsv"
    shell:
        "exec tempoformer future-lm-human-sheet --generations {input.generations:q} --sheet {output.sheet:q}"
        " --key {output.key:q} --per-model {params.per_model} --seed {params.seed} 2> {log:q}"


rule future_lm_all:
    input:
        # evaluations and unigram runs that are missing or stale (common.smk, records_due)
        fl_records_due(),
        [fl_tables(name) + fl_figures(name) + [f"{TABLES}/{name}/future_lm_human_eval_sheet.csv"]
         for name in FL_DATASETS],
