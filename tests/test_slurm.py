"""The tiny DAG through `snakemake --cores all --profile slurm` on a real one-node SLURM cluster.

The cluster (munged, slurmctld, slurmd, started by hand by scripts/slurm_cluster.sh) lives in a
temporary folder with its own ports and is stopped by the fixture's finalizer, pass or fail.
CI installs SLURM with scripts/install_slurm.sh; without it (or without root) these tests skip.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, REPO

pytestmark = pytest.mark.slow

CLUSTER = REPO / "scripts" / "slurm_cluster.sh"
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "srun")
# First attempt of each folds job gets 50 MB, far less than the job uses (SLURM kills it:
# jobacct_gather OverMemoryKill); the retry gets 1000 MB and succeeds.
FAILING_FIRST = "folds:mem_mb=50 * 20 ** (attempt - 1)"


def _missing_slurm() -> str | None:
    path = f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin"
    missing = [b for b in DAEMONS if shutil.which(b, path=path) is None]
    if missing:
        return f"SLURM not installed ({', '.join(missing)} missing): run scripts/install_slurm.sh"
    if os.geteuid() != 0:
        return "the test cluster runs its daemons as root (SlurmUser=root); not root"
    return None


needs_slurm = pytest.mark.skipif(_missing_slurm() is not None, reason=_missing_slurm() or "")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running one-node cluster; yields the environment its clients need."""
    state = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "PATH": f"{os.environ['PATH']}:/usr/sbin:/sbin"}
    try:
        started = subprocess.run(["bash", str(CLUSTER), "start", str(state)], capture_output=True,
                                 text=True, env=env, timeout=120)
        assert started.returncode == 0, f"cluster did not start:\n{started.stdout}{started.stderr}"
        yield {
            **env,
            "SLURM_CONF": str(state / "slurm.conf"),
            "PATH": f"{state / 'bin'}{os.pathsep}{BIN}{os.pathsep}{env['PATH']}",
            "HF_HUB_OFFLINE": "1",
        }
    finally:
        subprocess.run(["bash", str(CLUSTER), "stop", str(state)], env=env, timeout=120)


def profile_run(workdir: Path, config: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    """The README's cluster command, typed at the repository root, on a temporary workdir."""
    command = [str(BIN / "snakemake"), "--cores", "all", "--profile", "slurm",
               "-d", str(workdir), "--configfile", str(config), *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, timeout=1800)


@pytest.fixture(scope="module")
def slurm_run(cluster, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("slurm_dag")
    config = workdir / "config.yaml"
    shutil.copy(REPO / "config" / "tiny.yaml", config)
    result = profile_run(
        workdir, config, cluster,
        # no GPU on this cluster: a --gpus=1 request would be rejected by sbatch
        "--set-resources", "train:gpu=0", FAILING_FIRST,
        # poll squeue every few seconds instead of the profile's 20 s: a short test
        "--slurm-init-seconds-before-status-checks", "2", "--seconds-between-status-checks", "2",
        "--slurm-keep-successful-logs",
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    run_id = re.search(r"SLURM run ID: (\S+)", output)[1]
    queue = subprocess.run(["squeue", "--states=all", "--noheader", "--name", run_id,
                            "--format=%i|%T|%m|%k"], capture_output=True, text=True, env=cluster)
    jobs = [dict(zip(("id", "state", "mem", "comment"), line.split("|")))
            for line in queue.stdout.splitlines()]
    return workdir, output, jobs


@needs_slurm
def test_every_job_ran_as_a_slurm_job(slurm_run):
    workdir, output, jobs = slurm_run
    submitted = re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.", output)
    planned = int(re.search(r"^total\s+(\d+)$", output, re.M)[1])
    local = len(re.findall(r"^localrule \w+:", output, re.M))  # the target rule `all`
    assert local == 1 and len({job for job, _, _ in submitted}) == planned - local
    assert len(submitted) == planned - local + 2  # the two folds jobs ran twice
    assert {slurm_id for _, slurm_id, _ in submitted} == {job["id"] for job in jobs}
    for _, slurm_id, log in submitted:
        assert Path(log).is_file() and Path(log).name == f"{slurm_id}.log"
        assert Path(log).is_relative_to(workdir / ".snakemake" / "slurm_logs")
    states = [job["state"] for job in jobs]
    assert states.count("COMPLETED") == planned - local and states.count("FAILED") == 2


@needs_slurm
def test_same_tables_as_a_local_run(slurm_run, finished_run):
    workdir, _, _ = slurm_run
    local, _ = finished_run
    assert (workdir / "results/tiny/tables/table2.csv").read_text() == (
        local / "results/tiny/tables/table2.csv"
    ).read_text()
    metrics = sorted(p.relative_to(local) for p in (local / "results").rglob("metrics.json"))
    assert len(metrics) == 18
    for path in metrics:
        ours, theirs = (json.loads((root / path).read_text()) for root in (workdir, local))
        assert ours["test"] == theirs["test"], path


@needs_slurm
def test_failed_job_is_reported_and_retried_with_more_memory(slurm_run):
    workdir, output, jobs = slurm_run
    failed = [job for job in jobs if job["state"] == "FAILED"]
    assert {job["comment"] for job in failed} == {
        "rule_folds_wildcards_chitchat", "rule_folds_wildcards_lrs_synthetic"}
    for job in failed:
        assert job["mem"] == "50M"
        assert re.search(rf"Error in rule folds:\n\s+message: SLURM-job '{job['id']}' failed", output)
        dataset = job["comment"].split("_wildcards_")[1]
        log = workdir / ".snakemake/slurm_logs/rule_folds" / dataset / f"{job['id']}.log"
        assert "exceeded memory limit" in log.read_text()  # SLURM's reason, kept for the user
        retried = [j for j in jobs if j["comment"] == job["comment"] and j["state"] == "COMPLETED"]
        assert [j["mem"] for j in retried] == ["1000M"]  # attempt 2: 50 MB * 20
        assert int(retried[0]["id"]) > int(job["id"])
        assert (workdir / f"results/{dataset}/folds.parquet").is_file()
    assert output.count("Trying to restart job") == 2


def planned_resources(output: str) -> dict[str, dict[str, str]]:
    """Per planned train job (by its wildcards), its resources, from a dry run's job listing."""
    jobs = {}
    for block in output.split("rule train:")[1:]:
        wildcards = re.search(r"wildcards: (.*)", block)[1]
        resources = re.search(r"resources: (.*)", block)[1]
        jobs[wildcards] = dict(item.split("=", 1) for item in resources.split(", "))
    return jobs


def test_profile_asks_gpus_for_transformers_only(tmp_path):
    """Dry runs through the profile (no cluster needed): what each training job would request."""
    config = tmp_path / "config.yaml"
    shutil.copy(REPO / "config" / "tiny.yaml", config)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    result = profile_run(tmp_path, config, env, "-n")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Using profiles slurm and workflow specific profile profiles/default" in result.stdout + result.stderr
    jobs = planned_resources(result.stdout)
    assert len(jobs) == 18
    for wildcards, resources in jobs.items():
        transformer = "model=tempoformer" in wildcards
        assert resources["gpu"] == ("1" if transformer else "0"), wildcards
        assert resources["mem_mb"] == ("8000" if transformer else "2000"), wildcards
        assert resources["runtime"] == ("720" if transformer else "60"), wildcards
    off = profile_run(tmp_path, config, env, "-n", "--set-resources", "train:gpu=0")
    assert {r["gpu"] for r in planned_resources(off.stdout).values()} == {"0"}


@needs_slurm
def test_gpu_request_is_unschedulable_without_gpus(cluster):
    """Why the test turns the GPU request off: this cluster has no GPU, so sbatch refuses it."""
    refused = subprocess.run(["sbatch", "--gpus=1", "--wrap", "true"], capture_output=True,
                             text=True, env=cluster)
    assert refused.returncode != 0 and "gres" in refused.stderr.lower()
