"""Paired tests of a model against each baseline (`baselines`: Baseline and Baseline-n by
default) over the same test abstracts, and the spread over seeds.

Each abstract's score is its log-perplexity (NLL / tokens), averaged over the seeds a model ran.
- Sign test: the exact two-sided binomial test of the number of abstracts on which the model's
  score is lower than the Baseline's, ties left out (scipy.stats.binomtest). The authors'
  sign_test.py pairs the two systems' top-100 CM scores by rank and reports C(n,k)/2^n, the
  probability of one outcome, not a tail p-value.
- Paired bootstrap of the corpus perplexity (exp(total NLL / total tokens)): abstracts drawn
  with replacement, the same draw for both models; p = share of resamples in which the model's
  perplexity is not lower than the Baseline's (ties counted half).
- Over seeds (seed_deltas): for each seed both models ran, the relative difference of their
  test perplexities, 100 (PPL_model / PPL_baseline - 1) %; its mean, sample sd and how many seeds
  the model is lower on. The two tests above pool the seeds (per-abstract seed means), this shows
  whether a gain holds seed by seed.
"""

from __future__ import annotations

import numpy as np


def sign_test(model: np.ndarray, baseline: np.ndarray) -> dict:
    from scipy.stats import binomtest

    model, baseline = np.asarray(model, dtype=float), np.asarray(baseline, dtype=float)
    wins, losses = int((model < baseline).sum()), int((model > baseline).sum())
    n = wins + losses
    p = float(binomtest(wins, n, 0.5).pvalue) if n else 1.0
    return {"wins": wins, "losses": losses, "ties": int(len(model) - n), "p_value": p}


def bootstrap_ppl(nll_model, nll_base, tokens, resamples: int = 1000, seed: int = 0) -> dict:
    """nll_*: per-abstract total NLL (seed means), tokens: per-abstract token counts."""
    nll_model, nll_base, tokens = (np.asarray(x, dtype=float) for x in (nll_model, nll_base, tokens))
    rng = np.random.default_rng(seed)
    n = len(tokens)
    not_better = 0.0
    for _ in range(resamples):
        w = np.bincount(rng.integers(n, size=n), minlength=n)
        a, b = (w * nll_model).sum(), (w * nll_base).sum()
        not_better += 1.0 if a > b else 0.5 if a == b else 0.0
    return {"ppl_model": float(np.exp(nll_model.sum() / tokens.sum())),
            "ppl_baseline": float(np.exp(nll_base.sum() / tokens.sum())),
            "p_value": not_better / resamples, "resamples": resamples, "seed": seed}


def seed_deltas(model_ppl: dict, baseline_ppl: dict) -> dict:
    """model_ppl, baseline_ppl: {seed: perplexity}; over the seeds both have, the % differences."""
    seeds = sorted(set(model_ppl) & set(baseline_ppl))
    deltas = [100.0 * (model_ppl[s] / baseline_ppl[s] - 1.0) for s in seeds]
    return {"seeds": seeds, "deltas": deltas, "mean": float(np.mean(deltas)) if deltas else None,
            "sd": float(np.std(deltas, ddof=1)) if len(deltas) > 1 else None,
            "lower": int(sum(d < 0 for d in deltas))}
