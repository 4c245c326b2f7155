"""scripts/migrate_fingerprints.py: run records current at an old revision get the working
tree's fingerprint, every other byte kept; records that were not current are refused."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]

CONFIG = {
    "results": "results", "seeds": [0], "n_folds": 2, "fold_seed": 0, "threads": 1,
    "datasets": {"lrs_synthetic": {"format": "lrs", "synthetic": {"n_threads": 4, "seed": 0},
                                   "labels": ["Sw", "N-Sw"], "models": ["random", "ffn_history"]}},
    "models": {"random": {"windows": [1], "params": {}},
               "ffn_history": {"windows": [3], "params": {"epochs": 1, "batch_size": 4, "grid": {"lr": [1.0e-3]}}}},
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def fingerprints(repo: Path) -> dict[str, str]:
    sys.path.insert(0, str(repo / "scripts"))
    try:
        import migrate_fingerprints
    finally:
        sys.path.pop(0)
    return migrate_fingerprints.fingerprints_at(repo, [["config/c.yaml"]])[0]


def record(repo: Path, run: str, fingerprint: str) -> Path:
    folder = repo / run
    folder.mkdir(parents=True)
    (folder / "predictions.parquet").write_bytes(b"PAR1")
    metrics = folder / "metrics.json"
    metrics.write_text(json.dumps({"test": {"macro": 0.5}, "seconds": 1.25, "fingerprint": fingerprint}, indent=1))
    return metrics


def test_current_runs_are_carried_over_and_stale_ones_refused(tmp_path):
    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(REPO / "src", repo / "src", ignore=ignore)
    shutil.copytree(REPO / "workflow" / "schemas", repo / "workflow" / "schemas")
    (repo / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "migrate_fingerprints.py", repo / "scripts")
    (repo / "config").mkdir()
    (repo / "config" / "c.yaml").write_text(yaml.safe_dump(CONFIG))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "old")
    old = fingerprints(repo)
    ffn = "results/lrs_synthetic/runs/ffn_history/w3/fold0/seed0"
    rnd = "results/lrs_synthetic/runs/random/w1/fold0/seed0"
    stale = "results/lrs_synthetic/runs/ffn_history/w3/fold1/seed0"
    current = record(repo, ffn, old[ffn])
    untouched = record(repo, rnd, old[rnd])
    refused = record(repo, stale, "0" * 20)
    before = {path: path.read_text() for path in (current, untouched, refused)}

    # a change of what FFN History computes, made after the runs
    module = repo / "src/tempoformer/models/ffn_history.py"
    module.write_text(module.read_text().replace("/ weights.sum(1)", "/ weights.sum(1).clamp(min=1.0)"))
    new = fingerprints(repo)
    assert new[ffn] != old[ffn] and new[rnd] == old[rnd]

    script = [sys.executable, str(repo / "scripts" / "migrate_fingerprints.py"), "--from", "HEAD",
              "--configs", "config/c.yaml"]
    dry = subprocess.run(script, capture_output=True, text=True, cwd=repo)
    assert dry.returncode == 1, dry.stderr  # one record refused
    assert f"refused {stale}: not current" in dry.stdout
    assert "2 runs current at HEAD: 1 to rewrite, 1 already carry the new fingerprint; 1 refused" in dry.stdout
    assert {path: path.read_text() for path in before} == before  # nothing written without --write

    wrote = subprocess.run([*script, "--write"], capture_output=True, text=True, cwd=repo)
    assert wrote.returncode == 1 and "rewrote 1 records" in wrote.stdout, wrote.stdout + wrote.stderr
    assert current.read_text() == before[current].replace(old[ffn], new[ffn])
    assert untouched.read_text() == before[untouched]
    assert refused.read_text() == before[refused]
    assert json.loads(current.read_text())["fingerprint"] == new[ffn]


def test_check_equivalence_compares_the_data_stages_of_two_trees(tmp_path):
    """HEAD against the working tree on a synthetic dataset: the same chain, the same files."""
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "check_equivalence.py"), "--from", "HEAD",
                             "--configs", str(config), "--embed-sample", "0"], capture_output=True, text=True,
                            cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [f"lrs_synthetic/{name}: same" for name in
                                          ("posts.parquet", "folds.parquet", "streams_w1.parquet", "streams_w3.parquet")]
