"""A small synthetic RumourEval-2017-like corpus, so the LRS pipeline runs without the real data.

It is written in the release layout that `lrs.read` accepts (the real data is not
redistributable):

    <out_dir>/semeval2017-task8-dataset/rumoureval-data/<event>/<thread>/
        source-tweet/<id>.json, replies/<id>.json, structure.json
    <out_dir>/semeval2017-task8-dataset/traindev/rumoureval-subtaskA-{train,dev}.json
    <out_dir>/semeval2017-task8-test-data/<thread>/...
    <out_dir>/semeval2017-task8-test-key/subtaskA.json

Texts come from per-stance templates, so the words carry the stance; replies follow each other
with log-normal gaps (median about 1.5 min, like the real corpus); tweet ids are Twitter-style
snowflakes, so they grow with time. Everything is drawn from one seeded generator and written
with fixed key order: the same seed gives byte-identical files.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ...atomic import atomic_dir
from .lrs import RELEASE_DIR, TEST_DIR, TEST_KEY, TRAINDEV_KEYS

_DAYS = "Mon Tue Wed Thu Fri Sat Sun".split()
_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
_TWITTER_EPOCH_MS = 1288834974657

# (event folder, place, claims); the last event is the dev set, as germanwings-crash is.
_EVENTS = [
    ("harbour-fire", "the harbour", ["the fire was started on purpose", "two ships sank",
                                     "the port will close for a week"]),
    ("stadium-lockdown", "the stadium", ["a gunman is inside", "the match was cancelled",
                                         "police arrested three people"]),
    ("minister-missing", "the capital", ["the minister has resigned", "the minister is ill",
                                         "the minister left the country"]),
    ("bridge-collapse", "the river bridge", ["the bridge was closed days ago",
                                             "a bus fell into the river", "the engineer warned"]),
]
_TEMPLATES = {
    "support": [
        "Confirmed: {claim}. {outlet} has the footage",
        "Yes, {claim}, my cousin at {place} saw it too",
        "{outlet} now reports that {claim} #breaking",
        "True. Official statement says {claim}",
    ],
    "deny": [
        "That is false, {claim} is just a rumour. {outlet} already debunked it",
        "Not true. Nobody at {place} says {claim}",
        "Fake news, stop sharing. {claim} never happened",
        "Wrong, police deny that {claim}",
    ],
    "query": [
        "Is it confirmed that {claim}? Source?",
        "Where did you hear {claim}? Any link?",
        "Really? Can anyone at {place} verify this?",
        "Has {outlet} confirmed that {claim}?",
    ],
    "comment": [
        "Thoughts with everyone at {place} {emoji}",
        "Unbelievable day. Stay safe {place}",
        "Watching {outlet} live, what a mess",
        "{emoji} this is so sad",
        "Following this closely #news",
    ],
}
_OUTLETS = ["BBC", "Reuters", "AP", "the local paper", "Channel 4", "CNN"]
_EMOJI = [":(", "!!", "...", "wow", "omg"]
# Stance shares close to the real replies (comment 66%, support 18%, query 8%, deny 7%).
_REPLY_STANCES = (["comment"] * 66 + ["support"] * 18 + ["query"] * 8 + ["deny"] * 8)


def write_synthetic_lrs(out_dir: Path, n_threads: int = 40, seed: int = 0) -> Path:
    """Write the corpus into `out_dir` (must be absent or empty) and return `out_dir`.

    The files are first written to a temporary sibling folder and moved into place at the end,
    so an interrupted run never leaves half a corpus behind.
    """
    out_dir = Path(out_dir)
    if n_threads < 1:
        raise ValueError("n_threads must be at least 1")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise FileExistsError(f"{out_dir} exists and is not an empty folder")
    with atomic_dir(out_dir) as tmp:
        _write(tmp, n_threads, random.Random(seed))
    return out_dir


def _write(root: Path, n_threads: int, rng: random.Random) -> None:
    n_test = max(1, n_threads // 8) if n_threads > 2 else 0
    keys: dict[str, dict[str, str]] = {"train": {}, "dev": {}, "test": {}}
    start = datetime(2015, 3, 2, 8, 0, tzinfo=timezone.utc)
    for t in range(n_threads):
        event, place, claims = _EVENTS[t % len(_EVENTS)]
        if t >= n_threads - n_test:
            split, folder = "test", root / TEST_DIR
        else:
            split = "dev" if event == _EVENTS[-1][0] else "train"
            folder = root / RELEASE_DIR / "rumoureval-data" / event
        start += timedelta(seconds=rng.randint(600, 5 * 86400))  # threads spread over months
        tweets = _thread(rng, start, place, rng.choice(claims))
        source_id = tweets[0]["id_str"]
        thread = folder / source_id
        _dump(thread / "source-tweet" / f"{source_id}.json", tweets[0]["json"])
        for tweet in tweets[1:]:
            _dump(thread / "replies" / f"{tweet['id_str']}.json", tweet["json"])
        _dump(thread / "structure.json", _structure(tweets))
        for tweet in tweets:
            keys[split][tweet["id_str"]] = tweet["stance"]
    _dump(root / RELEASE_DIR / TRAINDEV_KEYS[0], keys["train"])
    _dump(root / RELEASE_DIR / TRAINDEV_KEYS[1], keys["dev"])
    if n_test:
        _dump(root / TEST_KEY, keys["test"])


def _thread(rng: random.Random, start: datetime, place: str, claim: str) -> list[dict]:
    """Source tweet plus replies; each reply answers the source or an earlier reply."""
    n_replies = min(60, int(rng.lognormvariate(2.4, 0.8)))  # median about 11, like the real 12
    time, sequence = start, 0
    tweets: list[dict] = []
    for i in range(n_replies + 1):
        if i:
            time += timedelta(seconds=1 + int(rng.lognormvariate(4.5, 1.6)))
        stance = rng.choice(["support"] * 3 + ["query", "comment"]) if i == 0 else \
            rng.choice(_REPLY_STANCES)
        sequence += 1
        tweet_id = _snowflake(time, sequence)
        parent = None if i == 0 else \
            (tweets[0] if rng.random() < 0.6 else rng.choice(tweets))
        user = f"user{rng.randint(1000, 99999)}"
        text = rng.choice(_TEMPLATES[stance]).format(
            claim=claim, place=place, outlet=rng.choice(_OUTLETS), emoji=rng.choice(_EMOJI))
        if parent is not None:
            text = f"@{parent['user']} {text}"
        tweets.append({
            "id_str": str(tweet_id), "stance": stance, "user": user,
            "parent": None if parent is None else parent["id_str"],
            "json": {
                "id": tweet_id, "id_str": str(tweet_id), "created_at": _created_at(time),
                "text": text, "lang": "en",
                "in_reply_to_status_id": None if parent is None else int(parent["id_str"]),
                "in_reply_to_status_id_str": None if parent is None else parent["id_str"],
                "user": {"screen_name": user, "id": rng.randint(10**6, 10**9)},
            },
        })
    return tweets


def _structure(tweets: list[dict]) -> dict:
    """Nested {id: {child id: ...}} with [] for leaves, as in the release."""
    children: dict[str, list[str]] = {t["id_str"]: [] for t in tweets}
    for tweet in tweets[1:]:
        children[tweet["parent"]].append(tweet["id_str"])

    def nest(tweet_id: str) -> dict | list:
        kids = children[tweet_id]
        return {kid: nest(kid) for kid in kids} if kids else []

    root = tweets[0]["id_str"]
    return {root: nest(root)}


def _snowflake(time: datetime, sequence: int) -> int:
    """Twitter-style id: milliseconds since the Twitter epoch in the high bits."""
    ms = int(time.timestamp() * 1000) - _TWITTER_EPOCH_MS
    return (ms << 22) + (sequence % 4096)


def _created_at(time: datetime) -> str:
    # Built by hand: strftime's %a/%b follow the process locale, Twitter's do not.
    return (f"{_DAYS[time.weekday()]} {_MONTHS[time.month - 1]} {time.day:02d} "
            f"{time:%H:%M:%S} +0000 {time.year}")


def _dump(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
