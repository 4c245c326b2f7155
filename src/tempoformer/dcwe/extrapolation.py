"""Held-out-month extrapolation (beyond the paper; spec §6.8 d).

The last time unit's documents are held out of everything (the warm-up, training, dev
selection and the filtered vocabulary): the model is built for the K - 1 times it sees and
trained on them. Its held-out documents are then scored with the last trained time component
(j = K - 2): under the random-walk prior, o_{K-1} = o_{K-2} + noise, so o_{K-2} is the prior's
forecast of the next time's offsets. Models without time components (CWE, the static control,
TA) read the held-out documents as any other. All documents of the held-out time are scored
(none was seen), beside the in-time test documents of the K - 1 times.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from .data import DcweCorpus


def split_last_time(corpus: DcweCorpus) -> tuple[DcweCorpus, pl.DataFrame]:
    """(the corpus without its last time unit, the last time's documents with their time index
    set to the last kept one)."""
    k = len(corpus.periods)
    if k < 2:
        raise ValueError(f"corpus {corpus.name}: the extrapolation test needs at least 2 time units, it has {k}")
    last = k - 1
    kept = corpus.docs.filter(pl.col("time") < last)
    held = corpus.docs.filter(pl.col("time") == last).with_columns(pl.lit(last - 1, dtype=pl.Int64).alias("time"))
    for split in ("train", "dev"):
        if kept.filter(pl.col("split") == split).height == 0:
            raise ValueError(f"corpus {corpus.name}: no {split} document before the held-out time {corpus.periods[last]}")
    if held.height == 0:
        raise ValueError(f"corpus {corpus.name}: no document at the held-out time {corpus.periods[last]}")
    notes = {**corpus.notes, "held_out_time": corpus.periods[last]}
    return dataclasses.replace(corpus, docs=kept, periods=corpus.periods[:-1], notes=notes), held
