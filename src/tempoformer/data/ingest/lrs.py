"""LRS: RumourEval-2017 (SemEval-2017 Task 8, subtask A) threads with switch labels.

Accepted layouts (chosen from what `path` is):
- the release folder as published, holding `semeval2017-task8-dataset/` (rumoureval-data/<event>/
  <thread>/..., traindev/rumoureval-subtaskA-{train,dev}.json), and optionally
  `semeval2017-task8-test-data/<thread>/...` with `semeval2017-task8-test-key/subtaskA.json`;
- a bare tree of `<event>/<thread>/...` or `<thread>/...` (or one thread folder), with the
  subtask-A annotation JSON file(s) passed as `annotations=`;
- the flattened `conversations.json` file: {"train"|"dev"|"test": [{"source": {id, created_at,
  stance, text}, "replies": [...]}]}.

A thread is a timeline: the source tweet first, then the replies by (parsed created_at, int(id)).
Twitter ids grow with creation time, so the id breaks ties the way the tweets were posted.
Labels follow the authors' switch rule, written out in `switch_labels` below (checked against
two hand-made threads in tests/test_ingest_lrs.py). Tweets created outside [earliest_timestamp,
latest_timestamp] are refused (see the package docstring).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Sequence

import polars as pl

from ..posts import InputError, posts_from_records, validate_posts
from ._common import (
    EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TimeRange, load_json, parse_datetime, require_dir,
    require_file,
)

log = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("Sw", "N-Sw")
STANCES: tuple[str, ...] = ("support", "deny", "query", "comment")
# Contribution of one stance to s = #support - #(query + deny).
_STEP = {"support": 1, "deny": -1, "query": -1, "comment": 0}

RELEASE_DIR = "semeval2017-task8-dataset"
TEST_DIR = "semeval2017-task8-test-data"
TEST_KEY = Path("semeval2017-task8-test-key") / "subtaskA.json"
TRAINDEV_KEYS = (
    Path("traindev") / "rumoureval-subtaskA-train.json",
    Path("traindev") / "rumoureval-subtaskA-dev.json",
)

_MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
# Twitter's created_at, e.g. "Wed Jan 07 11:11:33 +0000 2015". Parsed by hand, not with
# strptime("%a %b"), because strptime's day and month names follow the process locale.
_CREATED_AT = re.compile(
    r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) (\d{2}) (\d{2}):(\d{2}):(\d{2}) "
    r"([+-])(\d{2})(\d{2}) (\d{4})$"
)


def switch_labels(stances: Sequence[str]) -> list[str]:
    """The authors' rule: Sw where a switch starts or continues, N-Sw elsewhere.

    s is counted cumulatively from the source on. For each post after the source: s leaving 0
    starts a switch towards the side of the new s; s staying on one side (old and new both > 0
    or both < 0) continues a switch if one towards that side has started earlier in the thread.
    The source is always N-Sw (a source that supports makes s = 1 without any switch).
    """
    if not stances:
        return []
    s = _STEP[stances[0]]
    started: set[int] = set()  # sides (+1 / -1) towards which a switch has started
    labels = ["N-Sw"]
    for stance in stances[1:]:
        new = s + _STEP[stance]
        side = (new > 0) - (new < 0)
        if s == 0 and new != 0:
            started.add(side)
            switch = True
        else:
            switch = s * new > 0 and side in started
        labels.append("Sw" if switch else "N-Sw")
        s = new
    return labels


def parse_created_at(value: object, path: Path, record: str) -> datetime:
    """Parse Twitter's created_at into an aware UTC datetime (ISO 8601 also accepted)."""
    match = _CREATED_AT.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        return parse_datetime(value, None, path, record)
    month, day, hh, mm, ss, sign, oh, om, year = match.groups()
    if month not in _MONTHS:
        raise InputError(path, record, f"unparseable timestamp {value!r} (month {month!r})")
    offset = timedelta(hours=int(oh), minutes=int(om)) * (1 if sign == "+" else -1)
    try:
        stamp = datetime(int(year), _MONTHS[month], int(day), int(hh), int(mm), int(ss),
                         tzinfo=timezone(offset))
    except ValueError as e:
        raise InputError(path, record, f"unparseable timestamp {value!r} ({e})") from e
    return stamp.astimezone(timezone.utc)


@dataclass
class _Tweet:
    id: str
    time: datetime
    stance: str
    text: str
    origin: Path  # the file it came from, for error messages
    record: str  # how to find it in that file


def read(
    path: str | os.PathLike,
    dataset: str = "lrs",
    annotations: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
    earliest_timestamp: str | datetime | None = EARLIEST_TIMESTAMP,
    latest_timestamp: str | datetime | None = LATEST_TIMESTAMP,
    labels: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Read an LRS corpus (any accepted layout) into the canonical post table.

    `annotations`: subtask-A stance file(s) ({tweet_id: stance}); only for a bare thread tree
    (the release folder brings its own, conversations.json carries stances inline).
    `labels`: the dataset's class names; a derived label outside them is an error.
    """
    span = TimeRange(earliest_timestamp, latest_timestamp)
    path = Path(path)
    if not path.exists():
        raise InputError(path, "-", "no such file or folder")
    is_tree = path.is_dir() and not (path / RELEASE_DIR).is_dir()
    if annotations is not None and not is_tree:
        raise ValueError("annotations= is only for a bare thread tree; the release folder and "
                         "conversations.json carry their own stances")
    stances = None
    if path.is_file():
        threads = _threads_from_conversations(path)
    elif (path / RELEASE_DIR).is_dir():
        threads, stances = _threads_from_release(path)
    else:
        if annotations is None:
            raise InputError(path, "-", "a thread tree needs its subtask-A annotation JSON: "
                             "pass annotations=<file or list of files>")
        files = [annotations] if isinstance(annotations, (str, os.PathLike)) else annotations
        stances = _load_annotations([Path(f) for f in files])
        threads = [_read_thread(d, stances) for d in _thread_dirs(path)]
    for _, source, replies in threads:
        for tweet in [source] + replies:
            span.check(tweet.time, tweet.origin, tweet.record)
    span.raise_refused()
    records = _records(threads, path)
    if stances is not None:
        # Normal when reading part of a release with its full key; logged so it is never silent.
        unused = len(set(stances) - {r["post_id"] for r in records})
        if unused:
            log.info("LRS %s: %d annotated tweet(s) have no tweet file here", path, unused)
    df = posts_from_records(records, dataset, path, labels=labels)
    return validate_posts(df, path, LABELS)


def _records(threads: list[tuple[str, _Tweet, list[_Tweet]]], path: Path) -> list[dict]:
    """Order each thread (source, then replies by time and id) and label it."""
    if not threads:
        raise InputError(path, "-", "no threads found")
    seen: dict[str, _Tweet] = {}
    records = []
    for thread_id, source, replies in threads:
        ordered = [source] + sorted(replies, key=lambda t: (t.time, int(t.id)))
        for tweet in ordered:
            if tweet.id in seen:
                first = seen[tweet.id]
                raise InputError(tweet.origin, tweet.record,
                                 f"duplicate tweet id {tweet.id} (also in {first.origin})")
            seen[tweet.id] = tweet
        labels = switch_labels([t.stance for t in ordered])
        for i, (tweet, label) in enumerate(zip(ordered, labels)):
            records.append({"timeline_id": thread_id, "post_id": tweet.id, "timestamp": tweet.time,
                            "text": tweet.text, "label": label, "order": i,
                            "where": (tweet.origin, tweet.record)})
    log.info("LRS %s: %d threads, %d tweets", path, len(threads), len(records))
    return records


# --- release folder and thread trees -------------------------------------------------------


def _threads_from_release(root: Path) -> tuple[list, dict[str, str]]:
    release = root / RELEASE_DIR
    stances = _load_annotations([release / key for key in TRAINDEV_KEYS])
    thread_dirs = _thread_dirs(require_dir(release / "rumoureval-data"))
    test = root / TEST_DIR
    if test.is_dir():
        stances = _load_annotations([root / TEST_KEY], stances)
        thread_dirs += _thread_dirs(test)
    else:
        log.warning("%s has no %s/: reading the train and dev threads only", root, TEST_DIR)
    return [_read_thread(d, stances) for d in thread_dirs], stances


def _thread_dirs(root: Path) -> list[Path]:
    """Thread folders under `root`: itself, its children, or its grandchildren (events)."""
    if (root / "source-tweet").is_dir():
        return [root]
    found, skipped = [], []
    for child in sorted(root.iterdir()):
        if not child.is_dir():
            skipped.append(child.name)
        elif (child / "source-tweet").is_dir():
            found.append(child)
        else:  # an event folder: every sub-folder must be a thread
            for thread in sorted(child.iterdir()):
                if not thread.is_dir():
                    skipped.append(f"{child.name}/{thread.name}")
                elif (thread / "source-tweet").is_dir():
                    found.append(thread)
                else:
                    raise InputError(thread, "-", "not a thread folder (no source-tweet/)")
    if skipped:
        log.info("%s: skipped %d file(s) beside the thread folders: %s",
                 root, len(skipped), ", ".join(skipped[:5]))
    if not found:
        raise InputError(root, "-", "no thread folders (<thread>/source-tweet/) found")
    return found


def _load_annotations(files: list[Path], stances: dict[str, str] | None = None) -> dict:
    stances = dict(stances or {})
    for file in files:
        data = load_json(file)
        if not isinstance(data, dict):
            raise InputError(file, "-", "expected a JSON object {tweet_id: stance}")
        for tweet_id, stance in data.items():
            if stance not in STANCES:
                raise InputError(file, f"tweet {tweet_id}", f"unknown stance {stance!r}")
            if stances.get(tweet_id, stance) != stance:
                raise InputError(file, f"tweet {tweet_id}",
                                 f"stance {stance!r} conflicts with {stances[tweet_id]!r}")
            stances[tweet_id] = stance
    return stances


def _read_thread(folder: Path, stances: dict[str, str]) -> tuple[str, _Tweet, list[_Tweet]]:
    # urls.dat and context/ (linked pages) are not posts; only the tweets are read.
    sources = _json_files(folder / "source-tweet")
    if len(sources) != 1:
        problem = "empty timeline: no source tweet" if not sources else \
            f"expected one source tweet, found {len(sources)}"
        raise InputError(folder / "source-tweet", f"thread {folder.name}", problem)
    parents = _structure_parents(require_file(folder / "structure.json"))
    source, _ = _read_tweet(sources[0], stances)
    replies = []
    known = set(parents) | {source.id}
    reply_files = _json_files(folder / "replies") if (folder / "replies").is_dir() else []
    for file in reply_files:
        known.add(file.stem)
    for file in reply_files:
        tweet, parent = _read_tweet(file, stances)
        # structure.json also lists deleted tweets, so a parent without a file is still known.
        parent = parent or parents.get(tweet.id)
        if parent is None or parent not in known or parent == tweet.id:
            raise InputError(file, tweet.record,
                             f"reply to unknown parent {parent} (not in thread {folder.name})")
        replies.append(tweet)
    return folder.name, source, replies


def _json_files(folder: Path) -> list[Path]:
    files = sorted(folder.iterdir())
    other = [f.name for f in files if f.suffix != ".json"]
    if other:
        log.info("%s: skipped %d non-JSON file(s): %s", folder, len(other), ", ".join(other[:5]))
    return [f for f in files if f.suffix == ".json"]


def _structure_parents(file: Path) -> dict[str, str | None]:
    """{tweet id: parent id} from the nested structure.json ({id: {child: {...}} or [] leaves})."""
    parents: dict[str, str | None] = {}
    stack = [(load_json(file), None)]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                parents[str(key)] = parent
                stack.append((child, str(key)))
        elif node not in ([], None):
            raise InputError(file, f"children of {parent}", "expected an object or []")
    return parents


def _read_tweet(file: Path, stances: dict[str, str]) -> tuple[_Tweet, str | None]:
    data = load_json(file)
    if not isinstance(data, dict):
        raise InputError(file, f"tweet {file.stem}", "expected a JSON object")
    tweet_id = str(data.get("id_str") or data.get("id") or "")
    record = f"tweet {tweet_id or file.stem}"
    if not tweet_id:
        raise InputError(file, record, "missing field 'id'")
    if not tweet_id.isdigit():
        raise InputError(file, record, f"tweet id {tweet_id!r} is not a number")
    if tweet_id != file.stem:
        raise InputError(file, record, f"tweet id {tweet_id} does not match the file name")
    for field in ("created_at", "text"):
        if data.get(field) is None and not (field == "text" and "full_text" in data):
            raise InputError(file, record, f"missing field {field!r}")
    if tweet_id not in stances:
        raise InputError(file, record, "no stance for this tweet in the annotation file(s)")
    parent = data.get("in_reply_to_status_id_str") or data.get("in_reply_to_status_id")
    _require_text(data.get("full_text") or data["text"], file, record)
    tweet = _Tweet(
        id=tweet_id,
        time=parse_created_at(data["created_at"], file, record),
        stance=stances[tweet_id],
        text=data.get("full_text") or data["text"],
        origin=file,
        record=record,
    )
    return tweet, None if parent is None else str(parent)


# --- conversations.json --------------------------------------------------------------------


def _threads_from_conversations(file: Path) -> list:
    data = load_json(file)
    if not isinstance(data, dict):
        raise InputError(file, "-", 'expected {"train"|"dev"|"test": [threads]}')
    threads = []
    for split, items in data.items():
        if split not in ("train", "dev", "test"):
            raise InputError(file, f"key {split!r}", "unknown split (expected train, dev, test)")
        if not isinstance(items, list):
            raise InputError(file, split, "expected a list of threads")
        for i, item in enumerate(items):
            where = f"{split}[{i}]"
            if not isinstance(item, dict) or not isinstance(item.get("source"), dict):
                raise InputError(file, where, "empty timeline: missing field 'source'")
            replies = item.get("replies")
            if not isinstance(replies, list):
                raise InputError(file, where, "missing field 'replies' (a list)")
            source = _flat_tweet(item["source"], file, f"{where} source")
            tweets = [_flat_tweet(r, file, f"{where} reply {j}") for j, r in enumerate(replies)]
            threads.append((source.id, source, tweets))
    return threads


def _require_text(text: object, file: Path, record: str) -> None:
    if not isinstance(text, str):  # str() would turn {"a": 1} into "{'a': 1}" silently
        raise InputError(file, record, f"field 'text' is a {type(text).__name__} ({text!r}), not text")


def _flat_tweet(item: object, file: Path, where: str) -> _Tweet:
    if not isinstance(item, dict):
        raise InputError(file, where, "expected an object")
    for field in ("id", "created_at", "stance", "text"):
        if item.get(field) is None:
            raise InputError(file, where, f"missing field {field!r}")
    record = f"{where} (tweet {item['id']})"
    if not str(item["id"]).isdigit():
        raise InputError(file, record, f"tweet id {item['id']!r} is not a number")
    if item["stance"] not in STANCES:
        raise InputError(file, record, f"unknown stance {item['stance']!r}")
    _require_text(item["text"], file, record)
    return _Tweet(id=str(item["id"]), time=parse_created_at(item["created_at"], file, record),
                  stance=item["stance"], text=item["text"], origin=file, record=record)
