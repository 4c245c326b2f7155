"""Evaluation: fixed-mask perplexity, the Wilcoxon test, sigma_sim (eq. 15), change scores.

Perplexity. Each document's masks are fixed by (seed, doc_id) (train.document_masks), so every
model of a seed is scored on the same masked positions and per-document losses pair up. We
report the token-weighted perplexity exp(sum of CE over all masked pieces / their number); the
authors' exp(mean over batches of the batch-mean CE) (main_mlm.py:144) is computed beside it
from the same per-document sums (`batch_mean`, batches of `batch_size` documents in order).

Significance: the Wilcoxon signed-rank test (scipy) on the paired per-document mean CE of two
models on the same split and seed (the paper: p < .01).

sigma_sim (eq. 14-15): for each word with a dynamic embedding and each (unit, time) in which it
occurs in the dev documents, sim = cos(e~, e) (offsets in eval mode, no dropout: a function of
(word, unit, time) only); sigma_sim is the standard deviation over those contexts. A word split
into pieces is the average of its pieces' embeddings (footnote 14: e~ the mean of the pieces'
e~_p, e the mean of their e~_p + o_p), so `isolating` (`iso` + `##lating`) has its own sigma,
not that of `iso`; `words: pieces` ranks single pieces instead. The top words come with one
context above and one below their mean sim.

Change score (beyond the paper): the social-averaged dynamic type embedding of a word at time j,
e_j = e~ + mean over units of o_ij (units that wrote at j; one unit in a time-only corpus); the
score is 1 - cos(e_first, e_last), and the walk length sum_j ||o_j - o_j-1|| is kept beside it.
A word of several pieces is their average (as sigma_sim); a word none of whose pieces has an
offset cannot be scored and is counted.
"""

from __future__ import annotations

import logging
import math
from typing import Sequence

import numpy as np
import polars as pl
import torch
from torch.nn import functional as F

from .metrics import wilcoxon  # noqa: F401 (Table 2's test; torch-free for the tables job)
from .model import DcweModel
from .train import EncodedDocs, collate, masked_batch

log = logging.getLogger(__name__)


@torch.no_grad()
def document_losses(model: DcweModel, docs: EncodedDocs, tokenizer, seed: int, probability: float = 0.15,
                    batch_size: int = 32, device: str = "cpu") -> pl.DataFrame:
    """doc_id, loss_sum (CE summed over the masked pieces), n_masked; masks fixed by (seed, doc_id)."""
    model.to(device).eval()
    order = np.argsort([len(x) for x in docs.ids], kind="stable")  # batches of similar length
    loss_sum = np.zeros(len(docs))
    count = np.zeros(len(docs), dtype=np.int64)
    for start in range(0, len(order), batch_size):
        picks = order[start: start + batch_size]
        ids, attention, labels, times, units = (x.to(device) for x in
                                                masked_batch(docs, picks, tokenizer, probability, seed, "eval"))
        hidden, _, _ = model(ids, attention, times, units)
        where = labels != -100
        ce = F.cross_entropy(model.mlm_logits(hidden[where]), labels[where], reduction="none")
        rows = where.nonzero()[:, 0].cpu()
        per_doc = torch.zeros(len(picks), dtype=torch.float64).index_add_(0, rows, ce.double().cpu())
        loss_sum[picks] = per_doc.numpy()
        count[picks] = where.sum(1).cpu().numpy()
    return pl.DataFrame({"doc_id": docs.doc_ids, "loss_sum": loss_sum, "n_masked": count})


def perplexity(losses: pl.DataFrame, how: str = "token", batch_size: int = 4) -> float:
    """token: exp(sum CE / n masked); batch_mean: exp(mean over consecutive batches of batch CE)."""
    total, count = losses["loss_sum"].to_numpy(), losses["n_masked"].to_numpy()
    if how == "token":
        return float(math.exp(total.sum() / count.sum()))
    if how == "batch_mean":
        means = [total[i:i + batch_size].sum() / count[i:i + batch_size].sum()
                 for i in range(0, len(total), batch_size)]
        return float(math.exp(np.mean(means)))
    raise ValueError(f"perplexity must be token or batch_mean, got {how!r}")


# --------------------------------------------------------------------------- dynamic embeddings

SIGMA_WORDS = ("whole", "pieces")


def text_words(tokenizer, texts: Sequence[str]) -> list[list[tuple[int, ...]]]:
    """Each text's words, each as the tuple of its word-piece ids, in order. A word is what the
    tokenizer's own pre-tokenizer makes one (whitespace and punctuation split: `isolating,` is
    `isolating` and `,`), read from the fast tokenizer's word_ids."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("whole-word sigma_sim needs a fast tokenizer (word_ids); set evaluation.sigma_words: pieces")
    if not len(texts):
        return []
    encoded = tokenizer(list(texts), add_special_tokens=False)
    out = []
    for i, ids in enumerate(encoded["input_ids"]):
        words: list[list[int]] = []
        last = None
        for piece, word in zip(ids, encoded.word_ids(i)):
            if word is None:
                continue
            if word != last:
                words.append([])
                last = word
            words[-1].append(piece)
        out.append([tuple(w) for w in words])
    return out


@torch.no_grad()
def word_vectors(model: DcweModel, words: Sequence[Sequence[int]], units: torch.Tensor, times: torch.Tensor,
                 chunk: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
    """(e~ (N, D), e (N, D)) of N (word, unit, time) triples in eval mode, a word given by its
    pieces: e~ = mean of its pieces' input embeddings, e = mean of their dynamic embeddings
    e~_p + o_p (o_p = 0 for a piece without an offset). The paper's footnote 14: a word split into
    several WordPiece tokens is represented by the average of their embeddings."""
    model.eval()
    bases, dynamics = [], []
    for start in range(0, len(words), chunk):
        rows = [list(w) for w in words[start: start + chunk]]
        if any(not w for w in rows):
            raise ValueError("a word needs at least one word piece")
        ids, attention = collate(rows, 0)
        emb, offsets, _ = model.offsets(ids, attention, times[start: start + chunk], units[start: start + chunk])
        mask = attention.unsqueeze(-1).to(emb.dtype)
        count = mask.sum(1)
        bases.append((emb * mask).sum(1) / count)
        dyn = emb if offsets is None else emb + offsets
        dynamics.append((dyn * mask).sum(1) / count)
    if not bases:
        d = model.word_embeddings.weight.shape[1]
        return torch.zeros(0, d), torch.zeros(0, d)
    return torch.cat(bases), torch.cat(dynamics)


def dynamic_embeddings(model: DcweModel, token_ids: torch.Tensor, units: torch.Tensor,
                       times: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(e~ (N, D), e~ + o (N, D)) for N (token, unit, time) triples, eval mode."""
    return word_vectors(model, [[int(t)] for t in token_ids], units, times)


def sigma_sim(model: DcweModel, docs: EncodedDocs, tokenizer, top: int = 10, min_contexts: int = 2,
              periods: Sequence[str] | None = None, units: Sequence[str] | None = None,
              context_chars: int = 160, words: str = "whole") -> list[dict]:
    """Words with the largest sigma_sim over the (unit, time) contexts of `docs` (eq. 15).

    words: `whole` (the paper, footnote 14): a word of the text, its embeddings averaged over its
    pieces, ranked if at least one piece has an offset (`isolating` = `iso` + `##lating` counts
    through `iso`); `pieces`: each word piece with an offset on its own (the earlier behaviour)."""
    if words not in SIGMA_WORDS:
        raise ValueError(f"sigma_words must be one of {SIGMA_WORDS}, got {words!r}")
    triples: dict[tuple[tuple[int, ...], int, int], int] = {}  # (word, unit, time) -> first document
    dynamic = model.dynamic.cpu()
    if words == "whole":
        per_doc = text_words(tokenizer, docs.texts)
    else:
        per_doc = [[(token,) for token in ids] for ids in docs.ids]
    for d, doc_words in enumerate(per_doc):
        for word in set(doc_words):
            if any(dynamic[p] for p in word):
                triples.setdefault((word, int(docs.units[d]), int(docs.times[d])), d)
    if not triples:
        return []
    keys = sorted(triples)
    names = sorted({k[0] for k in keys})
    index = {w: i for i, w in enumerate(names)}
    emb, dyn = word_vectors(model, [k[0] for k in keys], torch.tensor([k[1] for k in keys]),
                            torch.tensor([k[2] for k in keys]))
    sims = F.cosine_similarity(emb, dyn, dim=-1).numpy()
    frame = pl.DataFrame({"word": [index[k[0]] for k in keys], "unit": [k[1] for k in keys],
                          "time": [k[2] for k in keys], "doc": [triples[k] for k in keys], "sim": sims})
    stats = (frame.group_by("word").agg(pl.col("sim").std(ddof=0).alias("sigma"), pl.col("sim").mean().alias("mean"),
                                         pl.len().alias("n"))
             .filter(pl.col("n") >= min_contexts).sort(["sigma", "word"], descending=[True, False]).head(top))

    def context(row: dict) -> dict:
        text = docs.texts[row["doc"]]
        return {"unit": units[row["unit"]] if units else row["unit"],
                "time": periods[row["time"]] if periods else row["time"],
                "sim": round(float(row["sim"]), 6), "text": text[:context_chars]}

    out = []
    for row in stats.iter_rows(named=True):
        pieces = names[row["word"]]
        group = frame.filter(pl.col("word") == row["word"]).sort("sim")
        out.append({"word": tokenizer.convert_tokens_to_string(tokenizer.convert_ids_to_tokens(list(pieces))),
                    "pieces": len(pieces), "sigma": float(row["sigma"]), "mean_sim": float(row["mean"]),
                    "contexts": int(row["n"]), "above": context(group.row(-1, named=True)),
                    "below": context(group.row(0, named=True))})
    return out


def change_scores(model: DcweModel, tokenizer, targets: dict[str, str], docs: pl.DataFrame,
                  n_times: int, graded: dict | None = None) -> pl.DataFrame:
    """One row per target: score 1 - cos(e_first, e_last), walk length, or the problem. A word
    of several pieces is their average (footnote 14), scorable when a piece has an offset."""
    present = docs.select("unit", "time").unique().sort(["time", "unit"])
    rows = []
    for target, word in targets.items():
        pieces = tokenizer(word, add_special_tokens=False)["input_ids"]
        row = {"target": target, "word": word, "pieces": len(pieces), "score": None, "walk_length": None,
               "problem": None, "graded": None if graded is None else graded.get(target)}
        if not pieces:
            row["problem"] = "no word piece"
        elif not any(bool(model.dynamic[p]) for p in pieces):
            row["problem"] = ("not in the dynamic vocabulary" if len(pieces) == 1
                              else f"{len(pieces)} word pieces, none in the dynamic vocabulary")
        else:
            means = []
            for t in range(n_times):
                units = present.filter(pl.col("time") == t)["unit"].to_numpy()
                n = len(units)
                emb, dyn = word_vectors(model, [pieces] * n, torch.tensor(units, dtype=torch.long),
                                        torch.full((n,), t))
                means.append(dyn.mean(0))
            offsets = [m - emb[0] for m in means]
            row["score"] = float(1 - F.cosine_similarity(means[0], means[-1], dim=0))
            row["walk_length"] = float(sum((offsets[j] - offsets[j - 1]).norm() for j in range(1, n_times)))
        rows.append(row)
    schema = {"target": pl.String, "word": pl.String, "pieces": pl.Int64, "score": pl.Float64,
              "walk_length": pl.Float64, "problem": pl.String, "graded": pl.Float64}
    return pl.DataFrame(rows, schema=schema)
