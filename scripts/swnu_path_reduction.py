"""Does the authors' UMAP reduction of SWNU's path explain our SWNU being above the paper?

The authors ran SWNU through sig-networks' `obtain_SWNUNetwork_input(method="umap",
dimension=15, seed=42, ...)`: the path the unit's Conv1d reads is a 15-d UMAP of the SBERT
vectors, fitted once on every post of the corpus (test posts included), while the classifier
head still gets the full SBERT vector of the current post. Our SWNU feeds all 384 SBERT
dimensions to the Conv1d. This script retrains the committed SWNU runs of a dataset at the
grid point each committed run selected, with the path read from the reduced vectors, and prints
test macro-F1 beside the committed run's. The first `--verify` runs are also retrained as the
pipeline does: they must reproduce the committed metrics.json exactly (training is
deterministic on CPU), which shows the comparison differs in the path alone.

Run from the repository root after the dataset's SWNU runs exist, e.g.

    pip install umap-learn     # not a dependency of the package
    python scripts/swnu_path_reduction.py --dataset lrs --concat-time
    python scripts/swnu_path_reduction.py --dataset topic_shift_mi

Prints a row per (fold, seed) and the means.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import numpy as np
import torch

from tempoformer.training.losses import focal_alpha
from tempoformer.training.metrics import f1_scores
from tempoformer.models.swnu import SWNU, SWNUnit, previous_gap, SWNUConfig
from tempoformer.training.run import load_run_data, stream_batcher
from tempoformer.training.loop import TrainSettings, fit, predict_proba
from tempoformer.data.windows import window_arrays


class ReducedPathSWNU(SWNU):
    """SWNU whose unit reads `path_x` (reduced vectors) while the head reads the full `x`."""

    def __init__(self, path_dim: int, **kwargs):
        super().__init__(SWNUConfig(**kwargs))
        unit = self.swnu
        self.swnu = SWNUnit(path_dim, unit.conv.out_channels, unit.hidden_dim, unit.sig_depth,
                            unit.pooling, unit.time_scale)

    def forward(self, x, mask, time, path_x):
        parts = [self.swnu(path_x, mask, time), x[:, -1]]
        if self.concat_time:
            parts.append(self.time_scale * previous_gap(mask, time))
        return self.ffn(torch.cat(parts, dim=-1))


def reduce_embeddings(embeddings: np.ndarray, method: str, dim: int, cache: Path) -> np.ndarray:
    """UMAP (as sig-networks, seed 42) or PCA of every post's vector; cached, as it is slow."""
    if cache.exists():
        return np.load(cache)
    start = time.time()
    if method == "umap":
        import umap

        reduced = umap.UMAP(n_components=dim, random_state=42).fit_transform(embeddings)
    else:
        from sklearn.decomposition import PCA

        reduced = PCA(n_components=dim, random_state=42).fit_transform(embeddings)
    print(f"{method}-{dim} of {embeddings.shape} fitted in {time.time() - start:.0f} s", flush=True)
    reduced = reduced.astype(np.float32)
    np.save(cache, reduced)
    return reduced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--results", default="results")
    parser.add_argument("--window", type=int, default=20)
    parser.add_argument("--method", choices=("umap", "pca"), default="umap")
    parser.add_argument("--dim", type=int, default=15)
    parser.add_argument("--concat-time", action="store_true",
                        help="time gap at the head's input (the dataset config's concat_time)")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--verify", type=int, default=2,
                        help="retrain this many runs as the pipeline does, to check they match")
    args = parser.parse_args()
    torch.set_num_threads(1)

    root = Path(args.results) / args.dataset
    runs = sorted((root / "runs" / "swnu" / f"w{args.window}").glob("fold*/seed*/metrics.json"))
    if not runs:
        raise SystemExit(f"{root}/runs/swnu/w{args.window}: no SWNU runs to compare with")
    embeddings = np.load(root / "sbert.npy")
    reduced = torch.from_numpy(reduce_embeddings(
        embeddings, args.method, args.dim, root / f"sbert_{args.method}{args.dim}.npy"))

    @functools.cache
    def fold_data(fold: int, labels: tuple[str, ...]):
        # The 4 seeds of a fold share its posts, split, windows and embeddings: read them once.
        return load_run_data(root / "posts.parquet", root / "folds.parquet", fold, list(labels),
                             root / f"streams_w{args.window}.parquet", root / "sbert.npy")

    print("fold seed | committed | pipeline SWNU | reduced path | seconds")
    rows = []
    for index, metrics_path in enumerate(runs):
        committed = json.loads(metrics_path.read_text())
        fold, seed, labels, hp = committed["fold"], committed["seed"], committed["labels"], committed["selected"]
        data = fold_data(fold, tuple(labels))
        full_batch = stream_batcher(data)

        def reduced_batch(batch_rows):
            batch = full_batch(batch_rows)
            window_rows, valid, _ = window_arrays(data.streams, batch_rows)
            path_x = reduced[torch.from_numpy(np.where(valid, window_rows, 0))]
            return {**batch, "path_x": path_x * batch["mask"][..., None]}

        settings = TrainSettings(lr=hp["lr"], epochs=args.epochs, batch_size=64, patience=args.patience)
        alpha = focal_alpha(data.y[data.rows["train"]], len(labels))
        model_kwargs = dict(input_dim=embeddings.shape[1], num_labels=len(labels), dropout=0.1,
                            concat_time=args.concat_time, conv_dim=hp["conv_dim"],
                            swnu_hidden_dim=hp["swnu_hidden_dim"], ffn_hidden_dims=hp["ffn_hidden_dims"])
        variants = {"reduced": reduced_batch}
        if index < args.verify:
            variants["pipeline"] = full_batch
        macro = {"pipeline": float("nan")}
        start = time.time()
        for variant, make_batch in variants.items():
            torch.manual_seed(seed)  # as search_grid: the same initial draw for both variants
            net = SWNU.from_params(**model_kwargs) if variant == "pipeline" else ReducedPathSWNU(reduced.shape[1], **model_kwargs)
            fit(net, make_batch, data.y, data.rows["train"], data.rows["dev"], alpha, labels, settings, seed, "cpu")
            prob = predict_proba(net, make_batch, data.rows["test"], "cpu", 64)
            macro[variant] = 100 * f1_scores(data.y[data.rows["test"]], prob.argmax(1), labels)["macro"]
        rows.append((100 * committed["test"]["macro"], macro["reduced"]))
        print(f"{fold:4d} {seed:4d} | {rows[-1][0]:9.2f} | {macro['pipeline']:13.2f} | "
              f"{macro['reduced']:12.2f} | {time.time() - start:7.0f}", flush=True)
    committed_mean, reduced_mean = np.mean(rows, axis=0)
    print(f"mean of {len(rows)} | {committed_mean:9.2f} | {'':13} | {reduced_mean:12.2f} |"
          f"   reduced - committed: {reduced_mean - committed_mean:+.2f}")


if __name__ == "__main__":
    main()
