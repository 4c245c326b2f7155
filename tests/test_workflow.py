"""The whole DAG on the tiny config, in a temporary folder, through the real `snakemake` CLI."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import REPO

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


def snakemake(workdir: Path, configfile: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    command = [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir),
               "--configfile", str(configfile), "--cores", "2", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)


def planned_jobs(result: subprocess.CompletedProcess) -> dict[str, int]:
    """Job counts per rule from a dry run's 'Job stats' table."""
    stats = result.stdout.split("Job stats:")[-1] if "Job stats:" in result.stdout else ""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M) if m[1] != "total"}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("dag")
    config = workdir / "config.yaml"
    shutil.copy(REPO / "config" / "tiny.yaml", config)
    result = snakemake(workdir, config)
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir, config


def test_dag_writes_table2_with_every_model(finished_run):
    workdir, _ = finished_run
    table = (workdir / "results/tables/table2.md").read_text()
    for model in ("Random", "FFN History", "TempoFormer"):
        row = next(line for line in table.splitlines() if f"| {model} |" in line)
        assert "not run" not in row
        assert len(re.findall(r"\d+\.\d ± \d+\.\d", row)) == 8  # 2 datasets × (2 classes, macro, pooled)
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
    assert "ffn_history" in result.stdout and "/tempoformer/" not in result.stdout


def test_bad_config_key_is_named(tmp_path):
    settings = yaml.safe_load((REPO / "config" / "tiny.yaml").read_text())
    settings["models"]["tempoformer"]["windowz"] = [3]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(settings))
    result = snakemake(tmp_path, bad, "-n")
    assert result.returncode != 0
    assert "windowz" in result.stdout + result.stderr
