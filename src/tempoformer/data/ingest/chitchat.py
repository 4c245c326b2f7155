"""Chitchat: the Chit Chat Challenge corpus shipped in the PyPI package `chitchat_dataset`.

The embedded default corpus. dataset.json is {conv_id: {"messages": [[utterance, ...] per turn],
"start", "prompt", "ratings"}}, each utterance {"text", "timestamp", "sender"}.

The corpus has no change labels, so they are derived from its structure: a timeline is one
sender's utterances across all conversations in time order, and an utterance is "New" when it is
the sender's first (kept) utterance in that conversation (the timeline moves to a new
conversation), else "Cont". Timestamps outside [earliest_timestamp, latest_timestamp] are
refused (see the package docstring).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Sequence

import polars as pl

from ..posts import InputError, posts_from_records, validate_posts
from ._common import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TimeRange, load_json, parse_datetime, require_file,
)

log = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("New", "Cont")


def default_path() -> Path:
    import chitchat_dataset

    return Path(chitchat_dataset._PATH)


def read(
    path: str | os.PathLike | None = None,
    dataset: str = "chitchat",
    max_timelines: int | None = None,
    max_posts_per_timeline: int | None = None,
    min_posts_per_timeline: int = 1,
    earliest_timestamp: str | datetime | None = EARLIEST_TIMESTAMP,
    latest_timestamp: str | datetime | None = LATEST_TIMESTAMP,
    labels: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Read dataset.json (None: the package's own file) into the canonical post table.

    Senders with fewer than `min_posts_per_timeline` kept utterances are left out; of the rest,
    the first `max_timelines` in sorted sender-id order are kept, each cut to its first
    `max_posts_per_timeline` posts. Utterances with empty text are skipped (counted and logged).
    `labels`: the dataset's class names; a derived label outside them is an error.
    """
    path = require_file(default_path() if path is None else path)
    span = TimeRange(earliest_timestamp, latest_timestamp)
    for name, value in (("max_timelines", max_timelines),
                        ("max_posts_per_timeline", max_posts_per_timeline)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1 or None, got {value}")
    data = load_json(path)
    if not isinstance(data, dict):
        raise InputError(path, "-", "expected a JSON object {conversation_id: conversation}")

    by_sender: dict[str, list[tuple]] = defaultdict(list)
    empty = 0
    for conv_id, conv in data.items():
        turns = conv.get("messages") if isinstance(conv, dict) else None
        if not isinstance(turns, list):
            raise InputError(path, f"conversation {conv_id}", "missing field 'messages'")
        if not turns or not any(turns):
            raise InputError(path, f"conversation {conv_id}", "empty timeline: no messages")
        for t, turn in enumerate(turns):
            if not isinstance(turn, list):
                raise InputError(path, f"conversation {conv_id} turn {t}",
                                 "expected a list of utterances")
            for u, utt in enumerate(turn):
                record = f"conversation {conv_id} turn {t} utterance {u}"
                if not isinstance(utt, dict):
                    raise InputError(path, record, "expected an object")
                for field in ("text", "timestamp", "sender"):
                    if not isinstance(utt.get(field), str):
                        raise InputError(path, record, f"missing field {field!r}")
                if not utt["text"].strip():
                    empty += 1
                    continue
                stamp = parse_datetime(utt["timestamp"], None, path, record)
                span.check(stamp, path, record)
                # Ties in time are broken by position in the corpus, deterministically.
                by_sender[utt["sender"]].append((stamp, conv_id, t, u, utt["text"]))
    span.raise_refused()
    if empty:
        log.info("chitchat %s: skipped %d utterance(s) with empty text", path, empty)

    senders = sorted(s for s, posts in by_sender.items() if len(posts) >= min_posts_per_timeline)
    if len(senders) < len(by_sender):
        log.info("chitchat %s: left out %d sender(s) with fewer than %d post(s)",
                 path, len(by_sender) - len(senders), min_posts_per_timeline)
    if max_timelines is not None and len(senders) > max_timelines:
        log.info("chitchat %s: keeping the first %d of %d senders (max_timelines)",
                 path, max_timelines, len(senders))
        senders = senders[:max_timelines]
    if not senders:
        raise InputError(path, "-", f"no sender has {min_posts_per_timeline} or more posts")

    records, cut = [], 0
    for sender in senders:
        posts = sorted(by_sender[sender])
        if max_posts_per_timeline is not None and len(posts) > max_posts_per_timeline:
            cut += len(posts) - max_posts_per_timeline
            posts = posts[:max_posts_per_timeline]  # a prefix keeps every label unchanged
        seen_conversations: set[str] = set()
        for i, (stamp, conv_id, t, u, text) in enumerate(posts):
            label = "Cont" if conv_id in seen_conversations else "New"
            seen_conversations.add(conv_id)
            records.append({"timeline_id": sender, "post_id": f"{conv_id}:{t}:{u}",
                            "timestamp": stamp, "text": text, "label": label, "order": i,
                            "where": (path, f"conversation {conv_id} turn {t} utterance {u}")})
    if cut:
        log.info("chitchat %s: cut %d post(s) beyond max_posts_per_timeline=%d",
                 path, cut, max_posts_per_timeline)
    df = posts_from_records(records, dataset, path, labels=labels)
    return validate_posts(df, path, LABELS)

