"""SBERT embeddings (all-MiniLM-L6-v2): each distinct text of a dataset is encoded once."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import numpy as np
import polars as pl

from ..artefacts import DamagedArtefact, load_npz, read_parquet
from ..atomic import write_with
from ..backbones import backbone_path
from ..device import pick_device

log = logging.getLogger(__name__)


def text_keys(texts) -> np.ndarray:
    """Content keys of texts: a cache entry is found by what a post says, not where it is."""
    return np.array([hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts])


def load_encoder(model: str = "minilm"):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(backbone_path(model), device=pick_device(), local_files_only=True)


def embed_texts(texts: list[str], model: str = "minilm", batch_size: int = 64,
                cache: str | Path | None = None, encoder=None) -> np.ndarray:
    """One vector per text; each distinct text is encoded once, and not at all when `cache`
    (an .npz of earlier vectors of the same model) already holds it."""
    keys = text_keys(texts)
    unique_keys, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    known = _read_cache(cache, model)
    missing = [i for i, key in enumerate(unique_keys) if key not in known]
    vectors = np.zeros((len(unique_keys), 0), dtype=np.float32)
    if missing:
        encoder = encoder or load_encoder(model)
        new = encoder.encode([texts[first[i]] for i in missing], batch_size=batch_size,
                             convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
        known.update(zip(unique_keys[missing], new))
    log.info("%d texts, %d distinct, %d encoded, %d from the cache", len(texts), len(unique_keys),
             len(missing), len(unique_keys) - len(missing))
    if len(unique_keys):
        vectors = np.stack([known[key] for key in unique_keys])
    if cache is not None and missing:
        _write_cache(cache, model, known)
    return vectors[inverse]


def _read_cache(cache, model: str) -> dict:
    if cache is None or not Path(cache).exists():
        return {}
    try:
        stored = load_npz(cache)
    except DamagedArtefact as error:  # a cache: encode without it, and write it anew
        log.warning("%s; encoding without the cache", error)
        return {}
    if str(stored["model"]) != model:  # vectors of another model are no use
        return {}
    return dict(zip(stored["keys"], stored["vectors"]))


def _write_cache(cache, model: str, known: dict) -> None:
    cache = Path(cache)
    write_with(cache, lambda tmp: np.savez(tmp, model=np.array(model), keys=np.array(list(known)),
                                           vectors=np.stack(list(known.values()))), suffix=".npz")


def embed_posts(posts_path: str | Path, output: str | Path, model: str = "minilm",
                cache: str | Path | None = None) -> np.ndarray:
    texts = read_parquet(posts_path, columns=["text"])["text"].to_list()
    vectors = embed_texts(texts, model, cache=cache)
    output = Path(output)
    write_with(output, lambda tmp: np.save(tmp, vectors), suffix=".npy")
    return vectors
