"""workflow/rules/semantic_change.smk: the DAG of the example configs (Snakemake dry runs)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

BIN = Path(sys.executable).parent


def dry_run(tmp_path: Path, section: dict, *targets: str) -> dict[str, int]:
    # A Snakefile with only the shared helpers and this stage, over links to the real code.
    (tmp_path / "src").symlink_to(REPO / "src")
    (tmp_path / "workflow").symlink_to(REPO / "workflow")
    (tmp_path / "Snakefile").write_text('include: "workflow/rules/common.smk"\n'
                                        'include: "workflow/rules/semantic_change.smk"\n')
    config = {"results": "results", "datasets": {}, "models": {}, "threads": 1, "semantic_change": section}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = subprocess.run([str(BIN / "snakemake"), "-s", "Snakefile", "--configfile", "config.yaml", "-n",
                             "--cores", "1", *targets], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    stats = result.stdout.split("Job stats:")[-1]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M) if m[1] != "total"}


def test_default_section_plans_every_method(tmp_path):
    section = yaml.safe_load((REPO / "config" / "semantic_change.yaml").read_text())["semantic_change"]
    jobs = dry_run(tmp_path, section, "semantic_change_all")
    # plain is scored straight from the pretrained model: 8 scores, 7 trainings.
    assert jobs == {"semantic_change_synthetic": 1, "semantic_change_train": 7, "semantic_change_score": 8,
                    "semantic_change_tables": 1, "semantic_change_all": 1}


@pytest.mark.skipif(not (REPO.parent / "shared" / "data" / "semeval2020_task1").is_dir(),
                    reason="../shared/data/semeval2020_task1 is absent")
def test_semeval_section_reads_the_shared_files(tmp_path):
    section = yaml.safe_load((REPO / "config" / "semeval_eng.yaml").read_text())["semantic_change"]
    spec = section["datasets"]["semeval_eng"]
    for key in ("small_dir", "release"):  # the config's paths are relative to the repository
        spec[key] = str((REPO / spec[key]).resolve())
    section["seeds"] = [0, 1]
    jobs = dry_run(tmp_path, section, "semantic_change_all")
    assert jobs == {"semantic_change_train": 14, "semantic_change_score": 16, "semantic_change_tables": 1,
                    "semantic_change_all": 1}
