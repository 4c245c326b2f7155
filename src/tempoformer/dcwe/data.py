"""Corpora for DCWE: documents with (text, time, social unit) and a social graph over the units.

A corpus (`DcweCorpus`) is a document table (doc_id, text, unit index, time index, split,
label) plus the units, the edges between them and the time labels. Readers:

- `chitchat_corpus`: the embedded default, built from the PyPI package chitchat-dataset
  (../shared/specs/dcwe.md §5): a document is one sender's turn (consecutive utterances joined
  with spaces, lowercased) in a conversation between exactly two senders, with at least
  `min_words` whitespace words, deduplicated on its text (first in sorted conversation order
  kept); social unit = sender; an undirected edge joins two senders who share a conversation;
  time = calendar month of the turn's first utterance, as an ordinal over the months present.
  CPU scale: `largest_component` keeps the senders of the graph's largest connected component
  and `cap` keeps at most c documents per (sender, month), sampled with random.Random(seed) over
  the sorted (sender, month) keys.
- `chitchat_rating_corpus`: the sentiment corpus of the spec's §5 (the paper's Table 5 analogue):
  two-sender conversations rated "upbeat" >= 6 (positive) or <= 4 (negative), a document = one
  sender's utterances in the conversation, labelled with the conversation's class.
- `read_csv_corpus`: a generic layout (documents CSV with text, unit, time[, doc_id, split,
  label]; edges CSV with source, target).
- `read_release`: the authors' layout (`{name}_{split}.csv` with user, time, year, month, day,
  text[, rating, label]; `{name}_edges.p`; `{name}_users.p`). Pickles run code when loaded, so
  they are read only with `allow_pickle=True` (the dataset setting `allow_pickle: true`): set it
  only for files you trust (your own copy of the paper's data). `read_vectors` reads their
  `{name}_vectors_50.txt` node2vec vectors (word2vec text format) in the order of the units.
- `semantic_change_corpus`: a SemEval-2020 Task 1 corpus (semantic_change.data.load_dataset) as
  a time-only corpus: one document per sentence, one social unit, no edges; its targets and
  graded truth are kept for the change scores.

Bad input (a missing column, an edge naming an unknown unit, a time unit without documents, ...)
raises InputError naming the file, the record and the problem.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import pickle
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import polars as pl

from ..artefacts import read_json, read_parquet
from ..atomic import write_text_atomic, write_with
from ..errors import InputError

log = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")
DOC_SCHEMA = {"doc_id": pl.String, "text": pl.String, "unit": pl.Int64, "time": pl.Int64,
              "split": pl.String, "label": pl.Int64}


@dataclass
class DcweCorpus:
    name: str
    docs: pl.DataFrame               # DOC_SCHEMA, one row per document
    units: list[str]                 # social unit names; docs.unit indexes this list
    edges: list[tuple[int, int]]     # unit index pairs (undirected graphs: each pair once, i < j)
    periods: list[str]               # time labels; docs.time indexes this list
    directed: bool = False
    targets: dict[str, str] | None = None   # change-score targets: target -> word the model reads
    graded: dict[str, float] | None = None
    binary: dict[str, int] | None = None
    sources: list[str] = field(default_factory=list)
    notes: dict = field(default_factory=dict)

    @property
    def has_social(self) -> bool:
        return len(self.units) > 1

    def edge_index(self) -> np.ndarray:
        """(2, E') source/target rows; an undirected edge gives both directions."""
        pairs = list(self.edges)
        if not self.directed:
            pairs += [(b, a) for a, b in self.edges]
        return np.array(pairs, dtype=np.int64).reshape(-1, 2).T

    def split(self, name: str) -> pl.DataFrame:
        return self.docs.filter(pl.col("split") == name)


def _check_times(times: Sequence[int], periods: Sequence[str], path, record_of) -> None:
    counts = np.bincount(np.asarray(times, dtype=np.int64), minlength=len(periods))
    for t, n in enumerate(counts):
        if n == 0:
            raise InputError(path, record_of(t), f"time unit {periods[t]!r} (index {t}) has no document: "
                             "every time unit needs at least one (or leave it out of the periods)")


def make_corpus(name: str, records: list[dict], units: list[str], edges: Sequence[tuple[int, int]],
                periods: list[str], directed: bool = False, split_seed: int | None = 0,
                path: str | os.PathLike = "-", **extra) -> DcweCorpus:
    """records: {doc_id, text, unit, time[, split, label]} with unit/time as indices."""
    if not records:
        raise InputError(path, "-", "no documents")
    _check_times([r["time"] for r in records], periods, path, lambda t: f"time {periods[t]}")
    seen: dict[str, int] = {}
    for i, r in enumerate(records):
        if r["doc_id"] in seen:
            raise InputError(path, f"document {r['doc_id']}", f"duplicate doc_id (rows {seen[r['doc_id']]} and {i})")
        seen[r["doc_id"]] = i
    if any(r.get("split") is None for r in records):
        if split_seed is None:
            raise InputError(path, "-", "documents without a split and no split seed")
        splits = split_by_time([r["time"] for r in records], split_seed)
        for r, s in zip(records, splits):
            r.setdefault("split", None)
            r["split"] = r["split"] or s
    docs = pl.DataFrame([{k: r.get(k) for k in DOC_SCHEMA} for r in records], schema=DOC_SCHEMA)
    if not directed:
        edges = sorted({(min(a, b), max(a, b)) for a, b in edges if a != b})
    else:
        edges = sorted({(a, b) for a, b in edges if a != b})
    return DcweCorpus(name=name, docs=docs, units=list(units), edges=[tuple(e) for e in edges],
                      periods=list(periods), directed=directed, **extra)


def split_by_time(times: Sequence[int], seed: int, ratios: Sequence[float] = (0.7, 0.1, 0.2)) -> list[str]:
    """70/10/20 train/dev/test, stratified by time (each time unit split alone), seeded."""
    rng = np.random.default_rng(seed)
    times = np.asarray(times)
    out = np.empty(len(times), dtype=object)
    for t in np.unique(times):
        idx = np.flatnonzero(times == t)
        idx = idx[rng.permutation(len(idx))]
        n_train = int(round(ratios[0] * len(idx)))
        n_dev = int(round(ratios[1] * len(idx)))
        out[idx[:n_train]] = "train"
        out[idx[n_train:n_train + n_dev]] = "dev"
        out[idx[n_train + n_dev:]] = "test"
    return list(out)


# --------------------------------------------------------------------------- chitchat


def _chitchat_json(path: str | os.PathLike | None) -> tuple[Path, dict]:
    """(path, {conversation_id: conversation}) of a chitchat dataset.json (None: the package's)."""
    from ..data.ingest.chitchat import default_path

    path = Path(default_path() if path is None else path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "-", "no such file") from None
    except json.JSONDecodeError as error:
        raise InputError(path, f"line {error.lineno}", f"not JSON: {error.msg}") from None
    if not isinstance(data, dict):
        raise InputError(path, "-", "expected a JSON object {conversation_id: conversation}")
    return path, data


def _conversation_turns(path: Path, conv_id: str, conversation) -> list[list[dict]]:
    """A conversation's turns, each utterance checked for text, timestamp and sender."""
    turns = conversation.get("messages") if isinstance(conversation, dict) else None
    if not isinstance(turns, list):
        raise InputError(path, f"conversation {conv_id}", "missing field 'messages'")
    for t, turn in enumerate(turns):
        for u, utt in enumerate(turn):
            for key in ("text", "timestamp", "sender"):
                if not isinstance(utt, dict) or not isinstance(utt.get(key), str):
                    raise InputError(path, f"conversation {conv_id} turn {t} utterance {u}",
                                     f"missing field {key!r}")
    return turns


def _new_text(text: str, seen: set, min_words: int, counts: dict, what: str) -> bool:
    """Keep a text with at least `min_words` words not seen before (the paper's filter); count the others."""
    if len(text.split()) < min_words:
        counts[f"{what} under {min_words} words"] += 1
        return False
    if text in seen:
        counts[f"duplicate {what}"] += 1
        return False
    seen.add(text)
    return True


def chitchat_corpus(path: str | os.PathLike | None = None, cap: int | None = None,
                    largest_component: bool = False, min_words: int = 10, sample_seed: int = 0,
                    split_seed: int = 0, name: str = "chitchat") -> DcweCorpus:
    """The chitchat construction of ../shared/specs/dcwe.md §5 (see the module docstring)."""
    from .graph import connected_components

    path, data = _chitchat_json(path)
    docs, seen, pairs = [], set(), set()
    skipped = defaultdict(int)
    for conv_id in sorted(data):
        turns = _conversation_turns(path, conv_id, data[conv_id])
        senders = {utt["sender"] for turn in turns for utt in turn}
        if len(senders) != 2:
            skipped["conversations without exactly two senders"] += 1
            continue
        pairs.add(tuple(sorted(senders)))
        for t, turn in enumerate(turns):
            if not turn:
                continue
            text = " ".join(utt["text"] for utt in turn).lower()
            if not _new_text(text, seen, min_words, skipped, "turns"):
                continue
            docs.append({"doc_id": f"{conv_id}:{t}", "text": text, "sender": turn[0]["sender"],
                         "month": turn[0]["timestamp"][:7]})
    senders = sorted({d["sender"] for d in docs})
    index = {s: i for i, s in enumerate(senders)}
    edges = sorted((index[a], index[b]) for a, b in pairs if a in index and b in index)
    if largest_component:
        biggest = max(connected_components(len(senders), edges), key=len)
        keep = {senders[i] for i in biggest}
        skipped["documents outside the largest component"] = sum(d["sender"] not in keep for d in docs)
        docs = [d for d in docs if d["sender"] in keep]
    if cap is not None:
        groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for d in docs:
            groups[(d["sender"], d["month"])].append(d)
        rng, kept = random.Random(sample_seed), []
        for key in sorted(groups):
            group = groups[key]
            kept += group if len(group) <= cap else rng.sample(group, cap)
        skipped[f"documents over the cap of {cap} per (sender, month)"] = len(docs) - len(kept)
        docs = kept
    # Units: the senders left; edges among them.
    senders = sorted({d["sender"] for d in docs})
    index = {s: i for i, s in enumerate(senders)}
    edges = [(index[a], index[b]) for a, b in pairs if a in index and b in index]
    months = sorted({d["month"] for d in docs})
    month_index = {m: i for i, m in enumerate(months)}
    records = [{"doc_id": d["doc_id"], "text": d["text"], "unit": index[d["sender"]],
                "time": month_index[d["month"]]} for d in docs]
    for what, n in skipped.items():
        log.info("chitchat %s: left out %d %s", path, n, what)
    return make_corpus(name, records, senders, edges, months, directed=False, split_seed=split_seed,
                       path=path, sources=[str(path)], notes={"skipped": dict(skipped)})


def chitchat_rating_corpus(path: str | os.PathLike | None = None, rating: str = "upbeat", positive: int = 6,
                           negative: int = 4, cap: int | None = None, min_words: int = 10, sample_seed: int = 0,
                           split_seed: int = 0, name: str = "chitchat_rating") -> DcweCorpus:
    """The chitchat rating split (../shared/specs/dcwe.md §5), a sentiment corpus like the paper's
    Ciao and YELP (1-2 vs 4-5 stars, 3 dropped).

    A conversation between exactly two senders with rating `rating` >= `positive` is positive
    (label 1), <= `negative` negative (label 0); one in between or unrated is left out. A document
    is one sender's utterances in the conversation, in order, joined with spaces and lowercased,
    with at least `min_words` words, deduplicated on its text; it carries the conversation's
    label. Social unit = sender; an undirected edge joins two senders who share any two-sender
    conversation (rated or not); time = calendar month of the document's first utterance.
    `cap`: at most `cap` conversations per label, sampled with random.Random(sample_seed) over
    the sorted conversation ids. Split 70/10/20 by conversation (both documents of a
    conversation in one split), stratified by (month of its first utterance, label), seeded.
    """
    path, data = _chitchat_json(path)
    if not negative < positive:
        raise ValueError(f"negative ({negative}) must be below positive ({positive})")
    pairs, labelled = set(), {0: [], 1: []}
    counts: dict[str, int] = defaultdict(int)
    two_sender_words: list[int] = []
    for conv_id in sorted(data):
        turns = _conversation_turns(path, conv_id, data[conv_id])
        senders = sorted({utt["sender"] for turn in turns for utt in turn})
        if len(senders) != 2:
            counts["conversations without exactly two senders"] += 1
            continue
        pairs.add(tuple(senders))
        for sender in senders:  # the spec's 8,036 documents of 294 words on average
            two_sender_words.append(sum(len(u["text"].split()) for turn in turns for u in turn if u["sender"] == sender))
        ratings = data[conv_id].get("ratings")
        value = ratings.get(rating) if isinstance(ratings, dict) else None
        if value is None:
            counts["unrated two-sender conversations"] += 1
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(path, f"conversation {conv_id}", f"rating {rating!r} is {value!r}, not a number")
        if negative < value < positive:
            counts[f"two-sender conversations rated between {negative} and {positive}"] += 1
            continue
        labelled[int(value >= positive)].append(conv_id)
    counts["positive conversations"], counts["negative conversations"] = len(labelled[1]), len(labelled[0])
    if cap is not None:
        rng = random.Random(sample_seed)
        labelled = {label: sorted(ids if len(ids) <= cap else rng.sample(ids, cap)) for label, ids in labelled.items()}
    label_of = {conv_id: label for label, ids in labelled.items() for conv_id in ids}
    docs, seen = [], set()
    for conv_id in sorted(label_of):
        turns = data[conv_id]["messages"]
        start = min(u["timestamp"] for turn in turns for u in turn)[:7]
        for sender in sorted({u["sender"] for turn in turns for u in turn}):
            mine = [u for turn in turns for u in turn if u["sender"] == sender]
            text = " ".join(u["text"] for u in mine).lower()
            if not _new_text(text, seen, min_words, counts, "documents"):
                continue
            docs.append({"doc_id": f"{conv_id}:{sender}", "conversation": conv_id, "start": start, "text": text,
                         "sender": sender, "month": mine[0]["timestamp"][:7], "label": label_of[conv_id]})
    if not docs:
        raise InputError(path, "-", f"no labelled document (rating {rating!r} >= {positive} or <= {negative})")
    # split by conversation, stratified by (start month, label)
    conversations = sorted({(d["conversation"], d["start"], d["label"]) for d in docs})
    strata = sorted({(start, label) for _, start, label in conversations})
    key = {s: i for i, s in enumerate(strata)}
    split_of = dict(zip([c for c, _, _ in conversations],
                        split_by_time([key[(start, label)] for _, start, label in conversations], split_seed)))
    senders = sorted({d["sender"] for d in docs})
    index = {s: i for i, s in enumerate(senders)}
    edges = [(index[a], index[b]) for a, b in pairs if a in index and b in index]
    months = sorted({d["month"] for d in docs})
    month_index = {m: i for i, m in enumerate(months)}
    records = [{"doc_id": d["doc_id"], "text": d["text"], "unit": index[d["sender"]], "time": month_index[d["month"]],
                "split": split_of[d["conversation"]], "label": d["label"]} for d in docs]
    for what, n in counts.items():
        log.info("chitchat rating %s: %d %s", path, n, what)
    notes = {"counts": dict(counts), "two_sender_documents": len(two_sender_words),
             "two_sender_mean_words": float(np.mean(two_sender_words)) if two_sender_words else None,
             "rating": rating, "positive": positive, "negative": negative}
    return make_corpus(name, records, senders, edges, months, directed=False, split_seed=None, path=path,
                       sources=[str(path)], notes=notes)


# --------------------------------------------------------------------------- generic CSV


def _label(value, path: Path, line: int) -> int | None:
    """A sentiment label: 0 or 1 (also written 0.0/1.0); empty = none."""
    if value is None or str(value).strip() == "":
        return None
    try:
        number = float(value)
    except ValueError:
        number = None
    if number not in (0.0, 1.0):
        raise InputError(path, f"line {line}", f"label {value!r} is not 0 or 1")
    return int(number)


def rating_label(rating, path: Path, line: int) -> int | None:
    """The authors' sentiment label from a 1-5 star rating (preprocess_data.py): 1-2 -> 0, 4-5 -> 1;
    3 -> None (the authors drop those reviews before writing their files)."""
    try:
        stars = float(rating)
    except (TypeError, ValueError):
        raise InputError(path, f"line {line}", f"rating {rating!r} is not a number") from None
    if not 1 <= stars <= 5:
        raise InputError(path, f"line {line}", f"rating {rating!r} is outside 1-5")
    return 0 if stars <= 2 else 1 if stars >= 4 else None


def _read_csv(path: Path, required: Sequence[str]) -> list[dict]:
    if not path.is_file():
        raise InputError(path, "-", "no such file")
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(path, "header", f"missing column {missing[0]!r} (columns: {header})")
        rows = []
        for line, row in enumerate(reader, 2):
            for c in required:
                if row.get(c) is None or row[c] == "":
                    raise InputError(path, f"line {line}", f"empty value in column {c!r}")
            row["_line"] = line
            rows.append(row)
    return rows


def _time_labels(values: list[str], periods: Sequence[str] | None, path: Path, lines: list[int]):
    """Time labels -> indices. Integers are ordinals 0..K-1 (a gap is an empty time unit)."""
    if periods is not None:
        periods = [str(p) for p in periods]
        where = {p: i for i, p in enumerate(periods)}
        for v, line in zip(values, lines):
            if v not in where:
                raise InputError(path, f"line {line}", f"time {v!r} is not one of the periods {periods}")
        return [where[v] for v in values], periods
    if all(v.lstrip("-").isdigit() for v in values):
        ints = [int(v) for v in values]
        for v, line in zip(ints, lines):
            if v < 0:
                raise InputError(path, f"line {line}", f"time {v} is negative (ordinals start at 0)")
        return ints, [str(t) for t in range(max(ints) + 1)]
    labels = sorted(set(values))
    where = {p: i for i, p in enumerate(labels)}
    return [where[v] for v in values], labels


def read_csv_corpus(docs: str | os.PathLike, edges: str | os.PathLike | None = None,
                    periods: Sequence[str] | None = None, directed: bool = False,
                    split_seed: int = 0, name: str = "csv") -> DcweCorpus:
    """Documents CSV (text, unit, time[, doc_id, split, label]) and edges CSV (source, target)."""
    docs_path = Path(docs)
    rows = _read_csv(docs_path, ("text", "unit", "time"))
    if not rows:
        raise InputError(docs_path, "-", "no documents")
    times, periods = _time_labels([r["time"] for r in rows], periods, docs_path, [r["_line"] for r in rows])
    _check_times(times, periods, docs_path, lambda t: f"time {periods[t]}")
    units = sorted({r["unit"] for r in rows})
    index = {u: i for i, u in enumerate(units)}
    pairs = []
    if edges is not None:
        edges_path = Path(edges)
        for row in _read_csv(edges_path, ("source", "target")):
            for end in ("source", "target"):
                if row[end] not in index:
                    raise InputError(edges_path, f"line {row['_line']}",
                                     f"unknown unit {row[end]!r} in column {end!r}: no document of {docs_path} "
                                     "is written by it")
            pairs.append((index[row["source"]], index[row["target"]]))
    records = []
    for r, t in zip(rows, times):
        split = r.get("split") or None
        if split is not None and split not in SPLITS:
            raise InputError(docs_path, f"line {r['_line']}", f"split {split!r} is not one of {SPLITS}")
        records.append({"doc_id": r.get("doc_id") or f"line{r['_line']}", "text": r["text"].lower(),
                        "unit": index[r["unit"]], "time": t, "split": split,
                        "label": _label(r.get("label"), docs_path, r["_line"])})
    sources = [str(docs_path)] + ([str(edges)] if edges is not None else [])
    return make_corpus(name, records, units, pairs, periods, directed, split_seed, docs_path, sources=sources)


# --------------------------------------------------------------------------- the authors' layout


def _load_pickle(path: Path, allow_pickle: bool = False):
    if not path.is_file():
        raise InputError(path, "-", "no such file")
    if not allow_pickle:
        raise InputError(path, "-", "a Python pickle, which can run any code it holds when it is read; it is "
                         "read only with the dataset setting allow_pickle: true (dcwe.datasets.<name>."
                         "allow_pickle; read_release(..., allow_pickle=True)): set it only for a copy of "
                         "the authors' files that you trust")
    try:
        with open(path, "rb") as handle:
            return pickle.load(handle)  # noqa: S301 - the user's own copy of the authors' data
    except Exception as error:  # a broken pickle can raise almost anything
        raise InputError(path, "-", f"cannot unpickle: {error}") from None


def read_release(directory: str | os.PathLike, name: str, time_unit: str = "year", directed: bool = False,
                 edge_threshold: float = 0.01, allow_pickle: bool = False) -> DcweCorpus:
    """The authors' files: {name}_{train,dev,test}.csv, {name}_edges.p, {name}_users.p.

    time_unit: 'year' (ArXiv, Ciao, YELP) or 'month' (Reddit; (year, month), so Jan 2020 follows
    Dec 2019: the authors' `month - 9` wraps, spec §3.2). Weighted edges (u, v, w) keep w >
    edge_threshold (the authors' 0.01 for ArXiv and Reddit). The sentiment label is the `label`
    column (0/1) where a row has one, else derived from `rating` as the authors do (1-2 -> 0,
    4-5 -> 1; 3 has none).

    allow_pickle: the users and edges files are Python pickles, and reading a pickle runs any
    code the file holds (with your permissions). Without allow_pickle=True they are refused
    (InputError naming the file and the option): set it only for a copy of the authors' files
    that you trust.
    """
    directory = Path(directory)
    if time_unit not in ("year", "month"):
        raise ValueError(f"time_unit must be year or month, got {time_unit!r}")
    users = _load_pickle(directory / f"{name}_users.p", allow_pickle)
    users = [str(u) for u in users]
    index = {u: i for i, u in enumerate(users)}
    rows = []
    for split in SPLITS:
        path = directory / f"{name}_{split}.csv"
        for row in _read_csv(path, ("user", "year", "month", "text")):
            if str(row["user"]) not in index:
                raise InputError(path, f"line {row['_line']}", f"user {row['user']!r} is not in {name}_users.p")
            key = (int(row["year"]),) if time_unit == "year" else (int(row["year"]), int(row["month"]))
            rows.append((path, split, row, key))
    keys = sorted({k for *_, k in rows})
    if time_unit == "year":
        keys = [(y,) for y in range(keys[0][0], keys[-1][0] + 1)]
    else:
        (y0, m0), (y1, m1) = keys[0], keys[-1]
        keys = [(y, m) for y in range(y0, y1 + 1) for m in range(1, 13) if (y0, m0) <= (y, m) <= (y1, m1)]
    where = {k: i for i, k in enumerate(keys)}
    periods = ["-".join(f"{v:02d}" for v in k) for k in keys]
    records = [{"doc_id": f"{split}:{row['_line']}", "text": row["text"].lower(), "unit": index[str(row["user"])],
                "time": where[key], "split": split,
                "label": _label(row["label"], path, row["_line"]) if row.get("label") not in (None, "")
                else rating_label(row["rating"], path, row["_line"]) if row.get("rating") not in (None, "") else None}
               for path, split, row, key in rows]
    edges_path = directory / f"{name}_edges.p"
    pairs = []
    for i, edge in enumerate(sorted(_load_pickle(edges_path, allow_pickle), key=str)):
        if len(edge) == 3 and float(edge[2]) <= edge_threshold:
            continue
        for end in edge[:2]:
            if str(end) not in index:
                raise InputError(edges_path, f"edge {i} {tuple(edge[:2])}", f"unknown user {end!r}: not in {name}_users.p")
        pairs.append((index[str(edge[0])], index[str(edge[1])]))
    return make_corpus(name, records, users, pairs, periods, directed, None, directory / f"{name}_train.csv",
                       sources=[str(directory)])


def read_vectors(path: str | os.PathLike, units: Sequence[str]) -> np.ndarray:
    """The units' precomputed node vectors, such as the authors' `{name}_vectors_50.txt` (gensim's
    word2vec text format: a header "count dimension", then one line per node: its name and its
    values, separated by spaces): (len(units), dim) float32 rows in the order of `units` (names
    compared as strings: the authors' Ciao file names users by integers). Nodes of the file that
    are not units are ignored (counted in the log); a unit without a vector is an error."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "-", "no such file")
    vectors: dict[str, np.ndarray] = {}
    first_line: dict[str, int] = {}
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().split()
        if len(header) != 2 or not all(h.isdigit() for h in header):
            raise InputError(path, "line 1", f"header {' '.join(header)!r} is not 'count dimension' "
                             "(gensim's word2vec text format)")
        count, dim = int(header[0]), int(header[1])
        for number, line in enumerate(handle, 2):
            fields = line.split()
            if not fields:
                continue  # the authors skip blank lines
            name, values = fields[0], fields[1:]
            if len(values) != dim:
                raise InputError(path, f"line {number}", f"node {name!r} has {len(values)} values, the header says {dim}")
            if name in first_line:
                raise InputError(path, f"line {number}", f"node {name!r} again (first on line {first_line[name]})")
            try:
                vectors[name] = np.array([float(v) for v in values], dtype=np.float32)
            except ValueError:
                raise InputError(path, f"line {number}", f"node {name!r}: a value is not a number") from None
            first_line[name] = number
    if len(vectors) != count:
        raise InputError(path, "line 1", f"header says {count} vectors, the file has {len(vectors)}")
    missing = [u for u in units if str(u) not in vectors]
    if missing:
        raise InputError(path, f"unit {missing[0]!r}", f"no vector for this unit ({len(missing)} of {len(units)} "
                         "units have none)")
    unused = len(vectors) - len({str(u) for u in units})
    if unused:
        log.info("%s: %d vectors of nodes that are not units of the corpus left unused", path, unused)
    return np.stack([vectors[str(u)] for u in units]) if units else np.zeros((0, dim), dtype=np.float32)


# --------------------------------------------------------------------------- SemEval (time only)


def semantic_change_corpus(spec: dict, name: str, split_seed: int = 0) -> DcweCorpus:
    """A semantic_change.data.load_dataset corpus as a time-only DCWE corpus."""
    from ..semantic_change.data import load_dataset

    corpus = load_dataset(spec, name)
    records = [{"doc_id": f"{p}:{i}", "text": " ".join(words).lower(), "unit": 0, "time": p}
               for p, period in enumerate(corpus.sentences) for i, words in enumerate(period)]
    return make_corpus(name, records, ["all"], [], corpus.periods, split_seed=split_seed,
                       path=spec.get("path") or spec.get("release") or "-",
                       targets=dict(corpus.words), graded=corpus.graded, binary=corpus.binary,
                       sources=corpus.sources)


def load_corpus(spec: dict, name: str) -> DcweCorpus:
    """A corpus from a config entry (dcwe.datasets.<name>; see config/config.yaml)."""
    spec = dict(spec)
    fmt = spec.pop("format", None)
    split_seed = spec.pop("split_seed", 0)
    if fmt == "chitchat":
        return chitchat_corpus(spec.get("path"), spec.get("cap"), spec.get("largest_component", False),
                               spec.get("min_words", 10), spec.get("sample_seed", 0), split_seed, name)
    if fmt == "chitchat_rating":
        keys = ("path", "rating", "positive", "negative", "cap", "min_words", "sample_seed")
        unknown = set(spec) - set(keys)
        if unknown:
            raise ValueError(f"dataset {name}: unknown chitchat_rating settings {sorted(unknown)}")
        return chitchat_rating_corpus(**spec, split_seed=split_seed, name=name)
    if fmt == "csv":
        return read_csv_corpus(spec["docs"], spec.get("edges"), spec.get("periods"), spec.get("directed", False),
                               split_seed, name)
    if fmt == "release":
        return read_release(spec["path"], spec.get("name", name), spec.get("time_unit", "year"),
                            spec.get("directed", False), spec.get("edge_threshold", 0.01),
                            allow_pickle=spec.get("allow_pickle", False) is True)
    if fmt == "semantic_change":
        return semantic_change_corpus(spec["data"], name, split_seed)
    raise ValueError(f"dataset {name}: unknown format {fmt!r} (chitchat, chitchat_rating, csv, release, "
                     "semantic_change)")


# --------------------------------------------------------------------------- saving


def save_corpus(corpus: DcweCorpus, out_dir: str | os.PathLike, stats: dict | None = None) -> None:
    """out_dir/docs.parquet and out_dir/corpus.json (units, edges, periods, targets, stats)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"name": corpus.name, "units": corpus.units, "edges": [list(e) for e in corpus.edges],
            "periods": corpus.periods, "directed": corpus.directed, "targets": corpus.targets,
            "graded": corpus.graded, "binary": corpus.binary, "sources": corpus.sources,
            "notes": corpus.notes, "stats": stats or {}}
    write_with(out / "docs.parquet", lambda tmp: corpus.docs.write_parquet(tmp))
    write_text_atomic(out / "corpus.json", json.dumps(meta, indent=1) + "\n")


def read_corpus(out_dir: str | os.PathLike) -> tuple[DcweCorpus, dict]:
    out = Path(out_dir)
    meta = read_json(out / "corpus.json")
    docs = read_parquet(out / "docs.parquet")
    corpus = DcweCorpus(name=meta["name"], docs=docs, units=meta["units"],
                        edges=[tuple(e) for e in meta["edges"]], periods=meta["periods"],
                        directed=meta["directed"], targets=meta["targets"], graded=meta["graded"],
                        binary=meta["binary"], sources=meta["sources"], notes=meta["notes"])
    return corpus, meta["stats"]
