"""After `kill -9` of a Snakemake run at any moment, the same command finishes the work; a
failed job shows its error on the console and is not retried locally.

The settings come from the workflow profile `profiles/default/` (Snakemake reads it by itself),
the removal of a killed run's locks from the Snakefile."""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import BIN, REPO

# real Snakemake runs killed and rerun (a minute or two)
pytestmark = pytest.mark.slow

ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}

# The lines of the workflow's Snakefile that remove a killed run's locks, then a job that
# writes its output and keeps running while the file `slow` exists: the moment to kill it.
MINIMAL_SNAKEFILE = """
from tempoformer.training.lock import release_stale_snakemake_locks

if workflow.is_main_process:
    release_stale_snakemake_locks()


rule all:
    input: "b.txt"

rule a:
    output: "a.txt"
    shell: "echo partial > {output}; while [ -e slow ]; do sleep 0.1; done; echo complete > {output}"

rule b:
    input: "a.txt"
    output: "b.txt"
    shell: "cp {input} {output}"
"""


def start(command, cwd, log):
    # its own process group, so that the kill reaches Snakemake and its jobs, as Ctrl-\ or a
    # killed terminal would
    with open(log, "w") as out:
        return subprocess.Popen(command, cwd=cwd, env=ENV, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def wait_for(condition, process, timeout=300):
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, "Snakemake ended before the moment to kill it"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def kill_group(process):
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)


def left_behind(workdir: Path, what: str) -> list:
    folder = workdir / ".snakemake" / what
    return list(folder.rglob("*")) if folder.exists() else []


def test_killed_just_after_a_job_wrote_its_output_the_same_command_finishes(tmp_path):
    (tmp_path / "Snakefile").write_text(MINIMAL_SNAKEFILE)
    profile = tmp_path / "profiles" / "default"
    profile.mkdir(parents=True)
    shutil.copy(REPO / "profiles" / "default" / "config.yaml", profile)
    command = [str(BIN / "snakemake"), "--cores", "1"]
    (tmp_path / "slow").touch()

    first = start(command, tmp_path, tmp_path / "first.log")
    wait_for(lambda: (tmp_path / "a.txt").exists(), first)
    kill_group(first)
    # what used to take two manual steps: an incomplete output and a stale lock
    assert left_behind(tmp_path, "incomplete") and left_behind(tmp_path, "locks")

    (tmp_path / "slow").unlink()
    again = subprocess.run(command, cwd=tmp_path, env=ENV, capture_output=True, text=True,
                           timeout=300, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (tmp_path / "a.txt").read_text() == "complete\n"
    assert (tmp_path / "b.txt").read_text() == "complete\n"
    assert not left_behind(tmp_path, "locks")


def tiny_config(tmp_path, **changes) -> Path:
    """The tiny config cut to the synthetic LRS dataset and one model."""
    config = yaml.safe_load((REPO / "config" / "tiny.yaml").read_text())
    config["datasets"] = {"lrs_synthetic": {**config["datasets"]["lrs_synthetic"], "models": ["ffn_history"]}}
    config["models"] = {"ffn_history": config["models"]["ffn_history"]}
    config.update(changes)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def workflow_command(workdir, config, target):
    return [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir),
            "--configfile", str(config), "--cores", "1", target]


def test_workflow_killed_while_running_resumes_without_unlock(tmp_path):
    """The workflow's own Snakefile and profile: kill -9 once its first job's output is there."""
    workdir = tmp_path / "work"
    config = tiny_config(tmp_path)
    command = workflow_command(workdir, config, "results/lrs_synthetic/posts.parquet")

    first = start(command, REPO, tmp_path / "first.log")
    wait_for(lambda: (workdir / "results" / "raw" / "lrs_synthetic").exists(), first)
    kill_group(first)
    assert left_behind(workdir, "locks")

    again = subprocess.run(command, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600,
                           check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    posts = pl.read_parquet(workdir / "results" / "lrs_synthetic" / "posts.parquet")
    assert posts.height > 0 and set(posts["label"]) <= {"Sw", "N-Sw"}


def test_failed_job_shows_its_error_on_the_console_and_runs_once(tmp_path):
    """A bad setting fails the same way every time: no retry, and the log's error on screen."""
    workdir = tmp_path / "work"
    config = tiny_config(tmp_path, embedding_model="no-such-sbert-model")
    result = subprocess.run(workflow_command(workdir, config, "results/lrs_synthetic/sbert.npy"),
                            cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600,
                            check=False)
    assert result.returncode != 0
    console = result.stdout + result.stderr
    assert console.count("Error in rule embed") == 1 and "Trying to restart" not in console
    error = (workdir / "results" / "logs" / "lrs_synthetic" / "embed.log").read_text().strip()
    assert error.splitlines()[-1] in console, console[-3000:]


@pytest.mark.parametrize("profile, retries, executor", [([], 0, None), (["--profile", "slurm"], 2, "slurm")])
def test_profiles_combine(monkeypatch, profile, retries, executor):
    """Locally and with the SLURM profile alike, the workflow profile's settings hold; only
    SLURM runs retry (out-of-memory and time-limit kills, with more resources each attempt)."""
    from snakemake.cli import parse_args

    monkeypatch.chdir(REPO)  # where the README's commands are typed
    _, args = parse_args(["--cores", "all", *profile])
    assert args.rerun_incomplete and args.show_failed_logs
    assert args.retries == retries and args.executor == executor
