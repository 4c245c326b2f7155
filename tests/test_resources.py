"""Every job of the workflow tells a cluster how long it runs and how much memory it needs
(runtime, mem_mb; gpu where its code runs on CUDA), from its rule's own config
(workflow/rules/resources.smk), so that under profiles/slurm, whose default is 30 minutes, a long
job is not killed for its time. The rule files are read for the declarations; dry runs of the
real snakemake CLI print what each planned job asks for, under the default config and under the
paper configs of the DCWE and future-LM stages, against the times their READMEs measured."""

import copy

import re

import pytest
import yaml

from conftest import REPO, snakemake

RULE_FILES = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
SOURCES = "\n".join(path.read_text() for path in RULE_FILES)
COMMANDS = ("shell", "run", "script", "notebook", "wrapper")


def rule_blocks() -> dict[str, str]:
    """{rule: its indented body} of every rule in the Snakefile and the rule files."""
    blocks = {}
    for path in RULE_FILES:
        text = path.read_text()
        for match in re.finditer(r"^rule (\w+):\n((?:(?:[ \t]+.*)?\n)*)", text, re.M):
            assert match[1] not in blocks, f"rule {match[1]} twice"
            blocks[match[1]] = match[2]
    return blocks


def section(body: str, name: str) -> dict[str, str]:
    """{key: expression} of a rule's `name:` section (one key=expression per line)."""
    match = re.search(rf"^    {name}:\n((?:        .*\n|\s*#.*\n)*)", body, re.M)
    if match is None:
        return {}
    return dict(re.match(r"\s*(\w+)=(.*?),?$", line).groups()
                for line in match[1].splitlines() if "=" in line and not line.strip().startswith("#"))


def grows_with_attempt(expression: str) -> bool:
    """The expression reads `attempt`, or names a function of the rule files that takes it."""
    return "attempt" in expression or re.search(rf"^def {re.escape(expression)}\(.*attempt", SOURCES, re.M)


BLOCKS = rule_blocks()
COMMAND_RULES = {rule for rule, body in BLOCKS.items()
                 if re.search(rf"^    ({'|'.join(COMMANDS)}):", body, re.M)}


def test_the_rule_files_hold_every_rule(tmp_path):
    result = snakemake(tmp_path, REPO / "config" / "config.yaml", "--list-rules")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.stdout.split()) == set(BLOCKS)
    # the rules without a command: the targets and the markers of a stale run (a local touch)
    assert set(BLOCKS) - COMMAND_RULES == {"all", "semantic_change_all", "dcwe_all", "future_lm_all", "stale_run",
                                           "dcwe_stale_run", "future_lm_stale_run"}


@pytest.mark.parametrize("rule", sorted(COMMAND_RULES))
def test_every_rule_with_a_command_asks_for_time_and_memory_growing_with_attempt(rule):
    resources = section(BLOCKS[rule], "resources")
    for key in ("runtime", "mem_mb"):
        assert key in resources, f"rule {rule}: no {key} under resources"
        assert grows_with_attempt(resources[key]), f"rule {rule}: {key}={resources[key]} ignores attempt"


def planned(result) -> list[tuple[str, dict, dict]]:
    """(rule, wildcards, resources) of each job a dry run prints."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", result.stdout):
        match = re.match(r"(?:local)?rule (\w+):\n", block)
        if match is None:
            continue
        fields = {key: re.search(rf"^\s+{key}: (.*)$", block, re.M) for key in ("wildcards", "resources")}
        wildcards, resources = ({} if m is None else dict(item.split("=", 1) for item in m[1].split(", "))
                                for m in fields.values())
        jobs.append((match[1], wildcards, resources))
    return jobs


def dry_run(tmp_path, config: dict) -> list[tuple[str, dict, dict]]:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, path, "-n")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = planned(result)
    assert jobs, result.stdout[-3000:]
    for rule, wildcards, resources in jobs:
        if rule in COMMAND_RULES:
            for key in ("runtime", "mem_mb"):
                assert int(resources.get(key, 0)) > 0, f"{rule} {wildcards}: {key} {resources.get(key)}"
    return jobs


def runtimes(jobs, rule: str) -> dict[str, int]:
    """{the job's wildcards: its runtime in minutes} of a rule's jobs."""
    return {", ".join(f"{k}={v}" for k, v in w.items()): int(r["runtime"]) for name, w, r in jobs if name == rule}


def gpus_by_dataset(jobs, key: str) -> dict[str, set[str]]:
    found = {}
    for _, wildcards, resources in jobs:
        if key in wildcards and "gpu" in resources:
            found.setdefault(wildcards[key], set()).add(resources["gpu"])
    return found


def load(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


@pytest.mark.slow
def test_default_config_every_job_asks_and_only_transformer_training_asks_for_a_gpu(tmp_path):
    config = load("config.yaml")
    # a dataset with its own node vectors plans dcwe_vectors too: then every rule has a job
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("1 50\n")
    config["dcwe"]["datasets"]["chitchat_tiny"]["vectors"] = str(vectors)
    # and a stream baseline with the authors' UMAP path plans reduce_embeddings
    config["models"]["swnu_umap"] = {"type": "swnu", "windows": copy.deepcopy(config["models"]["ffn_history"]["windows"]),
                                     "params": {"epochs": 1, "path_reduction": "umap", "grid": {"lr": [1.0e-3]}}}
    first = next(iter(config["datasets"].values()))
    first["models"] = [*first["models"], "swnu_umap"]
    jobs = dry_run(tmp_path, config)
    # (dcwe_weights_not_here: planned only where a run's weights were trained in another checkout)
    assert {rule for rule, _, _ in jobs} & COMMAND_RULES == COMMAND_RULES - {"dcwe_weights_not_here"}
    # the smoke run's semantic change, DCWE and future-LM jobs are short: CPU jobs, so a cluster
    # without GPUs needs only the `--set-resources train:gpu=0` that profiles/slurm documents
    assert {(rule, w.get("model")) for rule, w, r in jobs if r.get("gpu") == "1"} == {("train", "tempoformer")}


@pytest.mark.slow
def test_dcwe_cpu_scale_jobs_get_the_times_measured_under_load(tmp_path):
    """config/dcwe_chitchat.yaml: 4.3 s per MLM step of 16 and 7.5 s per sentiment step at a load
    of 4-5 (its header); at most 8 epochs of 213 MLM steps and 5 of 39 sentiment steps (patience
    may stop them earlier: the request covers the cap); 200 warm-up steps per seed; 5 models x 2
    grid points on seed 0 and each model once on seeds 1 and 2."""
    jobs = dry_run(tmp_path, load("dcwe_chitchat.yaml"))
    train, sentiment, warmup = (runtimes(jobs, rule) for rule in ("dcwe_train", "dcwe_sentiment", "dcwe_warmup"))
    assert len(train) == 5 * 2 + 5 * 2 and len(sentiment) == 2 * 2 + 2 * 2 and len(warmup) == 3
    assert all(minutes >= 8 * 213 * 4.3 / 60 for minutes in train.values()), train
    assert all(minutes >= 5 * 39 * 7.5 / 60 for minutes in sentiment.values()), sentiment
    assert all(minutes >= 200 * 4.3 / 60 for minutes in warmup.values()), warmup
    assert sum(int(r["runtime"]) for rule, _, r in jobs if rule in COMMAND_RULES) >= 20 * 8 * 213 * 4.3 / 60
    # the MLM dataset's jobs are long: on a GPU, all of them (the tables compare them)
    assert gpus_by_dataset(jobs, "dc_dataset")["chitchat_c5"] == {"1"}
    assert all(len(values) == 1 for values in gpus_by_dataset(jobs, "dc_dataset").values())


# Per job, minutes of one free core (config/future_lm_acl.yaml's header, README.md): pretraining
# 30, V_iw 4, each fine-tune 10-11 (Context² 17, Baseline-n 7; the Baseline's took 1,199 s in the
# reproduction run, results/tables/future_lm_acl/README.md), each evaluation 7, unigram 2.5.
FUTURE_LM_MEASURED = {"future_lm_pretrain": 30, "future_lm_context": 4, "future_lm_evaluate": 7, "future_lm_unigram": 2.5}
FINETUNE_MEASURED = {"baseline": 1199 / 60, "baseline_n": 7, "static_bias": 1199 / 60, "frequency_nolstm": 11, "frequency": 11, "context": 11,
                     "context2": 17}


@pytest.mark.slow
@pytest.mark.parametrize("overlays, seeds, total_hours", [((), 1, 2.5), (("future_lm_acl_3seeds.yaml",), 3, 6.3)])
def test_future_lm_acl_jobs_get_at_least_the_readme_times(tmp_path, overlays, seeds, total_hours):
    config = load("future_lm_acl.yaml")
    for overlay in overlays:
        config["future_lm"].update(load(overlay)["future_lm"])
    # The Anthology file is in ../shared, which CI has not: the embedded sample stands in. The
    # requests come from the config (years, caps, LM, epochs), not from the data.
    sample = REPO / "workflow" / "resources" / "future_lm" / "acl_sample_2016_2022.jsonl.gz"
    for spec in config["future_lm"]["datasets"].values():
        spec["sources"] = [{**source, "path": str(sample)} for source in spec["sources"]]
    jobs = dry_run(tmp_path, config)
    for rule, minutes in FUTURE_LM_MEASURED.items():
        found = runtimes(jobs, rule)
        assert found and all(m >= minutes for m in found.values()), (rule, found)
    finetunes = runtimes(jobs, "future_lm_train")
    assert len(finetunes) == len(FINETUNE_MEASURED) * seeds
    for wildcards, minutes in finetunes.items():
        model = re.search(r"fl_model=(\w+)", wildcards)[1]
        assert minutes >= FINETUNE_MEASURED[model], (wildcards, minutes)
    # the whole run: 2.5 h of one core for one seed, 6.3 h for three
    assert sum(int(r["runtime"]) for rule, _, r in jobs if rule.startswith("future_lm")) >= total_hours * 60
    # long trainings: every job of the dataset that runs on CUDA asks for a GPU
    assert gpus_by_dataset(jobs, "fl_dataset") == {"acl": {"1"}}
