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
    # stale_run: the marker that reruns a run whose recorded fingerprint is not the current one
    assert planned_jobs(result) == {"stale_run": 6, "train": 6, "aggregate": 1, "all": 1}
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
    """The workflow and package copied (so a module can be edited without touching the repo),
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
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    command = [str(BIN / "snakemake"), "-s", str(repo / "Snakefile"), "-d", str(workdir),
               "--configfile", str(config), "--cores", "2", "-n"]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def test_edited_module_reruns_exactly_the_jobs_that_import_it(repo_copy):
    """models/padding.py is imported by TempoFormer's module only (never by `train` itself): an
    edit reruns the TempoFormer runs and the tables, not FFN History, not Random, not ingest."""
    repo, workdir, config = repo_copy
    before = dry_run(repo, workdir, config)
    assert before.returncode == 0, before.stderr[-2000:]
    assert "Nothing to be done" in before.stdout + before.stderr

    padding = repo / "src/tempoformer/models/padding.py"
    padding.write_text(padding.read_text() + "\nPADDING_SIDE = 'right'  # a line of code\n")
    after = dry_run(repo, workdir, config)
    assert after.returncode == 0, after.stderr[-2000:]
    assert planned_jobs(after) == {"stale_run": 6, "train": 6, "aggregate": 1, "all": 1}
    runs = planned_train_jobs(after)
    assert len(runs) == 6 and all(run.startswith("tempoformer/") for run in runs), runs


def test_ingest_helper_edit_reruns_the_whole_chain(repo_copy):
    """data/ingest/_common.py (every reader's helpers) was missing from the hand-written lists."""
    repo, workdir, config = repo_copy
    common = repo / "src/tempoformer/data/ingest/_common.py"
    common.write_text(common.read_text() + "\nREADER_VERSION = 2  # a line of code\n")
    after = dry_run(repo, workdir, config)
    assert after.returncode == 0, after.stderr[-2000:]
    jobs = planned_jobs(after)
    assert jobs["ingest"] == 2 and jobs["train"] == 18 and jobs["table1"] == 1, jobs


def test_comments_docstrings_and_layout_rerun_nothing(repo_copy):
    """training/loop.py is imported by every train job: a reworded docstring, a new comment and
    other blank lines and line breaks change what no job computes."""
    repo, workdir, config = repo_copy
    loop = repo / "src/tempoformer/training/loop.py"
    text = loop.read_text()
    assert text.startswith('"""')
    edited = ("# a comment a new contributor added\n"
              + text.replace('"""', '"""A reworded docstring. ', 1).replace("\n\n\n", "\n\n\n\n"))
    loop.write_text(edited)
    result = dry_run(repo, workdir, config)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Nothing to be done" in result.stdout + result.stderr, result.stdout[-3000:]


def test_arithmetic_change_in_ffn_history_reruns_only_ffn_history(repo_copy):
    repo, workdir, config = repo_copy
    module = repo / "src/tempoformer/models/ffn_history.py"
    text = module.read_text()
    expression = "/ weights.sum(1)"
    assert text.count(expression) == 1
    module.write_text(text.replace(expression, "/ weights.sum(1).clamp(min=1.0)"))
    result = dry_run(repo, workdir, config)
    assert result.returncode == 0, result.stderr[-2000:]
    runs = planned_train_jobs(result)
    assert runs and all(run.startswith("ffn_history/") for run in runs), runs
    assert planned_jobs(result) == {"stale_run": len(runs), "train": len(runs), "aggregate": 1, "all": 1}


def test_added_registry_entry_reruns_nothing(repo_copy):
    """The extension path of models/registry.py: a new model type is a line in MODEL_TYPES."""
    repo, workdir, config = repo_copy
    registry = repo / "src/tempoformer/models/registry.py"
    text = registry.read_text()
    line = next(line for line in text.splitlines() if '_stream("ffn_history"' in line)
    registry.write_text(text.replace(line, line + "\n" + line.replace('"ffn_history", ', '"ffn_history_wide", ', 1)))
    result = dry_run(repo, workdir, config)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Nothing to be done" in result.stdout + result.stderr, result.stdout[-3000:]


def test_moved_module_reruns_nothing(repo_copy):
    """Moving models/padding.py to data/padding.py and fixing the imports that name it changes
    what no job does."""
    repo, workdir, config = repo_copy
    src = repo / "src/tempoformer"
    shutil.move(src / "models/padding.py", src / "data/padding.py")
    for module in ("models/tempoformer.py", "models/post_transformer.py"):
        path = src / module
        path.write_text(path.read_text().replace("from .padding import", "from ..data.padding import"))
    result = dry_run(repo, workdir, config)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Nothing to be done" in result.stdout + result.stderr, result.stdout[-3000:]


def test_missing_run_is_planned_though_the_tables_are_newer(repo_copy):
    """A run added to the config, or lost, is trained even where the tables that read it exist
    and are newer than every input (Snakemake alone leaves a missing intermediate alone)."""
    repo, workdir, config = repo_copy
    run = workdir / "results/chitchat/runs/ffn_history/w3/fold1/seed0"
    assert (run / "metrics.json").exists(), sorted(p.name for p in run.parent.parent.iterdir())
    (run / "metrics.json").unlink()
    (run / "predictions.parquet").unlink()
    later = time.time() + 60
    for table in (workdir / "results/tiny/tables").rglob("*"):
        os.utime(table, (later, later))
    result = dry_run(repo, workdir, config)
    assert result.returncode == 0, result.stderr[-2000:]
    assert planned_jobs(result) == {"train": 1, "aggregate": 1, "all": 1}, result.stdout[-3000:]
    assert planned_train_jobs(result) == ["ffn_history/w3/fold1/seed0"]


def test_fresh_clone_with_committed_runs_plans_no_training(finished_run, tmp_path):
    """A clone holds the runs' metrics.json and predictions.parquet and the tables but no
    posts, streams or Snakemake records, and git gives every file the date of the checkout:
    the runs' recorded fingerprints keep them current. A changed setting still reruns its
    model's runs, though the tables are there."""
    workdir, config = finished_run
    clone = tmp_path / "clone"
    for path in (workdir / "results").rglob("*"):
        committed = (path.name in ("metrics.json", "predictions.parquet") and "/runs/" in str(path)
                     or path.parent.name in ("tables", "figures"))
        if path.is_file() and committed:
            target = clone / path.relative_to(workdir)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    now = time.time()
    for i, path in enumerate(sorted(clone.rglob("*"), reverse=True)):
        os.utime(path, (now + i, now + i))  # checkout order, not the order the runs were made in

    result = snakemake(clone, config, "-n")
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = planned_jobs(result)
    # the aggregate may run again (here the checkout dated the tables before the runs), no training
    assert "train" not in jobs and "stale_run" not in jobs, jobs

    def change(settings):
        settings["models"]["ffn_history"]["params"]["epochs"] += 1

    changed = snakemake(clone, changed_config(config, tmp_path, change), "-n")
    assert changed.returncode == 0, changed.stderr[-2000:]
    runs = planned_train_jobs(changed)
    assert len(runs) == 6 and all(run.startswith("ffn_history/") for run in runs), runs


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
