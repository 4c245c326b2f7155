"""The whole DAG on the tiny config, in a temporary folder, through the real `snakemake` CLI."""

import re

import polars as pl
import pytest
import yaml

from conftest import REPO, planned_jobs, snakemake

pytestmark = pytest.mark.slow


def test_dag_writes_table2_with_every_model(finished_run):
    workdir, _ = finished_run
    table = (workdir / "results/tables/table2.md").read_text()
    for model in ("Random", "FFN History", "TempoFormer"):
        row = next(line for line in table.splitlines() if f"| {model} |" in line)
        assert "not run" not in row
        # 2 datasets × (2 classes, macro) over 3 folds; pooled over the one seed: no ±
        cells = [c.strip() for c in row.strip("|").split("|")[2:]]
        assert [bool(re.fullmatch(r"\d+\.\d ± \d+\.\d", c)) for c in cells] == [True, True, True, False] * 2
        assert all(re.fullmatch(r"\d+\.\d", c) for c in cells[3::4])
    csv = pl.read_csv(workdir / "results/tables/table2.csv")
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
    assert planned_jobs(result) == {"train": 6, "aggregate": 1, "all": 1}
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
