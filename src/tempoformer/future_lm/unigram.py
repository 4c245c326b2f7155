"""Beyond the paper: fixed frequency biases, and the next-year oracle as an upper bound.

For a year y, a predictor gives a log-frequency vector over the vocabulary:
- `last_year`: log f of the last history year (y-1; the Frequency-NoLSTM input);
- `linear_trend`: each entry's least-squares line through log f of the `trend_years` history
  years (those in the corpus), extrapolated to y;
- `oracle`: log f of year y itself: it uses the future, so it bounds what any unigram-shaped
  temporal bias can give; it is not a model.

Each predictor is scored two ways: as a unigram language model on its own (the softmax of the
predicted log f), and added to a trained Baseline model's logits with β chosen on the dev year
from `betas` (β = 0 is the Baseline itself). What is added (`reference`):

- `training_years` (default): β × (log f_pred - log f_train), f_train the training years' counts
  pooled and smoothed as every year's. The Baseline has already learned the training years'
  unigram distribution; what a year adds is how its frequencies differ from it. An entry whose
  frequency did not change gets no bias, as UNK, PAD and BOS (no centring: with those pinned at 0,
  a shift of the others would move them).
- `none` (this code's first form): β × (log f_pred - mean_w log f_pred), the absolute log
  frequency, centred. Added to an LM that has learned the unigram prior it counts that prior
  twice, so at β > 0 it mostly sharpens the LM toward frequent words; a negative result for the
  oracle under it says little about what a temporal bias could gain.

One forward pass of the Baseline per batch serves every (predictor, β).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .data import history_years

PREDICTORS = ("last_year", "linear_trend", "oracle")
REFERENCES = ("training_years", "none")


def predicted_log_f(freq: dict, year: int, predictor: str, window: int, last_train_year: int,
                    shortcut: bool = False) -> np.ndarray:
    years = [int(y) for y in freq["years"]]
    log_f = np.asarray(freq["log_f"], dtype=np.float64)
    row = {y: i for i, y in enumerate(years)}
    uniform = np.full(log_f.shape[1], -math.log(log_f.shape[1]))
    if predictor == "oracle":
        return log_f[row[year]] if year in row else uniform
    hist = [y for y in history_years(year, window, last_train_year, shortcut) if y in row]
    if not hist:
        return uniform
    if predictor == "last_year" or len(hist) == 1:
        return log_f[row[hist[-1]]]
    if predictor != "linear_trend":
        raise ValueError(f"unknown predictor {predictor!r}; one of {PREDICTORS}")
    x = np.asarray(hist, dtype=np.float64)
    ys = log_f[[row[h] for h in hist]]                       # [n, V]
    xm = x.mean()
    slope = ((x - xm)[:, None] * (ys - ys.mean(0))).sum(0) / ((x - xm) ** 2).sum()
    return ys.mean(0) + slope * (year - xm)


def training_log_f(freq: dict, train_years: tuple[int, int]) -> np.ndarray:
    """[V] smoothed log f of the training years' counts pooled (as frequency.py smooths a year)."""
    from .frequency import smoothed_log_frequency

    if "counts" not in freq:
        raise ValueError("unigram reference training_years needs the per-year counts (frequency.npz 'counts')")
    years = [int(y) for y in freq["years"]]
    rows = [i for i, y in enumerate(years) if train_years[0] <= y <= train_years[1]]
    if not rows:
        raise ValueError(f"no year of the frequency table {years} is a training year {list(train_years)}")
    pooled = np.asarray(freq["counts"])[rows].sum(axis=0, keepdims=True)
    return smoothed_log_frequency(pooled, float(freq.get("smoothing", 1.0)))[0]


def fixed_bias(predicted: np.ndarray, beta: float, reference: str, train_log_f: np.ndarray | None,
               no_bias) -> np.ndarray:
    """The β-scaled bias of a predicted log f vector (module docstring); 0 on `no_bias`."""
    if reference == "training_years":
        b = beta * (predicted - train_log_f)
    elif reference == "none":
        b = beta * (predicted - predicted.mean())
    else:
        raise ValueError(f"unigram reference {reference!r} is not one of {REFERENCES}")
    b = np.array(b, dtype=np.float64)
    b[np.asarray(no_bias, dtype=np.int64)] = 0.0  # as the temporal models: no bias on UNK, PAD, BOS
    return b


def log_softmax_np(v: np.ndarray) -> np.ndarray:
    m = v.max()
    return v - m - math.log(np.exp(v - m).sum())


def unigram_nll(docs, log_p: np.ndarray, eos: int) -> tuple[float, int]:
    total, n = 0.0, 0
    for d in docs:
        ids = np.asarray([*d.ids, eos], dtype=np.int64)
        total -= float(log_p[ids].sum())
        n += len(ids)
    return total, n


def evaluate_predictors(model, freq: dict, docs_by_split: dict, vocab, window: int, train_years: tuple[int, int],
                        shortcut: bool, betas, trend_years: int | None = None, stride=None, batch_size: int = 8,
                        device: str = "cpu", reference: str = "training_years") -> dict:
    """{predictor: {unigram ppl per split, chosen β, LM+β ppl per split (and per β on dev)}}."""
    from .evaluate import token_nll

    if reference not in REFERENCES:
        raise ValueError(f"unigram reference {reference!r} is not one of {REFERENCES}")
    last_train_year = int(train_years[1])
    trend_years = trend_years or window
    betas = [float(b) for b in betas]
    train_log_f = training_log_f(freq, train_years) if reference == "training_years" else None

    def vector(year, predictor):
        w = trend_years if predictor == "linear_trend" else window
        return predicted_log_f(freq, year, predictor, w, last_train_year, shortcut)

    no_bias = np.asarray(freq.get("no_bias", []), dtype=np.int64)
    variants = {}
    for predictor in PREDICTORS:
        for beta in betas:
            def bias(year, predictor=predictor, beta=beta):
                b = fixed_bias(vector(year, predictor), beta, reference, train_log_f, no_bias)
                return torch.tensor(b, dtype=torch.float32)
            variants[f"{predictor}|{beta}"] = bias
    results = {p: {"unigram_ppl": {}, "lm_ppl_by_beta": {}, "lm_ppl": {}} for p in PREDICTORS}
    nll_by_split = {}
    for split, docs in docs_by_split.items():
        if not docs:
            continue
        nll_by_split[split] = token_nll(model, docs, vocab.bos, vocab.eos, stride, batch_size, device, variants)
        for predictor in PREDICTORS:
            total, n = 0.0, 0
            for year in sorted({d.year for d in docs}):
                mine = [d for d in docs if d.year == year]
                t, k = unigram_nll(mine, log_softmax_np(vector(year, predictor)), vocab.eos)
                total, n = total + t, n + k
            results[predictor]["unigram_ppl"][split] = math.exp(total / n)
            for beta in betas:
                nlls = nll_by_split[split][f"{predictor}|{beta}"]
                results[predictor]["lm_ppl_by_beta"].setdefault(split, {})[str(beta)] = \
                    math.exp(sum(x.sum() for x in nlls) / sum(len(x) for x in nlls))
    for predictor in PREDICTORS:
        dev = results[predictor]["lm_ppl_by_beta"].get("dev", {})
        chosen = min(dev, key=dev.get) if dev else str(betas[0])
        results[predictor]["beta"] = float(chosen)
        for split, by_beta in results[predictor]["lm_ppl_by_beta"].items():
            results[predictor]["lm_ppl"][split] = by_beta[chosen]
    return results
