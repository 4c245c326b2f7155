"""Embedded default data: a two-period corpus of real sentences with a known, graded change.

The sentences are real utterances of the PyPI package `chitchat_dataset` (lower-cased, tokens
`[a-z0-9']+`, at least `min_words` words, exact duplicates removed). Each target word w gets a
donor word d (a frequent word of another meaning). Period 1 holds `n_per_period` natural
sentences of w. Period 2 holds `n_per_period` sentences of w of which a fraction p_w are donor
sentences with d replaced by w (w "takes over" d's contexts) and the rest are further natural
sentences of w. The graded truth of w is p_w (the share of its period-2 uses whose context
changed), binary truth is p_w > 0. Target and donor sentences contain no other target or donor;
filler sentences (no target, no donor) make up the rest of each period for MLM post-pretraining.

The levels p are assigned to the targets by a seeded permutation, so which words change depends
on the seed (no accidental agreement with the words' natural variability). Deterministic for a
seed. Written in the SemEval-2020 release layout and read back by `data.read_release`.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

TOKEN = re.compile(r"[a-z0-9']+")

# (target, donor): single WordPiece words, each with >= 500 chitchat sentences of >= 6 words.
DEFAULT_PAIRS: tuple[tuple[str, str], ...] = (
    ("music", "computer"), ("movie", "school"), ("food", "family"), ("book", "money"),
    ("car", "class"), ("game", "college"), ("friend", "summer"), ("job", "country"),
    ("phone", "mom"), ("house", "kids"),
)
DEFAULT_LEVELS: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0)
PERIODS = ("t1", "t2")


@dataclass
class SyntheticCorpus:
    periods: list[str]
    sentences: list[list[str]]  # per period, lines of space-separated words
    graded: dict[str, float]
    donors: dict[str, str]
    counts: dict[str, dict]


def chitchat_sentences(min_words: int = 6) -> list[list[str]]:
    """Normalised utterances of chitchat_dataset, corpus order, duplicates removed."""
    import chitchat_dataset

    with open(chitchat_dataset._PATH, encoding="utf-8") as handle:
        data = json.load(handle)
    seen, sentences = set(), []
    for conv_id in sorted(data):
        for turn in data[conv_id]["messages"]:
            for utterance in turn:
                words = TOKEN.findall(utterance["text"].lower())
                key = " ".join(words)
                if len(words) >= min_words and key not in seen:
                    seen.add(key)
                    sentences.append(words)
    return sentences


def build_synthetic(
    seed: int = 0,
    n_per_period: int = 100,
    n_filler: int = 1500,
    min_words: int = 6,
    pairs: Sequence[Sequence[str]] = DEFAULT_PAIRS,
    levels: Sequence[float] = DEFAULT_LEVELS,
    sentences: list[list[str]] | None = None,
) -> SyntheticCorpus:
    """The corpus for a seed (`sentences`: a source other than chitchat, for tests)."""
    pairs = [tuple(p) for p in pairs]
    if len(levels) != len(pairs):
        raise ValueError(f"{len(levels)} levels for {len(pairs)} (target, donor) pairs")
    if any(not 0.0 <= p <= 1.0 for p in levels):
        raise ValueError(f"levels must be in [0, 1], got {list(levels)}")
    words = [w for pair in pairs for w in pair]
    if len(set(words)) != len(words):
        raise ValueError(f"targets and donors must be distinct words, got {pairs}")
    special = set(words)
    sentences = chitchat_sentences(min_words) if sentences is None else sentences
    rng = np.random.default_rng(seed)
    assigned = [float(levels[i]) for i in rng.permutation(len(levels))]

    by_word: dict[str, list[int]] = {w: [] for w in words}
    filler = []
    for i, s in enumerate(sentences):
        present = special.intersection(s)
        if len(present) == 1:
            by_word[present.pop()].append(i)
        elif not present:
            filler.append(i)

    period1, period2, graded, donors, counts = [], [], {}, {}, {}
    for (target, donor), p in zip(pairs, assigned):
        natural, donor_pool = by_word[target], by_word[donor]
        k = int(round(p * n_per_period))
        need = 2 * n_per_period - k
        if len(natural) < need or len(donor_pool) < k:
            raise ValueError(f"target {target!r}: {len(natural)} natural sentences (need {need}) and "
                             f"{len(donor_pool)} of donor {donor!r} (need {k}); lower n_per_period")
        picked = rng.choice(len(natural), size=need, replace=False)
        own = [sentences[natural[j]] for j in picked]
        moved = [[target if w == donor else w for w in sentences[donor_pool[j]]]
                 for j in rng.choice(len(donor_pool), size=k, replace=False)]
        period1 += own[:n_per_period]
        period2 += own[n_per_period:] + moved
        graded[target], donors[target] = p, donor
        counts[target] = {"period1": n_per_period, "period2_natural": n_per_period - k, "period2_moved": k}
    if len(filler) < 2 * n_filler:
        raise ValueError(f"{len(filler)} filler sentences, need {2 * n_filler}")
    chosen = rng.choice(len(filler), size=2 * n_filler, replace=False)
    period1 += [sentences[filler[j]] for j in chosen[:n_filler]]
    period2 += [sentences[filler[j]] for j in chosen[n_filler:]]
    lines = []
    for period in (period1, period2):
        order = rng.permutation(len(period))
        lines.append([" ".join(period[j]) for j in order])
    return SyntheticCorpus(list(PERIODS), lines, graded, donors, counts)


def _write_gz(path: Path, lines: Sequence[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: byte-identical output for a seed.
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
        handle.write("".join(f"{line}\n" for line in lines).encode("utf-8"))


def write_release(corpus: SyntheticCorpus, out_dir: str | os.PathLike) -> Path:
    """SemEval-2020 release layout: corpus{1,2}/lemma/chitchat{1,2}.txt.gz, targets, truth."""
    out = Path(out_dir)
    for p, lines in enumerate(corpus.sentences, 1):
        _write_gz(out / f"corpus{p}" / "lemma" / f"chitchat{p}.txt.gz", lines)
    targets = list(corpus.graded)
    (out / "truth").mkdir(parents=True, exist_ok=True)
    (out / "targets.txt").write_text("".join(f"{t}\n" for t in targets))
    (out / "truth" / "graded.txt").write_text("".join(f"{t}\t{corpus.graded[t]}\n" for t in targets))
    (out / "truth" / "binary.txt").write_text(
        "".join(f"{t}\t{int(corpus.graded[t] > 0)}\n" for t in targets))
    (out / "periods.txt").write_text("".join(f"{p}\n" for p in corpus.periods))
    (out / "SOURCE.md").write_text(
        "# Synthetic graded semantic change (tempoformer.semantic_change.synthetic)\n\n"
        "Real utterances of the PyPI package chitchat_dataset (MIT). Per target: donor word and "
        "sentence counts\n\n```json\n"
        + json.dumps({t: {"graded": corpus.graded[t], "donor": corpus.donors[t], **corpus.counts[t]}
                      for t in targets}, indent=1)
        + "\n```\n")
    return out


def read_periods(release: str | os.PathLike) -> list[str] | None:
    path = Path(release) / "periods.txt"
    return path.read_text().split() if path.is_file() else None
