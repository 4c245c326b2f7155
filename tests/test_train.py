import json

import numpy as np
import polars as pl
import pytest

from tempoformer.data.folds import make_folds
from tempoformer.data.posts import write_parquet_atomic
from tempoformer.training.run import TrainRun, run_training
from tempoformer.data.windows import build_windows


@pytest.fixture
def toy_run(tmp_path, make_posts):
    """40 timelines; a post is 'S' exactly when its embedding's first coordinate is high."""
    rng = np.random.default_rng(0)
    labels = {f"t{k:02d}": ["S" if rng.random() < 0.3 else "N" for _ in range(8)] for k in range(40)}
    posts = make_posts({t: [(60 * i, lab) for i, lab in enumerate(ls)] for t, ls in labels.items()})
    emb = rng.normal(size=(posts.height, 16)).astype(np.float32)
    emb[:, 0] = np.where(posts["label"].to_numpy() == "S", 3.0, -3.0)
    paths = {name: tmp_path / name for name in ("posts.parquet", "folds.parquet", "streams.parquet")}
    write_parquet_atomic(posts, paths["posts.parquet"])
    write_parquet_atomic(make_folds(posts, 5, 0.25, 0), paths["folds.parquet"])
    write_parquet_atomic(build_windows(posts, 3), paths["streams.parquet"])
    np.save(tmp_path / "emb.npy", emb)
    return tmp_path


def train(root, model, seed, params, out="run"):
    return run_training(TrainRun(
        posts_path=root / "posts.parquet", folds_path=root / "folds.parquet", out_dir=root / f"{out}_{model}_{seed}",
        model=model, params=params, labels=["S", "N"], window=3, fold=1, seed=seed,
        streams_path=root / "streams.parquet", embeddings_path=root / "emb.npy", threads=1, device="cpu",
    ))


FFN = {"epochs": 20, "batch_size": 16, "patience": 5, "grid": {"lr": [1e-2, 1e-3], "hidden_dims": [[16, 16]]}}


def test_ffn_history_learns_and_is_deterministic(toy_run):
    first = train(toy_run, "ffn_history", 0, FFN)
    assert first["test"]["macro"] > 0.95
    assert len(first["grid"]) == 2 and first["selected"]["lr"] in (1e-2, 1e-3)
    again = train(toy_run, "ffn_history", 0, FFN, out="again")
    assert again["test"] == first["test"] and again["grid"] == first["grid"]
    saved = json.loads((toy_run / "run_ffn_history_0" / "metrics.json").read_text())
    assert saved["test"] == first["test"]
    preds = pl.read_parquet(toy_run / "run_ffn_history_0" / "predictions.parquet")
    assert preds.height == first["n"]["test"]
    np.testing.assert_allclose(preds["prob_S"] + preds["prob_N"], 1.0, rtol=1e-5)


def test_random_follows_training_prior(toy_run):
    metrics = train(toy_run, "random", 12, {})
    prior = metrics["selected"]["prior"]
    assert abs(sum(prior) - 1) < 1e-9 and 0.15 < prior[0] < 0.45
    assert metrics["test"]["macro"] < 0.8  # chance level, not learnt
    assert train(toy_run, "random", 12, {}, out="again")["test"] == metrics["test"]


def test_unknown_label_is_reported(toy_run):
    with pytest.raises(ValueError, match="not in the config"):
        run_training(TrainRun(posts_path=toy_run / "posts.parquet", folds_path=toy_run / "folds.parquet",
                              out_dir=toy_run / "x", model="random", params={}, labels=["S", "X"], window=1,
                              fold=0, seed=0))


def dies_in_epoch_three(predict_proba):
    """predict_proba that raises on its third call: the job is killed during epoch three."""
    calls = {"n": 0}

    def predict(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")
        return predict_proba(*args, **kwargs)

    return predict


def test_killed_run_resumes_to_the_same_metrics(toy_run, monkeypatch):
    import tempoformer.training.loop as training

    params = {"epochs": 6, "batch_size": 16, "patience": 10, "grid": {"lr": [1e-3], "hidden_dims": [[16, 16]]}}
    uninterrupted = train(toy_run, "ffn_history", 3, params, out="whole")
    assert not (toy_run / "whole_ffn_history_3" / "checkpoints").exists()

    real_predict = training.predict_proba
    monkeypatch.setattr(training, "predict_proba", dies_in_epoch_three(real_predict))
    with pytest.raises(KeyboardInterrupt):
        train(toy_run, "ffn_history", 3, params, out="killed")
    checkpoints = list((toy_run / "killed_ffn_history_3" / "checkpoints").glob("*.pt"))
    assert len(checkpoints) == 1 and not (toy_run / "killed_ffn_history_3" / "metrics.json").exists()
    monkeypatch.setattr(training, "predict_proba", real_predict)
    resumed = train(toy_run, "ffn_history", 3, params, out="killed")
    assert [e["epoch"] for e in resumed["grid"][0]["epochs"]] == list(range(6))
    assert resumed["grid"] == uninterrupted["grid"] and resumed["test"] == uninterrupted["test"]


def test_checkpoint_of_other_settings_is_not_resumed(toy_run, monkeypatch):
    import tempoformer.training.loop as training

    a = {"epochs": 6, "batch_size": 16, "grid": {"lr": [1e-2], "hidden_dims": [[16, 16]]}}
    b = {**a, "grid": {"lr": [1e-3], "hidden_dims": [[16, 16]]}}
    real_predict = training.predict_proba
    monkeypatch.setattr(training, "predict_proba", dies_in_epoch_three(real_predict))
    with pytest.raises(KeyboardInterrupt):
        train(toy_run, "ffn_history", 0, a, out="shared")
    monkeypatch.setattr(training, "predict_proba", real_predict)
    after_other = train(toy_run, "ffn_history", 0, b, out="shared")
    fresh = train(toy_run, "ffn_history", 0, b, out="fresh")
    assert after_other["grid"] == fresh["grid"]


def test_a_second_trainer_on_the_same_run_stops_at_once(toy_run):
    """While a trainer holds a run folder (a job whose shell was killed, its python still
    running), another one on that folder fails naming it, and writes nothing."""
    from tempoformer.training.lock import RunLocked, run_lock

    with run_lock(toy_run / "run_ffn_history_0"):
        with pytest.raises(RunLocked, match="another trainer"):
            train(toy_run, "ffn_history", 0, {"epochs": 2, "batch_size": 8, "grid": {"lr": [1e-3]}})
    assert not (toy_run / "run_ffn_history_0" / "metrics.json").exists()
    assert train(toy_run, "ffn_history", 0, {"epochs": 2, "batch_size": 8, "grid": {"lr": [1e-3]}})["test"]


def test_metrics_record_what_the_run_was_made_with(toy_run, monkeypatch):
    """metrics.json's `setup`: arithmetic, kernels and, for a transformer, the backbone loaded
    (name, model, the sha256 of its weights file, checked against the table), its pooling and
    max tokens; a stream model has no backbone block."""
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    stream = train(toy_run, "ffn_history", 0, {**FFN, "epochs": 1, "grid": {"lr": [1e-2], "hidden_dims": [[8]]}})
    assert stream["setup"]["precision"] == "fp32" and "backbone" not in stream["setup"]
    assert stream["setup"]["numerics"]["kernels"]["MKL_CBWR"] == "AVX2"
    post = train(toy_run, "bert", 0, {"backbone": "minilm", "max_tokens": 8, "epochs": 1, "batch_size": 64,
                                      "post_pooling": "auto", "grid": {"lr": [1e-5]}})
    setup = post["setup"]
    assert setup["backbone"]["name"] == "minilm" and setup["backbone"]["matches_table"] is True
    assert setup["backbone"]["weights_sha256"].startswith("53aa5117")
    assert setup["post_pooling"] == "mean"  # auto, resolved from MiniLM's sentence-transformers config
    assert setup["max_tokens"] == 8 and setup["numerics"]["device"] == "cpu"
    saved = json.loads((toy_run / "run_bert_0" / "metrics.json").read_text())
    assert saved["setup"] == setup
