# tempoformer: raw corpora → posts → windows/folds/embeddings → training runs → tables.
# Run: snakemake --cores all   (another config: --configfile FILE, which replaces the default)
from snakemake.utils import min_version, validate

min_version("9.0")

if not config:
    configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/streams.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"


rule all:
    input:
        f"{RESULTS}/tables/table2.md",
        f"{RESULTS}/tables/table2.csv",
