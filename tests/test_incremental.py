"""Cached incremental reruns: after the tiny DAG has run once (the session's `finished_run`),
dry runs show that a change reruns exactly the jobs it affects.

(Nothing to do after a complete run, and a changed FFN History grid, are in test_workflow.py.)
"""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import BIN, REPO, planned_jobs, snakemake

pytestmark = pytest.mark.slow


def changed_config(config: Path, tmp_path: Path, change) -> Path:
    settings = yaml.safe_load(config.read_text())
    change(settings)
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump(settings, sort_keys=False))  # key order is part of the params
    return path


def planned_train_jobs(result: subprocess.CompletedProcess) -> list[str]:
    """The run folders of the train jobs a dry run plans."""
    return re.findall(r"output: \S+/runs/(\S+?)/metrics\.json", result.stdout)


def test_changed_tempoformer_hyperparameter_reruns_only_tempoformer(finished_run, tmp_path):
    workdir, config = finished_run

    def change(settings):
        settings["models"]["tempoformer"]["params"]["max_tokens"] += 8

    result = snakemake(workdir, changed_config(config, tmp_path, change), "-n")
    assert result.returncode == 0, result.stderr[-2000:]
    assert planned_jobs(result) == {"train": 6, "aggregate": 1, "all": 1}
    runs = planned_train_jobs(result)
    assert len(runs) == 6 and all(run.startswith("tempoformer/") for run in runs), runs


def test_added_window_size_adds_only_the_new_jobs(finished_run, tmp_path):
    workdir, config = finished_run

    def change(settings):
        settings["models"]["tempoformer"]["windows"] = [3, 5]

    result = snakemake(workdir, changed_config(config, tmp_path, change), "-n")
    assert result.returncode == 0, result.stderr[-2000:]
    # per dataset: the w5 streams and the 3 folds' TempoFormer runs on them; then the tables
    assert planned_jobs(result) == {"windows": 2, "train": 6, "aggregate": 1, "all": 1}
    assert all(run.startswith("tempoformer/w5/") for run in planned_train_jobs(result))
    assert sorted(re.findall(r"output: \S+/(streams_w\d+)\.parquet", result.stdout)) == ["streams_w5"] * 2


@pytest.fixture
def repo_copy(finished_run, tmp_path):
    """The workflow and package copied (so a module can be touched without touching the repo),
    and the finished run copied, all source files dated well before the run's outputs."""
    workdir, config = finished_run
    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    repo.mkdir()
    shutil.copy2(REPO / "Snakefile", repo / "Snakefile")
    for folder in ("workflow", "src", "config"):
        shutil.copytree(REPO / folder, repo / folder, ignore=ignore)
    old = time.time() - 30 * 86400  # older than any output: only what the test touches is newer
    for path in repo.rglob("*"):
        os.utime(path, (old, old))
    copy = tmp_path / "work"
    shutil.copytree(workdir, copy, symlinks=True, ignore=shutil.ignore_patterns("locks", "incomplete"))
    return repo, copy, config


def dry_run(repo: Path, workdir: Path, config: Path) -> subprocess.CompletedProcess:
    # Only the mtime trigger: the copy's modules have other paths than the ones the finished
    # run recorded, which the default `input` trigger would count as changed inputs. An edit of
    # a module in place changes nothing but its mtime, which is what this trigger sees.
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    command = [str(BIN / "snakemake"), "-s", str(repo / "Snakefile"), "-d", str(workdir),
               "--configfile", str(config), "--cores", "2", "-n", "--rerun-triggers", "mtime"]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def test_edited_model_module_reruns_its_jobs_and_nothing_upstream(repo_copy):
    repo, workdir, config = repo_copy
    before = dry_run(repo, workdir, config)
    assert before.returncode == 0, before.stderr[-2000:]
    assert "Nothing to be done" in before.stdout + before.stderr

    (repo / "src/tempoformer/models/tempoformer.py").touch()  # as an editor saving it would
    after = dry_run(repo, workdir, config)
    assert after.returncode == 0, after.stderr[-2000:]
    assert planned_jobs(after) == {"train": 6, "aggregate": 1, "all": 1}
    runs = planned_train_jobs(after)
    assert len(runs) == 6 and all(run.startswith("tempoformer/") for run in runs), runs
    assert "Updated input files: " in after.stdout and "models/tempoformer.py" in after.stdout


def test_raw_corpus_is_judged_by_content_not_mtime(tmp_path):
    """A re-mounted or copied corpus (new mtimes, same bytes) reruns nothing; an edited byte
    reruns the ingest."""
    raw = tmp_path / "mi"
    raw.mkdir()
    header = ",Person,Conversation,Custom Tag,Custom Tag 2,Topic Description,Class\r\n"
    conversation = raw / "3001.csv"
    conversation.write_text(header + "0,A,Hi there.,,,,0\r\n1,B,Hello.,,,,2\r\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "results": "results", "seeds": [0], "n_folds": 2, "fold_seed": 0, "threads": 1,
        "embedding_model": "minilm",
        "datasets": {"mi": {"format": "topic_shift_mi", "path": str(raw), "labels": ["M", "R"],
                            "dev_ratio": 0.25, "models": ["random"]}},
        "models": {"random": {"windows": [1], "params": {}}},
    }))
    target = "results/mi/posts.parquet"
    first = snakemake(tmp_path, config, target)
    assert first.returncode == 0, first.stderr[-2000:]

    later = time.time() + 60
    for path in (raw, conversation):
        os.utime(path, (later, later))
    touched = snakemake(tmp_path, config, target, "-n")
    assert touched.returncode == 0, touched.stderr[-2000:]
    assert "Nothing to be done" in touched.stdout + touched.stderr

    conversation.write_text(header + "0,A,Hi there!,,,,0\r\n1,B,Hello.,,,,2\r\n")
    edited = snakemake(tmp_path, config, target, "-n")
    assert edited.returncode == 0, edited.stderr[-2000:]
    assert planned_jobs(edited) == {"ingest": 1}
