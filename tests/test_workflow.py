"""The whole DAG on the tiny config, in a temporary folder, through the real `snakemake` CLI."""

import re

import polars as pl
import pytest
import yaml

from conftest import REPO, planned_jobs, snakemake

pytestmark = pytest.mark.slow


def test_dag_writes_table2_with_every_model(finished_run):
    workdir, _ = finished_run
    table = (workdir / "results/tiny/tables/table2.md").read_text()
    for model in ("Random", "FFN History", "TempoFormer"):
        row = next(line for line in table.splitlines() if f"| {model} |" in line)
        assert "not run" not in row
        # 2 datasets × (2 classes, macro) over 3 folds; pooled over the one seed: no ±; then the runs
        cells = [c.strip() for c in row.strip("|").split("|")[2:]]
        assert [bool(re.fullmatch(r"\d+\.\d ± \d+\.\d", c)) for c in cells] == [True, True, True, False, False] * 2
        assert all(re.fullmatch(r"\d+\.\d", c) for c in cells[3::5])
        assert cells[4::5] == ["3", "3"]  # the runs behind the row: 3 folds x 1 seed per dataset
    csv = pl.read_csv(workdir / "results/tiny/tables/table2.csv")
    assert set(csv["dataset"]) == {"chitchat", "lrs_synthetic"}


def test_rerun_has_nothing_to_do(finished_run):
    workdir, config = finished_run
    result = snakemake(workdir, config, "-n")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Nothing to be done" in result.stdout + result.stderr


def test_changed_grid_reruns_only_that_model(finished_run, tmp_path):
    workdir, config = finished_run
    settings = yaml.safe_load(config.read_text())
    settings["models"]["ffn_history"]["params"]["grid"]["lr"] = [5.0e-4]
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(settings))
    result = snakemake(workdir, changed, "-n")
    assert result.returncode == 0, result.stderr[-2000:]
    assert planned_jobs(result) == {"stale_run": 6, "train": 6, "aggregate": 1, "all": 1}
    # the aggregate lists every run as input; only the train jobs' outputs tell what reruns
    assert re.search(r"output: \S*runs/ffn_history/", result.stdout)
    assert not re.search(r"output: \S*runs/tempoformer/", result.stdout)


def test_bad_config_key_is_named(tmp_path):
    settings = yaml.safe_load((REPO / "config" / "tiny.yaml").read_text())
    settings["models"]["tempoformer"]["windowz"] = [3]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(settings))
    result = snakemake(tmp_path, bad, "-n")
    assert result.returncode != 0
    assert "windowz" in result.stdout + result.stderr


def _dry_run_with(tmp_path, change, *args):
    settings = yaml.safe_load((REPO / "config" / "tiny.yaml").read_text())
    change(settings)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(settings))
    return snakemake(tmp_path, path, "-n", *args)


def test_misspelt_or_mistyped_model_param_stops_before_any_job(tmp_path):
    """params are checked against the model registry at start-up, naming the model and key."""
    result = _dry_run_with(tmp_path, lambda s: s["models"]["tempoformer"]["params"].update(epochz=50))
    assert result.returncode != 0
    assert "models.tempoformer.params: unknown key 'epochz'" in result.stdout + result.stderr
    result = _dry_run_with(tmp_path, lambda s: s["models"]["ffn_history"]["params"].update(epochs="five"))
    assert result.returncode != 0
    assert "models.ffn_history.params.epochs: 'five' is not of type int" in result.stdout + result.stderr


def test_numeric_jobs_run_with_portable_kernels_and_the_configured_threads(tmp_path):
    portable = _dry_run_with(tmp_path, lambda s: None, "-p")
    assert portable.returncode == 0, portable.stderr[-2000:]
    train = [line for line in portable.stdout.splitlines() if " tempoformer train " in line]
    assert train and all("exec env MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 tempoformer" in line
                         for line in train)
    # --cores 1 scales Snakemake's thread count down; torch still gets the configured threads
    fast = _dry_run_with(tmp_path, lambda s: s.update(portable_kernels=False, threads=2), "-p", "--cores", "1")
    assert fast.returncode == 0, fast.stderr[-2000:]
    embed = [line for line in fast.stdout.splitlines() if " tempoformer embed " in line]
    assert embed and all("exec env  tempoformer embed" in line and "--threads 2" in line for line in embed)
