"""Per-year word statistics on the language model's vocabulary, computed once per corpus.

f_iw is the relative frequency of vocabulary entry w in year i: its count among the year's
pieces (each abstract's pieces plus one EOS, so abstract ends have a frequency too) with
add-k smoothing (k = 1, the authors' ngramdatacolletor.py:29-32):

    log f_iw = log (c_iw + k) - log (N_i + k |V|),    N_i = sum_w c_iw.

The authors then min-max scale each year into [-1/sqrt(768), 1/sqrt(768)] (:44-47); that is the
named option `scaling: minmax` applied by the models (scale_minmax), not stored.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..artefacts import load_npz


def year_counts(ids_per_doc, years_per_doc, vocab_size: int, eos: int | None = None) -> tuple[list[int], np.ndarray]:
    """(sorted years, counts[year, w]) over documents' LM ids (+ one EOS per document)."""
    years = sorted(set(int(y) for y in years_per_doc))
    row = {y: i for i, y in enumerate(years)}
    counts = np.zeros((len(years), vocab_size), dtype=np.int64)
    for ids, year in zip(ids_per_doc, years_per_doc):
        counts[row[int(year)]] += np.bincount(np.asarray(ids, dtype=np.int64), minlength=vocab_size)
        if eos is not None:
            counts[row[int(year)], eos] += 1
    return years, counts


def smoothed_log_frequency(counts: np.ndarray, smoothing: float = 1.0) -> np.ndarray:
    """log((c + k) / (N + k V)) per row; a row of zeros gives the uniform log(1/V)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum(axis=-1, keepdims=True)
    return np.log(counts + smoothing) - np.log(total + smoothing * counts.shape[-1])


def scale_minmax(log_f: np.ndarray, bound: float) -> np.ndarray:
    """The authors' scaling: each row linearly into [-bound, bound] (a constant row gives 0)."""
    lo, hi = log_f.min(axis=-1, keepdims=True), log_f.max(axis=-1, keepdims=True)
    span = np.where(hi > lo, hi - lo, 1.0)
    return (2 * bound) * (log_f - lo) / span - bound


def compute_frequency(tokens, vocab_size: int, eos: int, smoothing: float = 1.0, no_bias=()) -> dict:
    """{years, counts, log_f, n_docs, no_bias} of a tokens frame (tokens.tokenize_corpus).
    `no_bias`: entries no temporal bias may move (PAD, UNK, BOS: see biases.py)."""
    years, counts = year_counts(tokens["ids"].to_list(), tokens["year"].to_list(), vocab_size, eos)
    docs = {int(y): int(n) for y, n in zip(*np.unique(tokens["year"].to_numpy(), return_counts=True))}
    return {"years": np.asarray(years, dtype=np.int64), "counts": counts,
            "log_f": smoothed_log_frequency(counts, smoothing).astype(np.float32),
            "n_docs": np.asarray([docs[y] for y in years], dtype=np.int64),
            "smoothing": np.asarray(smoothing), "no_bias": np.asarray(sorted(set(no_bias)), dtype=np.int64)}


def write_frequency(freq: dict, path: str | os.PathLike) -> Path:
    from ..atomic import write_with

    return write_with(path, lambda tmp: np.savez(tmp, **freq), suffix=".npz")


def read_frequency(path: str | os.PathLike) -> dict:
    return load_npz(path)
