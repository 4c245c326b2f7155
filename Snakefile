# tempoformer: raw corpora → posts → windows/folds/embeddings → training runs → tables.
# Run: snakemake --cores all   (another config: --configfile FILE, which replaces the default)
import os
import sys

from snakemake.utils import min_version, validate

# The workflow reads the package it ships with (model registry, code fingerprints), whatever
# copy of it is installed.
sys.path.insert(0, os.path.join(workflow.basedir, "src"))

# A run killed with kill -9 leaves its locks in .snakemake/locks, and the next run would stop
# until `snakemake --unlock`. Each main Snakemake process of this workflow marks itself alive
# with a flock that dies with it; when no other is alive, the locks are stale and go.
if workflow.is_main_process:
    from tempoformer.training.lock import release_stale_snakemake_locks

    release_stale_snakemake_locks()

min_version("9.0")

# The default config only when none is given: a --configfile replaces it instead of merging.
# A YAML syntax error in it is named with its line (Snakemake's own message has none; the files
# of --configfile Snakemake reads before this file runs: `--verbose` shows their line).
if not config:
    from tempoformer.config_checks import check_yaml_file

    check_yaml_file(os.path.join(workflow.basedir, "config", "config.yaml"))

    configfile: os.path.join(workflow.basedir, "config", "config.yaml")


validate(config, "workflow/schemas/config.schema.yaml")


# `snakemake --report results/report.html`: this text, then every output marked report(...).
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/streams.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/reduce.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate_common.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/semantic_change.smk"
include: "workflow/rules/dcwe.smk"
include: "workflow/rules/future_lm.smk"


rule all:
    input:
        # the paper's Tables 1-6, 11 and Figure 3
        [rules.aggregate.output, rules.table1.output, rules.table5.output] if DATASETS else [],
        # configured runs that are missing or stale, named here because the tables alone do not
        # make Snakemake remake them (common.smk, runs_due)
        runs_due() if DATASETS else [],
        rules.semantic_change_tables.output if SC_DATASETS else [],
        # Hofmann et al. (2021) Tables 1-4 and the change-score table
        rules.dcwe_tables.output if DC_DATASETS else [],
        dc_runs_due() if DC_DATASETS else [],
        # Li & Flanigan (2024): Tables 1 and 3, beyond-the-paper table, Figures 3 and 1b
        rules.future_lm_all.input if FL_DATASETS else [],
