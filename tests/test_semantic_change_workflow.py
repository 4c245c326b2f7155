"""The semantic change stage in the main DAG (Snakemake dry runs of the repository's configs)."""

import pytest
import yaml

from conftest import REPO, SHARED_DATA, planned_jobs, snakemake

# the semantic change DAG through the real snakemake CLI
pytestmark = pytest.mark.slow


def dry_run(tmp_path, config: dict, *targets: str) -> dict[str, int]:
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, configfile, "-n", *targets)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return planned_jobs(result)


def semantic_change_jobs(jobs: dict[str, int]) -> dict[str, int]:
    return {rule: n for rule, n in jobs.items() if rule.startswith("semantic_change")}


def test_default_run_includes_every_method(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    jobs = dry_run(tmp_path, config)
    # plain is scored straight from the pretrained model: 8 scores, 7 trainings, then the tables.
    assert semantic_change_jobs(jobs) == {"semantic_change_synthetic": 1, "semantic_change_train": 7,
                                          "semantic_change_score": 8, "semantic_change_tables": 1}
    assert jobs["aggregate"] == 1 and jobs["all"] == 1


def test_a_config_with_only_semantic_change_is_valid(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config = {"results": "results", "semantic_change": config["semantic_change"]}
    jobs = dry_run(tmp_path, config)
    assert "train" not in jobs and "aggregate" not in jobs
    assert jobs["semantic_change_tables"] == 1


def test_unknown_method_is_refused_by_the_schema(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["semantic_change"]["methods"].append("temporal_atention")
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, configfile, "-n")
    assert result.returncode != 0 and "temporal_atention" in result.stdout + result.stderr


@pytest.mark.skipif(not (SHARED_DATA / "semeval2020_task1").is_dir(),
                    reason="../shared/data/semeval2020_task1 is absent")
def test_semeval_config_reads_the_shared_files(tmp_path):
    config = yaml.safe_load((REPO / "config" / "semeval_eng.yaml").read_text())
    spec = config["semantic_change"]["datasets"]["semeval_eng"]
    for key in ("small_dir", "release"):  # the config's paths are relative to the repository
        spec[key] = str((REPO / spec[key]).resolve())
    config["semantic_change"]["seeds"] = [0, 1]
    jobs = dry_run(tmp_path, config)
    assert jobs == {"semantic_change_train": 14, "semantic_change_score": 16, "semantic_change_tables": 1,
                    "all": 1}
