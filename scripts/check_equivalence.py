"""Evidence for scripts/migrate_fingerprints.py: do the data stages of an old revision and of the
working tree make the same files from the same inputs?

    .venv/bin/python scripts/check_equivalence.py --from REV --configs "config/lrs.yaml ..." \
        [--configs ...] [--embed-sample 300]

For every dataset of the config sets, each tree's own `tempoformer` (its package on PYTHONPATH,
in a process of its own, with the portable kernels) runs the chain the workflow runs: ingest
(or synthetic-lrs then ingest), folds, windows for each window size a model asks for, and embed
on the first --embed-sample posts (0: no embedding). The outputs are compared: Parquet tables
cell by cell (polars `equals`), embeddings bit for bit. Prints one line per file and exits with
1 if any differs. The training code is checked by tests/test_refactor_equivalence.py (golden
numbers of a tiny training run of each model family), not here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from migrate_fingerprints import REPO, checkout, load_config  # noqa: E402

KERNELS = {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def tempoformer(tree: Path, *args: str) -> None:
    env = {**os.environ, **KERNELS, "PYTHONPATH": str(tree / "src"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-m", "tempoformer", *map(str, args)], cwd=REPO, env=env,
                            capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"check_equivalence: {tree}: tempoformer {' '.join(map(str, args))} failed:\n{result.stderr[-3000:]}")


def make(tree: Path, out: Path, config: dict, dataset: str, embed_sample: int) -> list[Path]:
    """The data stage files of `dataset` made by the package of `tree`, under `out`."""
    spec, made = config["datasets"][dataset], []
    out.mkdir(parents=True, exist_ok=True)
    raw = ["--input", spec["path"]] if spec.get("path") else []
    if "synthetic" in spec:
        tempoformer(tree, "synthetic-lrs", "--output", out / "raw", "--n-threads", spec["synthetic"]["n_threads"],
                    "--seed", spec["synthetic"]["seed"])
        raw = ["--input", out / "raw"]
    posts = out / "posts.parquet"
    tempoformer(tree, "ingest", "--format", spec["format"], *raw, "--dataset", dataset,
                "--options", json.dumps(spec.get("options", {})), "--labels", json.dumps(spec["labels"]),
                "--output", posts)
    tempoformer(tree, "folds", "--posts", posts, "--output", out / "folds.parquet", "--n-folds", config["n_folds"],
                "--dev-ratio", spec.get("dev_ratio", 0.25), "--seed", config["fold_seed"])
    made += [posts, out / "folds.parquet"]
    windows = sorted({w for m in spec["models"] if m in config["models"] for w in config["models"][m]["windows"]})
    for window in windows:
        tempoformer(tree, "windows", "--posts", posts, "--window", window, "--output", out / f"streams_w{window}.parquet")
        made.append(out / f"streams_w{window}.parquet")
    if embed_sample:
        import polars as pl

        pl.read_parquet(posts).head(embed_sample).write_parquet(out / "sample.parquet")
        tempoformer(tree, "embed", "--posts", out / "sample.parquet", "--model", config["embedding_model"],
                    "--threads", 1, "--output", out / "sbert.npy")
        made.append(out / "sbert.npy")
    return made


def same(a: Path, b: Path) -> bool:
    if a.suffix == ".npy":
        import numpy as np

        x, y = np.load(a), np.load(b)
        return x.dtype == y.dtype and x.shape == y.shape and bool((x.view(np.uint8) == y.view(np.uint8)).all())
    import polars as pl

    return pl.read_parquet(a).equals(pl.read_parquet(b))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="rev", required=True)
    parser.add_argument("--configs", action="append", required=True)
    parser.add_argument("--embed-sample", type=int, default=300)
    args = parser.parse_args(argv)
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = checkout(args.rev, Path(tmp))
        seen = set()
        for configs in args.configs:
            config = load_config(REPO, configs.split())
            for dataset in config.get("datasets", {}):
                if dataset in seen:
                    continue
                seen.add(dataset)
                old = make(old_tree, Path(tmp) / "old" / dataset, config, dataset, args.embed_sample)
                new = make(REPO, Path(tmp) / "new" / dataset, config, dataset, args.embed_sample)
                for a, b in zip(old, new):
                    equal = same(a, b)
                    differ += not equal
                    print(f"{dataset}/{a.name}: {'same' if equal else 'DIFFERENT'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
