"""The future LM stage in the DAG: the default config plans every rule; a tiny config runs the
stage end to end, and a rerun does nothing."""

import json

import pytest
import yaml

from conftest import REPO, as_a_fresh_clone, planned_jobs, snakemake

pytestmark = pytest.mark.slow  # runs the real snakemake CLI


def default_future_lm() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())["future_lm"]


def write_config(tmp_path, config: dict):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_default_config_plans_every_future_lm_rule(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    result = snakemake(tmp_path, write_config(tmp_path, config), "-n", "future_lm_all")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = planned_jobs(result)
    assert {k: v for k, v in jobs.items() if k.startswith("future_lm")} == {
        "future_lm_corpus": 1, "future_lm_tokenize": 1, "future_lm_frequency": 1, "future_lm_context": 1,
        "future_lm_pretrain": 1, "future_lm_pretrain_recent": 2, "future_lm_train": 7, "future_lm_evaluate": 7,
        "future_lm_unigram": 1, "future_lm_tables": 1, "future_lm_human_sheet": 1, "future_lm_all": 1}


def test_baseline_n_start_plans_its_own_pretraining(tmp_path):
    # start: base (the default) on a scratch LM: Baseline-n's n = 1, 2 each start from an LM pretrained
    # on the last n training years only; start: pretrained, or a pretrained base model: from pretrained.pt
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    result = snakemake(tmp_path, write_config(tmp_path, config), "-n", "-p", "--cores", "1", "future_lm_all")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    recent = [line for line in lines if " tempoformer future-lm-pretrain " in line and "--recent-years" in line]
    assert sorted(line.split("--recent-years ")[1].split()[0] for line in recent) == ["1", "2"]
    train = [line for line in lines if " tempoformer future-lm-train " in line]
    flagged = [line for line in train if "--recent-pretrained" in line]
    assert len(train) == 7 and len(flagged) == 1 and "--name baseline_n " in flagged[0]
    assert "pretrained_recent1.pt" in flagged[0] and "pretrained_recent2.pt" in flagged[0]
    config["future_lm"]["models"]["baseline_n"]["start"] = "pretrained"
    result = snakemake(tmp_path, write_config(tmp_path, config), "-n", "-p", "--cores", "1", "future_lm_all")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "--recent" not in result.stdout and "future_lm_pretrain_recent" not in planned_jobs(result)


@pytest.mark.parametrize("change, message", [
    ({"models": {"frequency": {"type": "frequency", "alpha": [0.1]}}},
     "future_lm.models.frequency: a frequency model with alpha 0.1"),
    ({"models": {"static_bias": {"type": "static_bias", "start": "pretrained"}}}, "Baseline-n's option"),
    ({"baselines": ["baseline", "recent"]}, "no entry under future_lm.models"),
    ({"baseline": "baseline"}, "not both"),
])
def test_bad_option_combinations_are_refused_when_the_workflow_starts(tmp_path, change, message):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for key, value in change.items():
        if key == "models":
            config["future_lm"]["models"].update(value)
        else:
            config["future_lm"][key] = value
    result = snakemake(tmp_path, write_config(tmp_path, config), "-n", "--cores", "1", "future_lm_all")
    assert result.returncode != 0 and message in result.stdout + result.stderr, result.stderr[-3000:]


@pytest.mark.parametrize("where, key, value", [
    ("models", "context3", {"type": "context3"}),
    ("models", "nolstm", {"type": "frequency_nolstm", "nolstm_bias": "last_year"}),
    ("evaluation", "frequency_input", "scaled"),
    ("evaluation", "chunk_separator", "newline"),
    ("models", "scoped", {"type": "context", "alpha_scope": "frequency"}),
    ("models", "started", {"type": "baseline_n", "n": [2], "start": "scratch"}),
    ("models", "static", {"type": "static"}),
    ("unigram", "reference", "absolute"),
    ("baselines", None, []),
])
def test_bad_settings_are_refused_by_the_schema(where, key, value):
    # the Snakefile's first step, validate(config, schema), in this process: no snakemake start-up
    from snakemake.utils import validate

    config = {"results": "results", "future_lm": default_future_lm()}
    if key is None:
        config["future_lm"][where] = value
    else:
        config["future_lm"][where][key] = value
    bad = {"nolstm": lambda v: v["nolstm_bias"], "scoped": lambda v: v["alpha_scope"],
           "started": lambda v: v["start"]}.get(key, lambda v: v["type"] if where == "models" else v)(value)
    if value == []:
        bad = "should be non-empty|is too short"
    with pytest.raises(Exception, match=bad):
        validate(config, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))


def test_tiny_stage_runs_and_a_rerun_does_nothing(tmp_path):
    fl = default_future_lm()
    fl.update({
        "lm": {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32, "context": 48, "dropout": 0.1},
        "pretrain": {"epochs": 1, "batch_size": 8, "lr": 1.0e-3},
        "finetune": {"epochs": 1, "batch_size": 8, "lr": 1.0e-3},
        "context": {"encoder": "minilm", "cap_per_year": 3, "max_length": 64, "batch_size": 8, "layer": -1, "seed": 0},
        "evaluation": {"batch_size": 8, "stride": None, "n_generate": 1, "cm_references": 5, "chunked": True},
        "generation": {"beams": 2, "top_k": 50, "top_p": 0.92, "max_tokens": 8},
        # The fewest jobs that still run every step a model goes through (each job pays ~2-3 s of
        # torch import): one model, no unigram baselines, no V_iw. The models' code is tested
        # in test_future_lm_models.py; the default config runs every rule (README).
        "unigram": {"run": False},
        "human_eval": {"per_model": 1, "seed": 0},
        "bootstrap": {"resamples": 50, "seed": 0},
        "models": {"baseline": {"type": "baseline"}},
        "baselines": ["baseline"],
    })
    fl["datasets"]["acl_sample"]["cap"] = {"history": 6, "train": 6, "dev": 6, "test": 6, "future": 6, "seed": 0}
    configfile = write_config(tmp_path, {"results": "results", "future_lm": fl})
    result = snakemake(tmp_path, configfile)
    assert result.returncode == 0, result.stderr[-4000:]
    tables = tmp_path / "results" / "tables" / "acl_sample"
    table3 = (tables / "future_lm_table3.md").read_text()
    assert "| Baseline | baseline | 1 |" in table3 and "not in our copy" in table3
    assert "PPL/token, authors' chunks" in table3  # evaluation.chunked went through the evaluate job
    assert (tables / "future_lm_human_eval_sheet.csv").read_text().startswith("item,year,text,topic_clear_correct")
    counts = json.loads((tmp_path / "results" / "future_lm" / "acl_sample" / "corpus_counts.json").read_text())
    assert counts["used_per_split"]["test"] == 6
    # what the numbers were made with (future_lm/numerics.py): the pinned kernels, the config's threads
    metrics = json.loads((tmp_path / "results" / "future_lm" / "acl_sample" / "runs" / "baseline" / "seed0"
                          / "metrics.json").read_text())
    assert metrics["numerics"]["device"] == "cpu" or metrics["numerics"]["device"].startswith("cuda")
    if metrics["numerics"]["device"] == "cpu":
        assert metrics["numerics"]["threads"] == 1 and metrics["numerics"]["cpu_capability"] == "AVX2"
        assert metrics["numerics"]["kernels"] == {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2",
                                                  "ONEDNN_MAX_CPU_ISA": "AVX2"}
        assert metrics["numerics"]["thread_vars"] == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert metrics["train_numerics"] == metrics["pretrain_numerics"] == metrics["numerics"]
    again = snakemake(tmp_path, configfile, "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr

    # A fresh clone: the committed run records (train.json, metrics, scores, generations) with
    # new dates; no weights, no data files (made again from the shared corpus), no Snakemake records.
    as_a_fresh_clone(tmp_path, lambda path: ("/runs/" in str(path) and path.suffix != ".pt")
                     or "/tables/" in str(path))
    fresh = snakemake(tmp_path, configfile, "-n")
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    planned = planned_jobs(fresh)
    for rule in ("future_lm_pretrain", "future_lm_train", "future_lm_evaluate", "future_lm_context"):
        assert rule not in planned, (rule, planned)

    # an evaluation setting changed: the model is evaluated again, and trained again first
    # because its weights are not here
    fl["evaluation"]["n_generate"] = 2
    configfile = write_config(tmp_path, {"results": "results", "future_lm": fl})
    changed = planned_jobs(snakemake(tmp_path, configfile, "-n"))
    assert changed["future_lm_stale_run"] == 1 and changed["future_lm_evaluate"] == 1
    assert changed["future_lm_train"] == 1 and changed["future_lm_pretrain"] == 1


def test_numeric_future_lm_jobs_get_portable_kernels_and_the_configured_threads(tmp_path):
    # The numbers of every torch job depend on its kernels and its thread count (README, "What
    # matches across machines"): on this machine `threads: 2` with `portable_kernels: false`
    # turned Context²'s sign test against the Baseline from 21/19 into 17/23. Snakemake scales a
    # rule's `threads` down to --cores, so torch (and MKL) must get the config's count, not {threads}.
    numeric = ("context", "pretrain", "train", "evaluate", "unigram")
    fl = default_future_lm()
    fl["threads"] = 2
    for cores, portable in (("1", True), ("2", True), ("1", False)):
        configfile = write_config(tmp_path, {"results": "results", "portable_kernels": portable, "future_lm": fl})
        result = snakemake(tmp_path, configfile, "-n", "-p", "--cores", cores, "future_lm_all")
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        lines = [line for line in result.stdout.splitlines() if " tempoformer future-lm-" in line]
        jobs = [line for line in lines if any(f" tempoformer future-lm-{n} " in line for n in numeric)]
        assert len(jobs) == 19, lines  # context, pretrain (+ 2 on recent years), 7 x (train, evaluate), unigram
        # Snakemake exports OMP_NUM_THREADS and MKL_NUM_THREADS = its scaled count; MKL's thread count
        # changes the numbers too (context.npz with MKL_NUM_THREADS=1 and 2 torch threads differed)
        threads = "OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 tempoformer"
        env = f"exec env MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 {threads}" if portable \
            else f"exec env  {threads}"
        assert all(env in line and " --threads 2 " in line for line in jobs), (cores, portable, jobs)
