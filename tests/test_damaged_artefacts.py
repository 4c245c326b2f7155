"""Damaged intermediates (issue 67, item 3): a truncated Parquet, JSON or .npy file that a job
wrote is named by the job that reads it (`<file>: damaged: <problem>`, one line), and the
workflow sets it aside (`<file>.damaged`) while it builds the DAG, so the same command remakes it.

The readers' tests are quick; the workflow's dry runs (`slow`) use the tiny DAG that the
session's `finished_run` ran once, copied by test_incremental.py's `repo_copy`.
"""

import json
import re

import numpy as np
import polars as pl
import pytest

from tempoformer import artefacts
from tempoformer.artefacts import DamagedArtefact
from tempoformer.cli import main
from tempoformer.data.folds import make_folds
from tempoformer.data.posts import read_posts, write_parquet_atomic
from tempoformer.data.windows import build_windows
from tempoformer.reporting.tables import load_runs, pooled_predictions
from tempoformer.training.run import load_run_data


def truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def assert_names_damage(error, path):
    message = str(error)
    assert message.startswith(f"{path}: damaged: "), message
    assert "\n" not in message and len(message) > len(f"{path}: damaged: ")


@pytest.fixture
def run_inputs(tmp_path, make_posts):
    """posts, folds, streams (window 3) and embeddings of a toy dataset, as the jobs write them."""
    posts = make_posts({f"t{i}": [(60 * j, "A" if j % 3 else "B") for j in range(6)] for i in range(8)})
    paths = {"posts": tmp_path / "posts.parquet", "folds": tmp_path / "folds.parquet",
             "streams": tmp_path / "streams_w3.parquet", "embeddings": tmp_path / "sbert.npy"}
    write_parquet_atomic(posts, paths["posts"])
    write_parquet_atomic(make_folds(posts, 2, 0.25, 0), paths["folds"])
    write_parquet_atomic(build_windows(posts, 3), paths["streams"])
    np.save(paths["embeddings"], np.ones((posts.height, 4), dtype=np.float32))
    return paths


def load(paths):
    return load_run_data(paths["posts"], paths["folds"], 0, ["A", "B"], streams_path=paths["streams"],
                         embeddings_path=paths["embeddings"])


def test_intact_inputs_read_as_before(run_inputs):
    data = load(run_inputs)
    assert data.streams.height == data.posts.height and data.embeddings.shape == (data.posts.height, 4)
    for path in run_inputs.values():
        assert artefacts.problem(path) is None


@pytest.mark.parametrize("name", ["posts", "folds", "streams", "embeddings"])
@pytest.mark.parametrize("keep", [0.0, 0.5, 0.97])
def test_truncated_run_input_is_named(run_inputs, name, keep):
    path = truncate(run_inputs[name], keep)
    with pytest.raises(DamagedArtefact) as error:
        load(run_inputs)
    assert_names_damage(error.value, path)
    assert artefacts.problem(path)  # the DAG's cheap check sees it too


def test_read_posts_names_a_truncated_file(run_inputs):
    path = truncate(run_inputs["posts"])
    with pytest.raises(ValueError, match=re.escape(f"{path}: damaged: ")):
        read_posts(path)


def test_windows_command_reports_one_line(run_inputs, tmp_path, capsys):
    path = truncate(run_inputs["posts"])
    status = main(["windows", "--posts", str(path), "--window", "3", "--output", str(tmp_path / "out.parquet")])
    assert status == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith(f"tempoformer windows: error: {path}: damaged: "), lines
    assert not (tmp_path / "out.parquet").exists()


def write_run(folder):
    folder.mkdir(parents=True)
    metrics = folder / "metrics.json"
    metrics.write_text(json.dumps({"dataset": "toy", "model": "random", "window": 1, "fold": 0, "seed": 0,
                                   "test": {"A": 0.5, "B": 0.5, "macro": 0.5}, "dev_macro": 0.5}, indent=1))
    pl.DataFrame({"row": [0, 1], "timeline_id": ["t0", "t0"], "gold": ["A", "B"], "pred": ["A", "A"]}).write_parquet(folder / "predictions.parquet")
    return metrics


def test_reporting_names_a_damaged_run_record(tmp_path):
    metrics = write_run(tmp_path / "run")
    assert load_runs([metrics]).height == 3 and pooled_predictions([metrics], ["A", "B"]).height == 2
    predictions = truncate(metrics.with_name("predictions.parquet"))
    with pytest.raises(DamagedArtefact) as error:
        pooled_predictions([metrics], ["A", "B"])
    assert_names_damage(error.value, predictions)
    truncate(metrics)
    with pytest.raises(DamagedArtefact) as error:
        load_runs([metrics])
    assert_names_damage(error.value, metrics)


def test_npz_reader_names_a_damaged_archive(tmp_path):
    path = tmp_path / "frequency.npz"
    np.savez(path, counts=np.arange(10))
    assert artefacts.load_npz(path)["counts"].tolist() == list(range(10))
    truncate(path)
    assert artefacts.problem(path)
    with pytest.raises(DamagedArtefact) as error:
        artefacts.load_npz(path)
    assert_names_damage(error.value, path)


def test_missing_file_is_not_damage(tmp_path):
    for name in ("a.parquet", "a.json", "a.npy"):
        assert artefacts.problem(tmp_path / name) is None
    with pytest.raises(FileNotFoundError):
        artefacts.read_parquet(tmp_path / "a.parquet")
    with pytest.raises(FileNotFoundError):
        artefacts.read_json(tmp_path / "a.json")


def test_set_aside_renames_only_damaged_files(run_inputs, tmp_path, capsys):
    metrics = write_run(tmp_path / "run")
    truncate(run_inputs["streams"])
    truncate(metrics, 0.9)
    old = run_inputs["embeddings"].with_name("sbert.npy.damaged")
    old.write_text("an older damaged copy")
    truncate(run_inputs["embeddings"], 0.99)
    for path in [*run_inputs.values(), metrics, metrics.with_name("predictions.parquet")]:
        artefacts.set_aside_if_damaged(path)
    damaged = [run_inputs["streams"], metrics, run_inputs["embeddings"]]
    for path in damaged:
        assert not path.exists() and path.with_name(path.name + ".damaged").exists()
        assert artefacts.was_set_aside(path)
        assert artefacts.set_aside_if_damaged(path)  # still damaged for the rest of this DAG build
    assert old.read_bytes() != b"an older damaged copy"  # replaced
    for path in (run_inputs["posts"], run_inputs["folds"], metrics.with_name("predictions.parquet")):
        assert path.exists() and not artefacts.was_set_aside(path)
    err = capsys.readouterr().err
    for path in damaged:
        assert re.search(rf"^Warning: {re.escape(str(path))}: damaged: .+; set aside as {re.escape(str(path))}\.damaged",
                         err, re.M), err


# --- the workflow: a dry run after damage plans exactly the jobs that remake it ----------------

from test_incremental import dry_run, repo_copy  # noqa: E402,F401  (fixture)
from conftest import planned_jobs  # noqa: E402


def trained_runs(result):
    return sorted("/".join(m) for m in re.findall(r"output: results/(\w+)/runs/(\S+?)/metrics\.json", result.stdout))


@pytest.mark.slow
def test_damaged_streams_and_run_records_are_set_aside_and_remade(repo_copy):
    repo, workdir, config = repo_copy
    results = workdir / "results"
    streams = truncate(results / "chitchat/streams_w3.parquet")
    predictions = truncate(results / "chitchat/runs/ffn_history/w3/fold1/seed0/predictions.parquet")
    metrics = truncate(results / "lrs_synthetic/runs/random/w1/fold2/seed0/metrics.json", 0.6)

    result = dry_run(repo, workdir, config)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for path in (streams, predictions, metrics):
        assert not path.exists() and path.with_name(path.name + ".damaged").exists(), path
        assert f"{path.relative_to(workdir)}: damaged: " in result.stderr, result.stderr[-3000:]
    # the streams again and the runs that read them (chitchat's window-3 runs: FFN History, whose
    # fold 1 lost its predictions, and TempoFormer), the run whose metrics.json was damaged, then
    # the tables; nothing else (no other run, no ingest)
    assert planned_jobs(result) == {"windows": 1, "train": 7, "aggregate": 1, "all": 1}, result.stdout[-3000:]
    assert re.findall(r"output: (\S+streams_w\d+\.parquet)", result.stdout) == ["results/chitchat/streams_w3.parquet"]
    w3 = [f"chitchat/{model}/w3/fold{fold}/seed0" for model in ("ffn_history", "tempoformer") for fold in range(3)]
    assert trained_runs(result) == sorted(w3 + ["lrs_synthetic/random/w1/fold2/seed0"]), trained_runs(result)

    # the next command plans the same work: the set-aside files are missing now
    again = dry_run(repo, workdir, config)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "damaged" not in again.stderr
    assert trained_runs(again) == trained_runs(result) and planned_jobs(again)["windows"] == 1, again.stdout[-3000:]


@pytest.mark.slow
def test_damaged_posts_and_embeddings_are_remade(repo_copy):
    repo, workdir, config = repo_copy
    posts = truncate(workdir / "results/lrs_synthetic/posts.parquet")
    embeddings = truncate(workdir / "results/lrs_synthetic/sbert.npy", 0.9)

    result = dry_run(repo, workdir, config)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for path in (posts, embeddings):
        assert not path.exists() and path.with_name(path.name + ".damaged").exists(), path
    # the posts again and everything made of them: that dataset's folds, streams, embeddings,
    # diversity and runs, and the tables; chitchat's runs stay
    assert planned_jobs(result) == {"ingest": 1, "folds": 1, "windows": 1, "embed": 1, "diversity": 1, "train": 9,
                                    "table1": 1, "table5": 1, "aggregate": 1, "all": 1}, result.stdout[-3000:]
    assert all(run.startswith("lrs_synthetic/") for run in trained_runs(result)), trained_runs(result)
