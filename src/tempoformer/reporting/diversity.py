"""Dataset diversity, the paper's Table 5 (Tseriotou et al. 2024, §5.4), for one dataset.

The paper names the metrics but not every detail; these are the choices made here:
- BERTScore F1 (Zhang et al. 2019) between pairs of posts: token vectors of one hidden layer of
  the offline BERT backbone (all-MiniLM-L6-v2, 6 layers; layer 5 by default, the depth
  bert-score uses for 6-layer distilled BERTs), [CLS]/[SEP] left out as bert-score does;
  precision = mean over one post's tokens of the best cosine with the other post's tokens,
  recall the same the other way, F1 their harmonic mean; no idf weighting, no baseline
  rescaling; averaged over the pairs.
- SBERT cosine similarity: mean cosine of the SBERT embeddings over all pairs of distinct
  posts, computed exactly from the sum of the unit vectors (no sampling).
- Outlier (Larson et al. 2019; Stasaski et al. 2020): per fold, the mean Euclidean distance
  of the test posts' SBERT embeddings to the mean embedding of that fold's training posts;
  mean and standard deviation over the folds. The folds do not depend on the training seed,
  so the paper's "across folds and seeds" is across folds here.

Pairs for BERTScore are posts of the whole dataset: every pair of distinct posts when there
are at most `max_pairs`, otherwise `max_pairs` pairs drawn uniformly (with replacement, from
`seed`). Posts with no word piece (empty text) cannot be scored and are left out of the pairs;
their number is reported.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import polars as pl

from ..artefacts import load_npy, read_parquet
from ..atomic import write_text_atomic
from ..data.folds import split_rows
from ..data.posts import read_posts


def sample_pairs(n: int, max_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j), i != j: all of them if there are at most max_pairs, else a sample."""
    if n < 2:
        raise ValueError(f"{n} post(s): pairs need at least two")
    if n * (n - 1) // 2 <= max_pairs:
        return np.triu_indices(n, 1)
    rng = np.random.default_rng(seed)
    i = rng.integers(n, size=max_pairs)
    j = rng.integers(n - 1, size=max_pairs)
    return i, j + (j >= i)  # j skips i, so every other post is equally likely


def bertscore_f1(a: np.ndarray, b: np.ndarray) -> float:
    """BERTScore F1 of two posts' token vectors (tokens × hidden), greedy cosine matching."""
    if not len(a) or not len(b):
        raise ValueError("BERTScore needs at least one token on each side")
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    similarity = a @ b.T
    precision, recall = similarity.max(1).mean(), similarity.max(0).mean()
    return float(2 * precision * recall / (precision + recall))


def mean_pairwise_cosine(x: np.ndarray) -> float:
    """Mean cosine over all pairs of distinct rows: (|Σu|² − n) / (n(n−1)) for unit rows u."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if len(x) < 2 or (norms == 0).any():
        raise ValueError("cosine similarity needs two or more non-zero vectors")
    total = (x / norms).astype(np.float64).sum(0)
    n = len(x)
    return float((total @ total - n) / (n * (n - 1)))


def outlier_distance(embeddings: np.ndarray, posts: pl.DataFrame, folds: pl.DataFrame) -> dict:
    """Mean Euclidean distance of test posts to the training mean, per fold and over folds."""
    per_fold = []
    for fold in sorted(folds["fold"].unique().to_list()):
        rows = split_rows(posts, folds, fold)
        if not len(rows["train"]) or not len(rows["test"]):
            raise ValueError(f"fold {fold} has no training or no test posts")
        centre = embeddings[rows["train"]].astype(np.float64).mean(0)
        per_fold.append(float(np.linalg.norm(embeddings[rows["test"]] - centre, axis=1).mean()))
    return {"mean": float(np.mean(per_fold)),
            "std": float(np.std(per_fold, ddof=1)) if len(per_fold) > 1 else 0.0,
            "per_fold": per_fold}


def token_vectors(texts: list[str], backbone: str, layer: int, max_tokens: int,
                  batch_size: int = 32) -> list[np.ndarray]:
    """Per text, the `layer`-th hidden layer's vectors of its word pieces (no special tokens)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModel, AutoTokenizer

    from ..backbones import backbone_path

    path = backbone_path(backbone)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    if not 1 <= layer <= model.config.num_hidden_layers:
        raise ValueError(f"layer {layer}: {backbone} has layers 1..{model.config.num_hidden_layers}")
    order = np.argsort([len(t) for t in texts])  # similar lengths share a batch: less padding
    vectors: list[np.ndarray] = [np.empty(0)] * len(texts)
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            batch = order[start:start + batch_size]
            encoded = tokenizer([texts[i] for i in batch], padding=True, truncation=True,
                                max_length=max_tokens, return_tensors="pt",
                                return_special_tokens_mask=True)
            special = encoded.pop("special_tokens_mask").bool()
            hidden = model(**encoded, output_hidden_states=True).hidden_states[layer]  # [0] = embeddings
            keep = encoded["attention_mask"].bool() & ~special
            for k, i in enumerate(batch):
                vectors[i] = hidden[k][keep[k]].float().numpy()
    return vectors


def dataset_diversity(posts_path, embeddings_path, folds_path, backbone: str = "minilm", layer: int = 5,
                      max_pairs: int = 1000, max_tokens: int = 128, seed: int = 0) -> dict:
    """Table 5's three numbers for one dataset, with the settings that produced them."""
    started = time.perf_counter()
    posts = read_posts(posts_path)
    embeddings = load_npy(embeddings_path)
    if len(embeddings) != posts.height:
        raise ValueError(f"{embeddings_path}: {len(embeddings)} embeddings for the {posts.height} posts "
                         f"of {posts_path} (one per post, in its row order)")
    texts = posts["text"].to_list()
    unique, inverse = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
    has_tokens = np.array([bool(t and t.strip()) for t in unique])
    usable = np.flatnonzero(has_tokens[inverse])
    i, j = sample_pairs(len(usable), max_pairs, seed)
    first, second = inverse[usable[i]], inverse[usable[j]]
    needed = np.unique(np.concatenate([first, second]))  # each distinct text encoded once
    encoded = dict(zip(needed.tolist(), token_vectors([unique[k] for k in needed], backbone, layer, max_tokens)))
    scores = [bertscore_f1(encoded[a], encoded[b]) for a, b in zip(first.tolist(), second.tolist())]
    return {
        "dataset": str(posts["dataset"][0]),
        "bertscore": float(np.mean(scores)),
        "bertscore_std_over_pairs": float(np.std(scores, ddof=1)) if len(scores) > 1 else 0.0,
        "cosine": mean_pairwise_cosine(embeddings),
        "outlier": outlier_distance(embeddings, posts, read_parquet(folds_path)),
        "settings": {"backbone": backbone, "layer": layer, "max_tokens": max_tokens, "seed": seed,
                     "max_pairs": max_pairs, "pairs": len(scores),
                     "all_pairs": len(scores) == len(usable) * (len(usable) - 1) // 2,
                     "posts": posts.height, "posts_without_text": posts.height - len(usable)},
        "seconds": round(time.perf_counter() - started, 2),
    }


def write_diversity(output, **kwargs) -> dict:
    result = dataset_diversity(**kwargs)
    write_text_atomic(output, json.dumps(result, indent=1) + "\n")
    return result
