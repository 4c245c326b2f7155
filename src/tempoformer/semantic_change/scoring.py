"""Semantic change scores per target (Rosin & Radinsky 2022, Algorithm 1) and their evaluation.

For a target w and each time point t: sample n sentences of C(t, w) (seeded per target, so a
target's sample does not depend on the other targets), run each through the model with its time
point t, take the hidden states of w's word pieces, average the last h layers, mean-pool over
the word pieces of each occurrence (located exactly, see encoding.py) and over the occurrences
in the sentence; the centroid of the n vectors is x_t. The score is the cosine DISTANCE
1 − cos(x_t1, x_t2) (with more than two periods: first against last). Pearson's r and Spearman's
ρ against the graded truth are computed over the scored targets; targets that cannot be scored
(no sentence in a period, or no word piece inside the length limit) are counted.

Each distinct (sentence, window, period) is encoded once and shared by every target it was
sampled for: with the per-sequence time norm an embedding does not depend on its batch.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import polars as pl
import torch

from ..settings import check_ranges
from .data import DiachronicCorpus
from .encoding import WordPieceEncoder
from .model import TemporalBert
from .pretrain import collate

log = logging.getLogger(__name__)


@dataclass
class ScoreSettings:
    # ranges: tempoformer/settings.py (checked at start-up, config_checks.py, and by from_dict)
    n_sentences: int = field(default=100, metadata={"range": ">= 1"})
    # h: average of the last h layers ("all" = every layer)
    last_layers: int | str = field(default="all", metadata={"range": ">= 1"})
    batch_size: int = field(default=32, metadata={"range": ">= 1"})
    max_length: int = field(default=128, metadata={"range": ">= 3"})
    sample_seed: int | None = field(default=None, metadata={"range": ">= 0"})   # None: the run's seed

    @classmethod
    def from_dict(cls, values: dict | None) -> "ScoreSettings":
        values = dict(values or {})
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown scoring settings {sorted(unknown)}")
        check_ranges(cls, values, "scoring settings")
        return cls(**values)


def cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denominator = np.linalg.norm(a) * np.linalg.norm(b)
    if denominator == 0:
        return float("nan")
    return float(1.0 - a @ b / denominator)


def _stable_seed(seed: int, text: str) -> list[int]:
    return [seed, int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")]


def sample_occurrences(corpus: DiachronicCorpus, target: str, n: int, seed: int):
    """Per period, up to n (sentence index, positions) of the target, without replacement."""
    rng = np.random.default_rng(_stable_seed(seed, target))
    sampled = []
    for per in corpus.occurrences[target]:
        if len(per) <= n:
            sampled.append(list(per))
        else:
            picks = np.sort(rng.choice(len(per), size=n, replace=False))
            sampled.append([per[j] for j in picks])
    return sampled


def pool_layers(hidden: list[torch.Tensor], last_layers: int | str) -> torch.Tensor:
    """Mean of the last h layers' hidden states (embedding output excluded unless h > L)."""
    layers = hidden[1:]
    h = len(layers) if last_layers == "all" else int(last_layers)
    if not 1 <= h <= len(hidden):
        raise ValueError(f"last_layers must be 1..{len(hidden)} or 'all', got {last_layers!r}")
    chosen = hidden[-h:]
    return torch.stack(chosen).mean(0)


def pool_pieces(states: torch.Tensor, spans: list[tuple[int, int]]) -> torch.Tensor:
    """Mean over the pieces of each span, then over the spans. states: (n, D) of one sequence."""
    return torch.stack([states[a:b].mean(0) for a, b in spans]).mean(0)


@torch.no_grad()
def embed_requests(model: TemporalBert, encoder: WordPieceEncoder, corpus: DiachronicCorpus,
                   requests: dict, settings: ScoreSettings, device: str = "cpu") -> dict:
    """requests: {(period, sentence, focus word): [word positions]} -> vector of the target there.

    Sequences are encoded once per (period, sentence, window) and batched by length.
    """
    encoder.max_length = settings.max_length
    windows: dict[tuple, object] = {}
    plan = []  # (request key, window key, spans)
    for key, positions in requests.items():
        period, sentence, focus = key
        encoded = encoder.encode(corpus.sentences[period][sentence], period=period, focus=focus)
        wkey = (period, sentence, encoded.first_word, encoded.last_word)
        windows.setdefault(wkey, encoded)
        spans = [encoded.spans[j] for j in positions if j in encoded.spans]
        plan.append((key, wkey, spans))
    order = sorted(windows, key=lambda w: len(windows[w].ids))
    states: dict[tuple, torch.Tensor] = {}
    model.eval()
    for start in range(0, len(order), settings.batch_size):
        keys = order[start: start + settings.batch_size]
        ids, mask = collate([windows[k] for k in keys], encoder.pad_id)
        periods = torch.tensor([k[0] for k in keys])
        pooled = pool_layers(model(ids.to(device), mask.to(device), periods.to(device)), settings.last_layers)
        for row, k in enumerate(keys):
            states[k] = pooled[row].float().cpu()
    vectors = {}
    for key, wkey, spans in plan:
        if spans:
            vectors[key] = pool_pieces(states[wkey], spans).numpy()
    return vectors


def change_scores(model: TemporalBert, encoder: WordPieceEncoder, corpus: DiachronicCorpus,
                  settings: ScoreSettings, device: str = "cpu") -> pl.DataFrame:
    """One row per target: counts, centroid cosine distance (null when unscorable) and truth."""
    started = time.perf_counter()
    seed = 0 if settings.sample_seed is None else settings.sample_seed
    samples = {t: sample_occurrences(corpus, t, settings.n_sentences, seed) for t in corpus.targets}
    requests: dict[tuple, list[int]] = {}
    for target, per_period in samples.items():
        for p, occurrences in enumerate(per_period):
            for sentence, positions in occurrences:
                # focus: the first occurrence; a long sentence is cut around it.
                requests.setdefault((p, sentence, positions[0]), list(positions))
    vectors = embed_requests(model, encoder, corpus, requests, settings, device)
    rows = []
    for target in corpus.targets:
        centroids, used, problem = [], [], None
        for p, occurrences in enumerate(samples[target]):
            found = [vectors[(p, s, pos[0])] for s, pos in occurrences if (p, s, pos[0]) in vectors]
            used.append(len(found))
            if not occurrences:
                problem = problem or f"no sentence in period {corpus.periods[p]}"
            elif not found:
                problem = problem or f"no word piece of it within max_length in period {corpus.periods[p]}"
            centroids.append(np.mean(found, axis=0) if found else None)
        score = None
        if problem is None:
            score = cosine_distance(centroids[0], centroids[-1])
        rows.append({
            "target": target, "word": corpus.words[target],
            **{f"n_{corpus.periods[p]}": used[p] for p in range(len(used))},
            "score": score, "problem": problem,
            "graded": None if corpus.graded is None else corpus.graded.get(target),
            "binary": None if corpus.binary is None else corpus.binary.get(target),
        })
    log.info("scored %d targets (%d sequences) in %.1f s", len(rows), len(vectors), time.perf_counter() - started)
    return pl.DataFrame(rows, infer_schema_length=None)


def correlations(scores: pl.DataFrame) -> dict:
    """Pearson r and Spearman ρ of score vs graded truth over the scored targets."""
    from scipy import stats

    ok = scores.filter(pl.col("score").is_not_null() & pl.col("graded").is_not_null())
    result = {"n_targets": scores.height, "n_scored": ok.height, "n_unscored": scores.height - ok.height,
              "pearson": None, "pearson_p": None, "spearman": None, "spearman_p": None}
    if ok.height >= 3:
        x, y = ok["score"].to_numpy(), ok["graded"].to_numpy()
        if np.ptp(x) > 0 and np.ptp(y) > 0:
            r = stats.pearsonr(x, y)
            rho = stats.spearmanr(x, y)
            result.update(pearson=float(r.statistic), pearson_p=float(r.pvalue),
                          spearman=float(rho.statistic), spearman_p=float(rho.pvalue))
    for key in ("pearson", "spearman"):
        if result[key] is not None and math.isnan(result[key]):
            result[key] = None
    return result


def settings_dict(settings: ScoreSettings) -> dict:
    return asdict(settings)
