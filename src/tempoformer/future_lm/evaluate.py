"""Automatic metrics: perplexity per abstract and per word, content perplexity, content METEOR.

Every abstract is scored on its own: BOS + pieces + EOS, predicting each piece and EOS from the
pieces before it in the same abstract (no window crosses two abstracts, unlike the authors'
1,024-token chunks over joined abstracts, compute_perplexity.py:360-366). An abstract longer
than the model's context is scored with a sliding window of `stride`: each piece is predicted
once, with at least context - stride pieces of its own abstract before it (except at the start).

Per split year, from the per-abstract sums (scores.parquet):
- PPL per token: exp(total NLL / (pieces + EOS)) over all abstracts of the year;
- PPL per word: exp(total NLL / (whitespace words + 1)) (the +1 is EOS): comparable across
  tokenizers, ours and GPT-2's;
- CPL (content perplexity): exp(NLL of the pieces of content words / content words), a content
  word decided per word (tokens.py); `cpl_piece` is the authors' per-piece reading,
  exp(NLL of content pieces / content pieces).
- CM (content METEOR, meteor.py): each generated abstract reduced to its content words, METEOR
  against every reference abstract of the year reduced the same way, the maximum kept, the mean
  over generated abstracts.

The authors' perplexity, as a named evaluation option beside ours (`evaluation.chunked: true`,
chunked_nll): the year's abstracts joined into one stream (they join lines with "\n\n";
WordPiece has no newline piece, so the separator is EOS, `chunk_separator: eos`, or nothing,
`none`), cut into non-overlapping chunks of the model's context (their stride = 1,024 = GPT-2's
context, compute_perplexity.py:360-366); in each chunk every token but the first is predicted
from the tokens before it in the chunk, which may belong to the previous abstract. Reported:
exp(total NLL / predictions), the authors' figure exp(sum over chunks of mean NLL x chunk length /
total length) (a mean over n - 1 predictions multiplied by n, :385), and their content perplexity
over content pieces (chunks without one skipped, :400), with how many chunks cross an abstract.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

log = logging.getLogger(__name__)


@dataclass
class Doc:
    doc_id: str
    year: int
    ids: list[int]
    content: np.ndarray          # [n] bool: piece of a content word
    content_piece: np.ndarray    # [n] bool: the authors' per-piece rule
    n_ws_words: int
    n_content_words: int


def docs_of(tokens, years=None, splits=None, limit: int | None = None) -> list[Doc]:
    """Documents of a tokens frame (tokens.tokenize_corpus) for some years and/or splits."""
    frame = tokens
    if years is not None:
        frame = frame.filter(frame["year"].is_in(list(years)))
    if splits is not None:
        frame = frame.filter(frame["split"].is_in(list(splits)))
    docs = [Doc(r["doc_id"], int(r["year"]), list(r["ids"]), np.asarray(r["content"], dtype=bool),
                np.asarray(r["content_piece"], dtype=bool), int(r["n_ws_words"]), int(r["n_content_words"]))
            for r in frame.iter_rows(named=True)]
    return docs[:limit] if limit else docs


def windows(length: int, context: int, stride: int) -> list[tuple[int, int, int]]:
    """Windows over a sequence of `length` tokens (BOS ... EOS) predicting tokens 1..length-1:
    (begin, end, n_scored): input seq[begin:end], targets seq[begin+1:end+1], of which the last
    n_scored are scored. Every target is scored exactly once."""
    n_targets = length - 1
    if n_targets <= context:
        return [(0, n_targets, n_targets)]
    if not 0 < stride <= context:
        raise ValueError(f"stride must be in 1..context ({context}), got {stride}")
    out, done, begin = [], 0, 0
    while done < n_targets:
        end = min(begin + context, n_targets)
        out.append((begin, end, end - done))
        done = end
        begin += stride
    return out


def token_nll(model, docs: list[Doc], bos: int, eos: int, stride: int | None = None, batch_size: int = 8,
              device: str = "cpu", variants: dict | None = None):
    """Per document, the NLL (nats) of each piece and of EOS, in order ([n + 1]).

    `variants` {name: year -> [V] tensor}: instead, {name: per-document NLLs} of the model's
    logits plus each variant's fixed bias, from one forward pass (unigram.py)."""
    context = model.lm.context
    stride = stride or max(context // 2, 1)
    names = list(variants) if variants else [None]
    outs = {name: [np.zeros(len(d.ids) + 1, dtype=np.float64) for d in docs] for name in names}
    items = []  # (year, doc index, begin, end, n_scored, offset of the first scored target)
    for i, d in enumerate(docs):
        length = len(d.ids) + 2
        for begin, end, n_scored in windows(length, context, stride):
            items.append((d.year, i, begin, end, n_scored))
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        for year in sorted({it[0] for it in items}):
            mine = sorted((it for it in items if it[0] == year), key=lambda it: it[3] - it[2])
            state = model.year_state(year)
            extra = {name: (variants[name](year) if name is not None else None) for name in names}
            for b in range(0, len(mine), batch_size):
                batch = mine[b:b + batch_size]
                width = max(end - begin for _, _, begin, end, _ in batch)
                ids = torch.zeros(len(batch), width, dtype=torch.long)
                targets = torch.full((len(batch), width), -100, dtype=torch.long)
                for r, (_, i, begin, end, n_scored) in enumerate(batch):
                    seq = [bos, *docs[i].ids, eos]
                    ids[r, :end - begin] = torch.tensor(seq[begin:end])
                    tgt = torch.tensor(seq[begin + 1:end + 1])
                    tgt[:len(tgt) - n_scored] = -100
                    targets[r, :end - begin] = tgt
                logits, _ = model.logits(ids.to(device), year, state=state)
                for name in names:
                    shifted = logits if extra[name] is None else logits + extra[name].to(logits.device)
                    nll = F.cross_entropy(shifted.float().transpose(1, 2), targets.to(device), reduction="none",
                                          ignore_index=-100).cpu().double().numpy()
                    for r, (_, i, begin, end, n_scored) in enumerate(batch):
                        # targets of this window are tokens begin+1..end of the sequence, i.e. NLL
                        # indices begin..end-1; the scored ones are the last n_scored
                        outs[name][i][end - n_scored:end] = nll[r, end - begin - n_scored:end - begin]
    model.train(was_training)
    return outs if variants else outs[None]


def doc_scores(docs: list[Doc], nlls: list[np.ndarray]) -> list[dict]:
    rows = []
    for d, nll in zip(docs, nlls):
        pieces = nll[:-1]
        rows.append({"doc_id": d.doc_id, "year": d.year, "nll": float(nll.sum()), "n_tokens": len(nll),
                     "n_ws_words": d.n_ws_words, "content_nll": float(pieces[d.content].sum()),
                     "n_content_words": d.n_content_words, "content_piece_nll": float(pieces[d.content_piece].sum()),
                     "n_content_pieces": int(d.content_piece.sum())})
    return rows


def _exp(total: float, n: float) -> float | None:
    return math.exp(total / n) if n else None


def corpus_metrics(rows: list[dict]) -> dict:
    """Perplexities of a set of per-abstract rows (doc_scores)."""
    s = {k: sum(r[k] for r in rows) for k in ("nll", "n_tokens", "n_ws_words", "content_nll",
                                              "n_content_words", "content_piece_nll", "n_content_pieces")}
    return {"n_docs": len(rows), "ppl_token": _exp(s["nll"], s["n_tokens"]),
            "ppl_word": _exp(s["nll"], s["n_ws_words"] + len(rows)),
            "cpl": _exp(s["content_nll"], s["n_content_words"]),
            "cpl_piece": _exp(s["content_piece_nll"], s["n_content_pieces"]),
            "n_tokens": s["n_tokens"], "n_content_words": s["n_content_words"]}


def perplexity(model, docs: list[Doc], bos: int, eos: int, stride=None, batch_size: int = 8, device="cpu") -> float:
    nlls = token_nll(model, docs, bos, eos, stride, batch_size, device)
    return math.exp(sum(n.sum() for n in nlls) / sum(len(n) for n in nlls))


def content_words(text: str, stopwords: frozenset[str]) -> list[str]:
    from .data import words
    from .tokens import is_content

    return [w.lower() for w in words(text) if is_content(w, stopwords)]


def content_meteor(generated: list[str], references: list[str], stopwords: frozenset[str]) -> dict:
    """CM: per generated abstract the max METEOR over references (content words only), and the mean."""
    from .meteor import Matcher, meteor

    refs = [Matcher(content_words(r, stopwords)) for r in references]
    per = []
    for text in generated:
        hyp = content_words(text, stopwords)
        per.append(max((meteor(hyp, ref) for ref in refs), default=0.0))
    return {"cm": float(np.mean(per)) if per else None, "per_generation": per}


def joined_stream(docs: list[Doc], separator: list[int]) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The authors' stream: abstracts' pieces joined by `separator` (no BOS, no final EOS).
    Returns (ids, owner [n] = the abstract's index or -1 for a separator, content_piece [n])."""
    ids, owner, content = [], [], []
    for k, d in enumerate(docs):
        if k:
            ids += separator
            owner += [-1] * len(separator)
            content += [False] * len(separator)
        ids += d.ids
        owner += [k] * len(d.ids)
        content += [bool(c) for c in d.content_piece]
    return ids, np.asarray(owner, dtype=np.int64), np.asarray(content, dtype=bool)


def chunk_bounds(length: int, context: int) -> list[tuple[int, int]]:
    """Non-overlapping chunks [begin, end) of at most `context` tokens (the authors' stride = context)."""
    return [(b, min(b + context, length)) for b in range(0, length, context)]


def stream_nll(model, stream: list[int], year: int, batch_size: int = 8, device: str = "cpu") -> np.ndarray:
    """NLL of every token of a stream scored in non-overlapping chunks of the model's context, each
    token predicted from the tokens before it in its chunk; NaN for a chunk's first token."""
    out = np.full(len(stream), np.nan)
    bounds = [(b, e) for b, e in chunk_bounds(len(stream), model.lm.context) if e - b >= 2]
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        state = model.year_state(year)
        for c in range(0, len(bounds), batch_size):
            batch = bounds[c:c + batch_size]
            width = max(e - b for b, e in batch) - 1
            ids = torch.zeros(len(batch), width, dtype=torch.long)
            targets = torch.full((len(batch), width), -100, dtype=torch.long)
            for r, (b, e) in enumerate(batch):
                ids[r, :e - b - 1] = torch.tensor(stream[b:e - 1])
                targets[r, :e - b - 1] = torch.tensor(stream[b + 1:e])
            logits, _ = model.logits(ids.to(device), year, state=state)
            nll = F.cross_entropy(logits.float().transpose(1, 2), targets.to(device), reduction="none",
                                  ignore_index=-100).cpu().double().numpy()
            for r, (b, e) in enumerate(batch):
                out[b + 1:e] = nll[r, :e - b - 1]
    model.train(was_training)
    return out


def chunked_summary(nll: np.ndarray, owner: np.ndarray, content: np.ndarray, context: int) -> dict:
    """The authors' figures from per-token NLLs of a stream (stream_nll) in chunks of `context`."""
    chunks = []
    for b, e in chunk_bounds(len(nll), context):
        if e - b < 2:
            continue  # a last chunk of one token predicts nothing (the authors' loss would be NaN)
        values, is_content = nll[b + 1:e], content[b + 1:e]
        chunks.append({"nll": float(values.sum()), "n_pred": e - b - 1, "n_tokens": e - b,
                       "content_nll": float(values[is_content].sum()), "n_content": int(is_content.sum()),
                       "n_abstracts": len(set(owner[b:e].tolist()) - {-1})})
    with_content = [c for c in chunks if c["n_content"]]
    n_pred = sum(c["n_pred"] for c in chunks)
    return {"ppl": _exp(sum(c["nll"] for c in chunks), n_pred),
            "ppl_authors": _exp(sum(c["nll"] / c["n_pred"] * c["n_tokens"] for c in chunks),
                                sum(c["n_tokens"] for c in chunks)),
            "cpl_piece": _exp(sum(c["content_nll"] for c in with_content), sum(c["n_content"] for c in with_content)),
            "n_chunks": len(chunks), "n_predictions": n_pred, "context": int(context),
            "chunks_crossing_abstracts": sum(c["n_abstracts"] > 1 for c in chunks)}


def chunked_nll(model, docs: list[Doc], separator: list[int], batch_size: int = 8, device: str = "cpu") -> dict:
    """The authors' perplexity over the joined abstracts of one year (module docstring)."""
    if not docs:
        raise ValueError("no abstracts to score")
    years = {d.year for d in docs}
    if len(years) != 1:
        raise ValueError(f"chunked perplexity is per year; got abstracts of years {sorted(years)}")
    stream, owner, content = joined_stream(docs, separator)
    nll = stream_nll(model, stream, years.pop(), batch_size, device)
    return {**chunked_summary(nll, owner, content, model.lm.context), "separator": list(separator)}
