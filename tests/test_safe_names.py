"""Names and paths that reach a shell: config names are held to a safe alphabet by the schema,
and every path a rule passes to a shell is quoted, so a results folder with spaces works."""

import json
import re
from pathlib import Path

import pytest
import yaml

from conftest import REPO, snakemake

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def config_with(tmp_path: Path, model: str = "random", dataset: str = "lrs_synthetic", results: str = "results"):
    config = {
        "results": results, "seeds": [0], "n_folds": 2, "fold_seed": 0, "threads": 1,
        "datasets": {dataset: {"format": "lrs", "synthetic": {"n_threads": 6, "seed": 0},
                               "labels": ["Sw", "N-Sw"], "models": [model]}},
        "models": {model: {"type": "random", "windows": [1], "params": {}}},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("name", ["x`touch PWNED`", "c++", "a b", "../up", "$(id)", ".hidden"])
@pytest.mark.parametrize("where", ["model", "dataset"])
def test_an_unsafe_name_stops_the_workflow_before_any_shell(tmp_path, name, where):
    config = config_with(tmp_path, **{where: name})
    result = snakemake(tmp_path, config, "-n")
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "does not match '^[A-Za-z0-9][A-Za-z0-9_.-]*$'" in message and repr(name) in message, message
    assert f"schema['properties']['{where}s']['propertyNames']" in message, message
    assert not (tmp_path / "PWNED").exists() and not list(tmp_path.glob("results*"))


def test_every_name_map_of_the_schema_is_held_to_the_safe_alphabet():
    """datasets and models, and each stage's datasets and models maps."""
    schema = yaml.safe_load(SCHEMA.read_text())
    maps = []

    def walk(node, path):
        if isinstance(node, dict):
            if node.get("type") == "object" and isinstance(node.get("additionalProperties"), dict) \
                    and path[-1] in ("datasets", "models"):
                maps.append((".".join(path), node.get("propertyNames")))
            for key, value in node.items():
                walk(value, [*path, key])

    walk(schema["properties"], ["config"])
    assert len(maps) == 6, maps  # datasets, models, semantic_change, dcwe, future_lm datasets + models
    assert all(names == {"$ref": "#/definitions/name"} for _, names in maps), maps


def test_shell_commands_quote_every_path_and_name():
    """In the rules' shell commands, every {input}, {output}, {log} and {wildcards} is :q."""
    unquoted = []
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r'^        "', line):
                unquoted += [f"{path.name}:{number}: {m}" for m in
                             re.findall(r"\{(?:input|output|log|wildcards)[a-z_.]*\}", line)]
    assert unquoted == []


def test_a_results_folder_with_spaces_works_end_to_end(tmp_path):
    work = tmp_path / "a work dir"
    work.mkdir()
    config = config_with(work, results="my results")
    table = "my results/tables/table2.md"
    result = snakemake(work, config, table)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| Random |" in (work / table).read_text()
    metrics = json.loads((work / "my results/lrs_synthetic/runs/random/w1/fold1/seed0/metrics.json").read_text())
    assert metrics["model"] == "random" and metrics["fingerprint"]
    # nothing landed beside the folder (an unquoted `2> my results/...` writes a file named `my`)
    assert sorted(p.name for p in work.iterdir() if not p.name.startswith(".")) == ["config.yaml", "my results"]
    rerun = snakemake(work, config, table, "-n")
    assert rerun.returncode == 0 and "Nothing to be done" in rerun.stdout + rerun.stderr
