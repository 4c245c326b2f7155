# The aggregate rule's settings and input functions (workflow/rules/aggregate.smk).

# Issue 68's cause-by-cause table (src/tempoformer/reporting/causes.py), only for a config with a
# `causes:` section: then the aggregate rule also writes causes.* and runs `tempoformer causes`
# after `tempoformer aggregate`. Without one, the rule's outputs, params and command are those of
# before, so the committed config sets plan no rerun of it (and `aggregate`'s code digest does not
# include causes.py: its own subcommand).
CAUSES = config.get("causes")
if CAUSES:
    from tempoformer.config_checks import check_causes

    try:
        check_causes(config)
    except ValueError as error:
        raise ValueError(f"config: {error}") from None
    CAUSE_CHOICES = CAUSES.get("chosen_on_dev") or {}
    # the model entries whose runs the table reads (a choice made on dev is no entry: its members are)
    CAUSE_MODELS = {CAUSES["reference"], *CAUSES["baselines"], *CAUSES["factors"],
                    *(m for members in CAUSE_CHOICES.values() for m in members)} - set(CAUSE_CHOICES)


def causes_outputs():
    return named_table_files("causes", "Cause by cause") if CAUSES else {}


def causes_params():
    """The causes subcommand's code digest, its section and its runs (those of the section's models)."""
    if not CAUSES:
        return {}
    return {
        "causes_code": code("causes"),
        "causes": json.dumps(CAUSES),  # in the config's order: the rows' order
        "causes_metrics": [f"{run_dir(*run)}/metrics.json" for run in configured_runs() if run[1] in CAUSE_MODELS],
        # each entry's config backbone (default minilm), for runs that recorded none
        "causes_backbones": json.dumps({m: MODELS[m]["params"].get("backbone", "minilm") for m in sorted(CAUSE_MODELS)},
                                       sort_keys=True),
    }


AGGREGATE_COMMAND = (
    "tempoformer aggregate --metrics {input.metrics:q} --datasets {params.datasets:q}"
    " --resamples {params.resamples} --bootstrap-seed {params.seed} --bootstrap-unit {params.unit:q}"
    " --backbones {params.backbones:q} --out-dir {params.tables:q} --figures-dir {params.figures:q} 2> {log:q}"
)
CAUSES_COMMAND = (
    " && exec tempoformer causes --metrics {params.causes_metrics:q} --datasets {params.datasets:q}"
    " --causes {params.causes:q} --backbones {params.causes_backbones:q}"
    " --resamples {params.resamples} --bootstrap-seed {params.seed} --bootstrap-unit {params.unit:q}"
    " --out-dir {params.tables:q} 2>> {log:q}"
)
# the command before issue 68, byte for byte, for a config without a causes section
AGGREGATE_SHELL = f"{AGGREGATE_COMMAND}{CAUSES_COMMAND}" if CAUSES else f"exec {AGGREGATE_COMMAND}"
