import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    """Every test at one torch thread, alone or in the full suite: tiny tensors gain nothing from
    threads (OpenMP spinning on a shared 2-core machine made a training test 20x slower), and
    float32 sums then come in one order whichever modules were collected. Three modules used to
    set it at import, so the suite ran at one thread but a module alone at two, and
    test_predict's stream-vs-batch gap was 1.05e-5 in the suite and 3.3e-6 alone."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def make_posts():
    """Canonical post table from {timeline: [(seconds or None, label), ...]}."""
    from tempoformer.data.posts import posts_from_records

    def make(timelines: dict, dataset: str = "toy"):
        start = datetime(2020, 1, 1, tzinfo=timezone.utc)
        records = [
            {
                "timeline_id": tid, "post_id": f"{tid}-{i}", "order": i,
                "timestamp": None if t is None else start + timedelta(seconds=t),
                "text": f"post {i} of {tid}", "label": label,
            }
            for tid, posts in timelines.items()
            for i, (t, label) in enumerate(posts)
        ]
        return posts_from_records(records, dataset, "<test>")

    return make


BIN = Path(sys.executable).parent
def snakemake(workdir: Path, configfile: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    command = [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(workdir),
               "--configfile", str(configfile), "--cores", "2", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)


def as_a_fresh_clone(workdir: Path, committed) -> None:
    """Leave in `workdir` what a clone of a repository that ran the workflow there holds: the
    files under results/ that `committed(path)` keeps, with new dates, and no Snakemake records."""
    results = workdir / "results"
    for path in list(results.rglob("*")):
        if path.is_file() and not committed(path):
            path.unlink()
    shutil.rmtree(workdir / ".snakemake")
    for path in sorted(results.rglob("*")):
        if path.is_file():
            os.utime(path)


def planned_jobs(result: subprocess.CompletedProcess) -> dict[str, int]:
    """Job counts per rule from a dry run's 'Job stats' table."""
    stats = result.stdout.split("Job stats:")[-1] if "Job stats:" in result.stdout else ""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M) if m[1] != "total"}


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("dag")
    config = workdir / "config.yaml"
    shutil.copy(REPO / "config" / "tiny.yaml", config)
    result = snakemake(workdir, config)
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir, config
