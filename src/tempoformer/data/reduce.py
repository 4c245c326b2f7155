"""The authors' input path of SWNU / Seq-Sig-Net: a low-dimensional reduction of the SBERT vectors.

sig-networks (Tseriotou et al.) feed the SWNU unit's Conv1d a 15-d UMAP of the SBERT vectors
(`obtain_SWNUNetwork_input(method="umap", dimension=15, seed=42)`), while the classifier head
reads the full SBERT vector of the current post. This module makes that input for the workflow:
`reduce_embeddings` writes the SBERT vectors with the reduced dimensions appended as the last
columns ([n, D + dimension], float32), so a training run still reads one embeddings file and the
model (`path_reduction: umap`, tempoformer.models.swnu) splits the appended columns off for the
path.

As the authors do, the reduction is fitted once on *every* post of the corpus, test posts
included: it sees the unlabelled text of each fold's test posts (a transductive leak that the
default path, `path_reduction: none`, does not have). That is their behaviour, kept on purpose
so the option reproduces their input; it is not how a model deployed on new posts could work.

umap-learn is an optional extra (`pip install -e .[umap]`): it is not needed unless a config
asks for this path. With a fixed `random_state` UMAP runs on one thread (n_jobs=1) and the file
is the same at every run on one machine; BLAS and numba are held to one thread here too.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ..artefacts import load_npy
from ..atomic import write_with

log = logging.getLogger(__name__)

METHODS = ("umap",)
UMAP_EXTRA = "pip install -e .[umap]"


class MissingExtra(ValueError):
    """An optional dependency a requested method needs is not installed: names the extra."""


def load_vectors(path: str | Path) -> np.ndarray:
    """The embeddings to reduce: a 2-D array of finite floats, one row per post; anything else
    raises ValueError naming the file."""
    vectors = load_npy(path)
    if vectors.ndim != 2 or not np.issubdtype(vectors.dtype, np.floating):
        raise ValueError(f"{path}: not embeddings: expected a 2-D float array (posts x dimensions), "
                         f"found {vectors.dtype} of shape {vectors.shape}")
    if vectors.shape[0] < 2 or vectors.shape[1] < 2:
        raise ValueError(f"{path}: {vectors.shape[0]} posts of {vectors.shape[1]} dimensions: too few to reduce")
    bad = ~np.isfinite(vectors).all(axis=1)
    if bad.any():
        raise ValueError(f"{path}: {int(bad.sum())} rows hold NaN or infinite values (first: row {int(np.argmax(bad))})")
    return vectors


def _umap(vectors: np.ndarray, dimension: int, seed: int) -> np.ndarray:
    try:
        import umap
    except ImportError:
        raise MissingExtra(f"the umap path reduction needs umap-learn, an optional extra: {UMAP_EXTRA}") from None
    import numba
    from threadpoolctl import threadpool_limits

    log.info("umap-learn %s, numba %s", getattr(umap, "__version__", "?"), numba.__version__)
    numba.set_num_threads(1)
    with threadpool_limits(limits=1):
        # sig-networks' settings: UMAP's defaults (15 neighbours, min_dist 0.1, euclidean) and
        # random_state = the seed; fitted on every post (test posts too, as the authors do).
        reducer = umap.UMAP(n_components=dimension, random_state=seed, n_jobs=1)
        return reducer.fit_transform(vectors)


def reduce_vectors(vectors: np.ndarray, method: str = "umap", dimension: int = 15, seed: int = 42) -> np.ndarray:
    """[n, dimension] float32 reduction of `vectors` [n, D] by `method`, fitted on all n rows."""
    if method not in METHODS:
        raise ValueError(f"unknown reduction method {method!r}; known: {', '.join(METHODS)}")
    n, width = vectors.shape
    if not 1 <= dimension < width:
        raise ValueError(f"dimension {dimension}: must be in [1, {width}) (the embeddings' width)")
    if n <= dimension + 1:
        raise ValueError(f"{n} posts: too few for a {dimension}-d {method} (needs more than {dimension + 1})")
    reduced = _umap(vectors, dimension, seed)
    return np.ascontiguousarray(reduced, dtype=np.float32)


def reduce_embeddings(embeddings: str | Path, output: str | Path, method: str = "umap", dimension: int = 15,
                      seed: int = 42) -> np.ndarray:
    """Write `embeddings` with their `method` reduction appended ([n, D + dimension], float32)."""
    vectors = load_vectors(embeddings)
    reduced = reduce_vectors(vectors, method, dimension, seed)
    combined = np.concatenate([vectors.astype(np.float32, copy=False), reduced], axis=1)
    write_with(Path(output), lambda tmp: np.save(tmp, combined), suffix=".npy")
    log.info("%s: %d posts, %d SBERT + %d %s dimensions (seed %d)", output, combined.shape[0],
             vectors.shape[1], dimension, method, seed)
    return combined
