"""LRS reader (RumourEval-2017): switch labels, layouts, real-data counts, bad input."""

import json
import logging
import shutil
from pathlib import Path

import polars as pl
import pytest

from tempoformer.data.ingest import READERS, ingest, lrs
from tempoformer.data.ingest.synthetic_lrs import write_synthetic_lrs
from tempoformer.data.posts import InputError

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "rumoureval2017"

# Thread A, source first, then replies in time order, with the labels computed by hand.
# s = #support - #(query + deny), cumulative from the source on.
THREAD_A = [  # (stance, s after the post, expected label, why)
    ("comment", 0, "N-Sw", "source is always N-Sw"),
    ("support", 1, "Sw", "0 -> 1: a switch starts (positive side)"),
    ("comment", 1, "Sw", "1 -> 1: stays positive after a positive start: continues"),
    ("support", 2, "Sw", "1 -> 2: continues"),
    ("deny", 1, "Sw", "2 -> 1: still positive: continues"),
    ("query", 0, "N-Sw", "1 -> 0: return to 0"),
    ("comment", 0, "N-Sw", "0 -> 0: nothing"),
    ("deny", -1, "Sw", "0 -> -1: a switch starts (negative side)"),
    ("query", -2, "Sw", "-1 -> -2: continues"),
    ("support", -1, "Sw", "-2 -> -1: still negative: continues"),
    ("support", 0, "N-Sw", "-1 -> 0: return to 0"),
    ("support", 1, "Sw", "0 -> 1: flip of side, a new positive switch starts"),
]
# Thread B: the source supports, so s = 1 without any switch having started.
THREAD_B = [
    ("support", 1, "N-Sw", "source"),
    ("comment", 1, "N-Sw", "1 -> 1 but no positive switch has started yet"),
    ("support", 2, "N-Sw", "1 -> 2, still no positive switch started"),
    ("deny", 1, "N-Sw", "2 -> 1"),
    ("query", 0, "N-Sw", "1 -> 0"),
    ("deny", -1, "Sw", "0 -> -1: start (negative)"),
    ("support", 0, "N-Sw", "-1 -> 0"),
    ("support", 1, "Sw", "0 -> 1: start (positive)"),
    ("comment", 1, "Sw", "1 -> 1: continues now that a positive switch has started"),
]

DAYS = "Mon Tue Wed Thu Fri Sat Sun".split()


def created_at(day: int, hh: int, mm: int, ss: int) -> str:
    # January 2015: the 1st was a Thursday.
    return f"{DAYS[(day + 2) % 7]} Jan {day:02d} {hh:02d}:{mm:02d}:{ss:02d} +0000 2015"


def make_thread(source_id: int, stances: list[str]) -> list[dict]:
    """Tweets of one thread in time order. Times are chosen so that sorting the created_at
    text gives a different order (weekday names first), and the last two replies share a
    second, so the id must break the tie."""
    tweets = []
    for i, stance in enumerate(stances):
        day, minute = 8 + i // 4, (i % 4) * 10  # Thu, Fri, Sat: text order differs
        stamp = created_at(day, 9, minute, 0)
        if i == len(stances) - 1 and i >= 2:
            stamp = tweets[-1]["created_at"]  # same second as the previous reply
        tweets.append({"id": str(source_id + i * 1000), "created_at": stamp, "stance": stance,
                       "text": f"tweet {i} says {stance}",
                       "parent": None if i == 0 else str(source_id + (i // 2) * 1000)})
    return tweets


def thread_a() -> list[dict]:
    return make_thread(500000000000000000, [s for s, *_ in THREAD_A])


def thread_b() -> list[dict]:
    return make_thread(600000000000000000, [s for s, *_ in THREAD_B])


def tweet_json(t: dict) -> dict:
    return {"id": int(t["id"]), "id_str": t["id"], "created_at": t["created_at"],
            "text": t["text"], "in_reply_to_status_id": None if t["parent"] is None
            else int(t["parent"]), "in_reply_to_status_id_str": t["parent"]}


def write_thread(folder: Path, tweets: list[dict]) -> None:
    source, replies = tweets[0], tweets[1:]
    (folder / "source-tweet").mkdir(parents=True)
    (folder / "replies").mkdir()
    (folder / "source-tweet" / f"{source['id']}.json").write_text(json.dumps(tweet_json(source)))
    for t in reversed(replies):  # file order must not matter
        (folder / "replies" / f"{t['id']}.json").write_text(json.dumps(tweet_json(t)))
    children = {t["id"]: {} for t in tweets}
    for t in replies:
        children[t["parent"]][t["id"]] = children[t["id"]]
    structure = {source["id"]: children[source["id"]]}
    (folder / "structure.json").write_text(json.dumps(structure).replace("{}", "[]"))


def write_release(root: Path, train: list, dev: list, test: list) -> Path:
    data = root / "semeval2017-task8-dataset"
    keys = {}
    for split, threads, base in (("train", train, data / "rumoureval-data" / "event-one"),
                                 ("dev", dev, data / "rumoureval-data" / "event-two"),
                                 ("test", test, root / "semeval2017-task8-test-data")):
        keys[split] = {t["id"]: t["stance"] for thread in threads for t in thread}
        for thread in threads:
            write_thread(base / thread[0]["id"], thread)
    (data / "traindev").mkdir(parents=True)
    (data / "traindev" / "rumoureval-subtaskA-train.json").write_text(json.dumps(keys["train"]))
    (data / "traindev" / "rumoureval-subtaskA-dev.json").write_text(json.dumps(keys["dev"]))
    (root / "semeval2017-task8-test-key").mkdir()
    (root / "semeval2017-task8-test-key" / "subtaskA.json").write_text(json.dumps(keys["test"]))
    return root


def write_conversations(file: Path, splits: dict[str, list]) -> Path:
    def flat(t):
        return {k: t[k] for k in ("id", "created_at", "stance", "text")}

    data = {split: [{"source": flat(th[0]), "replies": [flat(t) for t in reversed(th[1:])]}
                    for th in threads] for split, threads in splits.items()}
    file.write_text(json.dumps(data))
    return file


def labels_of(df: pl.DataFrame, timeline: str) -> list[str]:
    return df.filter(pl.col("timeline_id") == timeline).sort("position")["label"].to_list()


def test_switch_rule_on_hand_made_threads(tmp_path):
    # The hand computation in THREAD_A/B agrees with itself: s is what the table says.
    for thread in (THREAD_A, THREAD_B):
        s = 0
        for stance, s_after, *_ in thread:
            s += {"support": 1, "deny": -1, "query": -1, "comment": 0}[stance]
            assert s == s_after
    assert lrs.switch_labels([s for s, *_ in THREAD_A]) == [lab for _, _, lab, _ in THREAD_A]
    assert lrs.switch_labels([s for s, *_ in THREAD_B]) == [lab for _, _, lab, _ in THREAD_B]

    # The same labels come out of the reader, which must also order the replies by time.
    root = write_release(tmp_path / "release", [thread_a()], [thread_b()], [])
    df = lrs.read(root)
    a, b = thread_a(), thread_b()
    assert labels_of(df, a[0]["id"]) == [lab for _, _, lab, _ in THREAD_A]
    assert labels_of(df, b[0]["id"]) == [lab for _, _, lab, _ in THREAD_B]
    order = df.filter(pl.col("timeline_id") == a[0]["id"]).sort("position")["post_id"]
    assert order.to_list() == [t["id"] for t in a]
    assert df["timestamp"].dtype == pl.Datetime("us", "UTC")
    assert df["timestamp"][0].isoformat() == "2015-01-08T09:00:00+00:00"


def test_created_at_is_parsed_not_sorted_as_text(tmp_path):
    # Text order of these is Fri < Sat < Thu; time order is Thu < Fri < Sat.
    src = {"id": "100", "created_at": "Thu Jan 01 10:00:00 +0000 2015", "stance": "comment",
           "text": "s"}
    replies = [
        {"id": "300", "created_at": "Sat Jan 03 10:00:00 +0000 2015", "stance": "support",
         "text": "c"},
        {"id": "200", "created_at": "Fri Jan 02 12:00:00 +0200 2015", "stance": "support",
         "text": "b"},  # 10:00 UTC
    ]
    file = tmp_path / "conversations.json"
    file.write_text(json.dumps({"train": [{"source": src, "replies": replies}]}))
    df = lrs.read(file)
    assert df["post_id"].to_list() == ["100", "200", "300"]
    assert df["timestamp"][1].isoformat() == "2015-01-02T10:00:00+00:00"
    assert df["label"].to_list() == ["N-Sw", "Sw", "Sw"]


def test_release_tree_bare_tree_and_conversations_json_agree(tmp_path, caplog):
    a, b = thread_a(), thread_b()
    c = make_thread(700000000000000000, ["deny", "comment", "deny", "support"])
    release = lrs.read(write_release(tmp_path / "release", [a], [b], [c]))
    flat = lrs.read(write_conversations(tmp_path / "conversations.json",
                                        {"train": [a], "dev": [b], "test": [c]}))
    assert release.height == len(a) + len(b) + len(c)
    assert release.equals(flat)
    # A bare <event>/<thread> tree with the annotation file(s) given as an option.
    tree = tmp_path / "release" / "semeval2017-task8-dataset" / "rumoureval-data"
    keys = tmp_path / "release" / "semeval2017-task8-dataset" / "traindev"
    bare = lrs.read(tree, annotations=sorted(keys.glob("*subtaskA*.json")))
    assert bare.equals(release.filter(pl.col("timeline_id") != c[0]["id"]))
    # ...and a flat <thread> tree (the test data) through ingest(), with a dataset name.
    test = ingest("lrs", tmp_path / "release" / "semeval2017-task8-test-data", dataset="x",
                  annotations=tmp_path / "release" / "semeval2017-task8-test-key" / "subtaskA.json")
    assert test["dataset"].unique().to_list() == ["x"]
    assert test["post_id"].to_list() == [t["id"] for t in c]
    # Annotations of tweets that are not in the tree read are counted in the log.
    with caplog.at_level(logging.INFO, logger="tempoformer.data.ingest.lrs"):
        lrs.read(tmp_path / "release" / "semeval2017-task8-test-data",
                 annotations=sorted((tmp_path / "release").rglob("*subtaskA*.json")))
    assert f"{len(a) + len(b)} annotated tweet(s) have no tweet file here" in caplog.text
    with pytest.raises(ValueError, match="only for a bare thread tree"):
        lrs.read(tmp_path / "release", annotations=keys / "rumoureval-subtaskA-train.json")


def test_synthetic_corpus_is_deterministic_and_readable(tmp_path):
    first = write_synthetic_lrs(tmp_path / "one", n_threads=24, seed=3)
    second = write_synthetic_lrs(tmp_path / "two", n_threads=24, seed=3)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    other = write_synthetic_lrs(tmp_path / "three", n_threads=24, seed=4)
    assert sorted(p.relative_to(other) for p in other.rglob("*") if p.is_file()) != files

    df = ingest("lrs", first)
    assert df.n_unique("timeline_id") == 24
    assert set(df["label"]) == {"Sw", "N-Sw"}
    assert (df.filter(pl.col("position") == 0)["label"] == "N-Sw").all()
    assert df["timestamp"].null_count() == 0
    # Stance shows in the words: denials say so.
    deny_ids = set()
    for key in first.rglob("*subtaskA*.json"):
        deny_ids |= {k for k, v in json.loads(key.read_text()).items() if v == "deny"}
    deny_texts = df.filter(pl.col("post_id").is_in(deny_ids))["text"].to_list()
    assert deny_texts and all(any(w in t.lower() for w in ("false", "not true", "fake", "deny"))
                              for t in deny_texts)
    with pytest.raises(FileExistsError):
        write_synthetic_lrs(first)


@pytest.mark.skipif(not REAL.is_dir(), reason=f"real RumourEval-2017 data not found at {REAL}")
def test_real_rumoureval_counts():
    df = ingest("lrs", REAL)
    assert df.n_unique("timeline_id") == 325
    assert df.height == 5568
    assert (df["label"] == "Sw").sum() == 2093
    assert df.filter(pl.col("position") == 0).height == 325
    assert READERS["lrs"].LABELS == ("Sw", "N-Sw")


# --- bad input: InputError names the file and the record ------------------------------------


def raises_input_error(call, file_name: str, record: str, problem: str) -> InputError:
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert file_name in message and record in message and problem in message, message
    return info.value


@pytest.fixture
def release(tmp_path):
    return write_release(tmp_path / "release", [thread_a()], [thread_b()], [])


def thread_dir(root: Path, tweets: list[dict], event="event-one") -> Path:
    return root / "semeval2017-task8-dataset" / "rumoureval-data" / event / tweets[0]["id"]


def test_missing_folder(tmp_path):
    raises_input_error(lambda: lrs.read(tmp_path / "nope"), "nope", "record -", "no such")


def test_tree_without_annotations(release):
    tree = release / "semeval2017-task8-dataset" / "rumoureval-data"
    raises_input_error(lambda: lrs.read(tree), "rumoureval-data", "record -", "annotation")


def test_malformed_json(release):
    reply = thread_a()[3]
    file = thread_dir(release, thread_a()) / "replies" / f"{reply['id']}.json"
    file.write_text('{"id": 1, "text": ')
    raises_input_error(lambda: lrs.read(release), file.name, "line 1", "malformed JSON")


def test_missing_field(release):
    reply = thread_a()[2]
    file = thread_dir(release, thread_a()) / "replies" / f"{reply['id']}.json"
    data = json.loads(file.read_text())
    del data["created_at"]
    file.write_text(json.dumps(data))
    raises_input_error(lambda: lrs.read(release), file.name, f"tweet {reply['id']}", "created_at")


def test_unparseable_timestamp(release):
    reply = thread_a()[2]
    file = thread_dir(release, thread_a()) / "replies" / f"{reply['id']}.json"
    data = json.loads(file.read_text())
    data["created_at"] = "Wed Jnu 07 11:11:33 +0000 2015"
    file.write_text(json.dumps(data))
    raises_input_error(lambda: lrs.read(release), file.name, f"tweet {reply['id']}",
                       "unparseable timestamp")


def test_duplicate_tweet_id(release):
    # The same reply filed under a second thread (structure.json updated so it is a valid reply).
    reply = thread_a()[2]
    folder_b = thread_dir(release, thread_b(), "event-two")
    shutil.copy(thread_dir(release, thread_a()) / "replies" / f"{reply['id']}.json",
                folder_b / "replies")
    data = json.loads((folder_b / "replies" / f"{reply['id']}.json").read_text())
    data["in_reply_to_status_id_str"] = thread_b()[0]["id"]
    (folder_b / "replies" / f"{reply['id']}.json").write_text(json.dumps(data))
    raises_input_error(lambda: lrs.read(release), f"{reply['id']}.json", f"tweet {reply['id']}",
                       "duplicate tweet id")


def test_duplicate_id_in_conversations_json(tmp_path):
    a = thread_a()
    b = thread_b()
    b[3]["id"] = a[5]["id"]
    file = write_conversations(tmp_path / "conversations.json", {"train": [a, b]})
    raises_input_error(lambda: lrs.read(file), "conversations.json", f"tweet {a[5]['id']}",
                       "duplicate")


def test_unknown_stance(release):
    key = release / "semeval2017-task8-dataset" / "traindev" / "rumoureval-subtaskA-train.json"
    stances = json.loads(key.read_text())
    tweet_id = thread_a()[4]["id"]
    stances[tweet_id] = "agree"
    key.write_text(json.dumps(stances))
    raises_input_error(lambda: lrs.read(release), key.name, f"tweet {tweet_id}", "unknown stance")


def test_unknown_stance_in_conversations_json(tmp_path):
    a = thread_a()
    a[2]["stance"] = "maybe"
    file = write_conversations(tmp_path / "conversations.json", {"dev": [a]})
    raises_input_error(lambda: lrs.read(file), "conversations.json", f"tweet {a[2]['id']}",
                       "unknown stance")


def test_tweet_without_annotation(release):
    key = release / "semeval2017-task8-dataset" / "traindev" / "rumoureval-subtaskA-dev.json"
    stances = json.loads(key.read_text())
    tweet_id = thread_b()[2]["id"]
    del stances[tweet_id]
    key.write_text(json.dumps(stances))
    raises_input_error(lambda: lrs.read(release), f"{tweet_id}.json", f"tweet {tweet_id}",
                       "no stance")


def test_reply_to_unknown_parent(release):
    reply = thread_a()[6]
    file = thread_dir(release, thread_a()) / "replies" / f"{reply['id']}.json"
    data = json.loads(file.read_text())
    data["in_reply_to_status_id_str"] = "123456789"
    file.write_text(json.dumps(data))
    raises_input_error(lambda: lrs.read(release), file.name, f"tweet {reply['id']}",
                       "unknown parent 123456789")


def test_empty_timeline(release):
    folder = thread_dir(release, thread_b(), "event-two") / "source-tweet"
    for f in folder.iterdir():
        f.unlink()
    raises_input_error(lambda: lrs.read(release), "source-tweet", f"thread {thread_b()[0]['id']}",
                       "empty timeline")


def test_empty_timeline_in_conversations_json(tmp_path):
    file = tmp_path / "conversations.json"
    file.write_text(json.dumps({"test": [{"replies": []}]}))
    raises_input_error(lambda: lrs.read(file), "conversations.json", "test[0]", "empty timeline")


def test_missing_annotation_file(release):
    (release / "semeval2017-task8-test-key" / "subtaskA.json").unlink()
    (release / "semeval2017-task8-test-data").mkdir()
    raises_input_error(lambda: lrs.read(release), "subtaskA.json", "record -", "no such file")


def test_dataset_labels_are_checked_naming_the_tweet(release):
    assert ingest("lrs", release, labels=["Sw", "N-Sw"]).height == len(THREAD_A) + len(THREAD_B)
    source = thread_a()[0]["id"]  # the first post read, always N-Sw
    raises_input_error(lambda: ingest("lrs", release, labels=["Sw", "NSw"]), f"{source}.json",
                       f"tweet {source}",
                       "unknown label 'N-Sw': not one of the dataset's labels ['Sw', 'NSw']")


def test_created_at_after_latest_is_refused(release, tmp_path):
    reply = thread_a()[2]
    file = thread_dir(release, thread_a()) / "replies" / f"{reply['id']}.json"
    data = json.loads(file.read_text())
    data["created_at"] = "Thu Jan 08 09:20:00 +0000 2999"
    file.write_text(json.dumps(data))
    raises_input_error(lambda: lrs.read(release), file.name, f"tweet {reply['id']}",
                       "timestamp 2999-01-08T09:20:00+00:00 is after latest_timestamp now")
    tweets = thread_a()
    tweets[1]["created_at"] = "Wed Dec 31 23:00:00 +0000 1969"
    flat = write_conversations(tmp_path / "conversations.json", {"train": [tweets]})
    # write_conversations lists the replies last first: tweets[1] is reply 10
    raises_input_error(lambda: lrs.read(flat), "conversations.json",
                       f"train[0] reply 10 (tweet {tweets[1]['id']})",
                       "before earliest_timestamp 1970-01-01T00:00:00+00:00; 1 of 12")
