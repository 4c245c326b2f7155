"""The model registry: the schema, the workflow and `train` agree with it, and a model's params
are checked against what its type accepts before anything runs."""

from pathlib import Path

import pytest
import yaml

from tempoformer.models.registry import MODEL_TYPES, accepted_params, validate_params
from tempoformer.training.run import TrainRun, run_training

REPO = Path(__file__).resolve().parents[1]


def test_schema_enum_is_the_registry():
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    model = schema["properties"]["models"]["additionalProperties"]
    assert set(model["properties"]["type"]["enum"]) == set(MODEL_TYPES)


@pytest.mark.parametrize("config", sorted((REPO / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_has_valid_params(config):
    settings = yaml.safe_load(config.read_text())
    for name, entry in (settings.get("models") or {}).items():
        if "params" in entry:  # overlays narrow a model's folds without repeating its params
            validate_params(name, entry.get("type", name), entry["params"])


@pytest.mark.parametrize("params, message", [
    ({"epochz": 50}, "models.tempoformer.params: unknown key 'epochz'"),
    ({"epochs": "five"}, "models.tempoformer.params.epochs: 'five' is not of type int"),
    ({"lr": True}, "models.tempoformer.params.lr: True is not of type float"),
    ({"grid": {"lr": [1e-4, "x"]}}, "models.tempoformer.params.grid.lr: 'x' is not of type float"),
    ({"grid": {"lr": []}}, "models.tempoformer.params.grid.lr: a non-empty list"),
    ({"grid": {"lrr": [1e-4]}}, "models.tempoformer.params.grid: unknown key 'lrr'"),
])
def test_bad_params_name_the_model_and_the_key(params, message):
    with pytest.raises(ValueError) as error:
        validate_params("tempoformer", "tempoformer", params)
    assert message in str(error.value)


def test_params_of_each_kind():
    assert {"lr", "epochs", "hidden_dims", "dropout"} <= set(accepted_params(MODEL_TYPES["ffn_history"]))
    assert {"conv_dim", "swnu_hidden_dim", "time_scale"} <= set(accepted_params(MODEL_TYPES["swnu"]))
    assert {"rope", "temporal_rope", "backbone", "max_tokens", "save_model"} <= set(accepted_params(MODEL_TYPES["tempoformer"]))
    assert {"model", "shots", "level"} <= set(accepted_params(MODEL_TYPES["llm"]))
    assert accepted_params(MODEL_TYPES["random"]) == {}
    validate_params("ffn_history", "ffn_history", {"hidden_dims": [64, 64], "lr": 1, "grid": {"dropout": [0.1, 0]}})
    validate_params("llm", "llm", {"model": None, "shots": 10, "max_post_chars": 200})
    with pytest.raises(ValueError, match="no grid search"):
        validate_params("random", "random", {"grid": {"lr": [1.0]}})


def test_train_refuses_bad_params_before_reading_data(tmp_path):
    """The check runs first: no data is read, no file is written."""
    with pytest.raises(ValueError, match="unknown key 'epochz'"):
        run_training(TrainRun(posts_path=tmp_path / "missing.parquet", folds_path=tmp_path / "missing.parquet",
                              out_dir=tmp_path / "run", model="ffn_history", params={"epochz": 5},
                              labels=["A", "B"], window=3, fold=0, seed=0))
    assert not (tmp_path / "run").exists()
