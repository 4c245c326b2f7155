"""Chitchat reader: sender timelines, New/Cont labels, options, bad input."""

import json
import logging

import polars as pl
import pytest

from tempoformer.data.ingest import chitchat, ingest
from tempoformer.data.posts import InputError


def utt(sender, time, text):
    return {"text": text, "timestamp": f"2018-05-02T{time}Z", "sender": sender}


# Listed out of time order on purpose: c2 comes first in the file but later in time.
CORPUS = {
    "c2": {"messages": [[utt("B", "10:00:00", "morning")],
                        [utt("A", "10:00:05", "good morning"), utt("A", "10:00:05", "coffee?")]],
           "start": "2018-05-02T10:00:00Z", "prompt": "p"},
    "c1": {"messages": [[utt("A", "09:00:00", "hi"), utt("A", "09:00:01", "there")],
                        [utt("B", "09:00:03", "hey")],
                        [utt("A", "09:00:04", ""), utt("A", "09:00:04", "so")]],
           "start": "2018-05-02T09:00:00Z", "prompt": "p"},
    # C posts at the same second in two conversations: the conversation id breaks the tie.
    "c3": {"messages": [[utt("C", "08:00:00", "x")]], "start": "2018-05-02T08:00:00Z"},
    "c0": {"messages": [[utt("C", "08:00:00", "y")]], "start": "2018-05-02T08:00:00Z"},
}
# Worked out by hand: each sender's posts in time order; New = first kept post of the sender
# in that conversation (A's empty utterance in c1 turn 2 is skipped).
EXPECTED = {
    "A": [("c1:0:0", "New"), ("c1:0:1", "Cont"), ("c1:2:1", "Cont"), ("c2:1:0", "New"),
          ("c2:1:1", "Cont")],
    "B": [("c1:1:0", "New"), ("c2:0:0", "New")],
    "C": [("c0:0:0", "New"), ("c3:0:0", "New")],
}


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps(CORPUS))
    return path


def timelines(df):
    return {t: list(zip(g.sort("position")["post_id"], g.sort("position")["label"]))
            for (t,), g in df.group_by("timeline_id")}


def test_hand_checked_labels_and_order(corpus, caplog):
    with caplog.at_level(logging.INFO, logger="tempoformer.data.ingest.chitchat"):
        df = chitchat.read(corpus)
    assert timelines(df) == EXPECTED
    assert "skipped 1 utterance(s) with empty text" in caplog.text
    assert df["dataset"].unique().to_list() == ["chitchat"]
    a = df.filter(pl.col("timeline_id") == "A")
    assert a["text"].to_list() == ["hi", "there", "so", "good morning", "coffee?"]
    assert str(a["timestamp"][0]) == "2018-05-02 09:00:00+00:00"


def test_options(corpus, caplog):
    with caplog.at_level(logging.INFO, logger="tempoformer.data.ingest.chitchat"):
        df = chitchat.read(corpus, max_timelines=2, max_posts_per_timeline=2)
    assert timelines(df) == {"A": EXPECTED["A"][:2], "B": EXPECTED["B"]}
    assert "cut 3 post(s)" in caplog.text and "first 2 of 3 senders" in caplog.text
    df = chitchat.read(corpus, min_posts_per_timeline=3)
    assert timelines(df) == {"A": EXPECTED["A"]}
    # The sender filter applies before max_timelines: B and C (2 posts) are left out first.
    df = chitchat.read(corpus, min_posts_per_timeline=3, max_timelines=2)
    assert timelines(df) == {"A": EXPECTED["A"]}


@pytest.mark.slow
def test_packaged_corpus_small_options_are_deterministic():
    options = dict(max_timelines=3, max_posts_per_timeline=60, min_posts_per_timeline=60)
    first = ingest("chitchat", None, **options)
    second = chitchat.read(None, **options)
    assert first.equals(second)
    assert first.n_unique("timeline_id") == 3
    assert first.group_by("timeline_id").len()["len"].to_list() == [60, 60, 60]
    assert set(first["label"]) == {"New", "Cont"}
    # "New" exactly where the timeline enters a conversation it has not been in before.
    conv = first.with_columns(conv=pl.col("post_id").str.split(":").list.first())
    expected_new = conv.with_columns(
        new=pl.col("conv").is_first_distinct().over("timeline_id"))
    assert (expected_new["new"] == (first["label"] == "New")).all()
    # Senders are the first ones in sorted id order among those with at least 60 posts.
    ids = first["timeline_id"].unique().sort().to_list()
    assert ids == sorted(ids) and len(ids) == 3


def raises_input_error(call, file_name, record, problem):
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert file_name in message and record in message and problem in message, message


def test_bad_input(tmp_path, corpus):
    raises_input_error(lambda: chitchat.read(tmp_path / "missing.json"), "missing.json", "-",
                       "no such file")

    bad = tmp_path / "bad.json"
    bad.write_text('{"c1": {"messages": [[{"text": "hi",')
    raises_input_error(lambda: chitchat.read(bad), "bad.json", "line 1", "malformed JSON")

    data = json.loads(json.dumps(CORPUS))
    del data["c1"]["messages"][1][0]["sender"]
    bad.write_text(json.dumps(data))
    raises_input_error(lambda: chitchat.read(bad), "bad.json", "conversation c1 turn 1 utterance 0",
                       "missing field 'sender'")

    data = json.loads(json.dumps(CORPUS))
    data["c2"]["messages"][1][1]["timestamp"] = "02/05/2018 10:00"
    bad.write_text(json.dumps(data))
    raises_input_error(lambda: chitchat.read(bad), "bad.json", "conversation c2 turn 1 utterance 1",
                       "unparseable timestamp")

    data = json.loads(json.dumps(CORPUS))
    data["c5"] = {"messages": []}
    bad.write_text(json.dumps(data))
    raises_input_error(lambda: chitchat.read(bad), "bad.json", "conversation c5", "empty timeline")

    # A repeated conversation id would make json keep only the last one: a duplicate post id.
    text = json.dumps(CORPUS)
    bad.write_text(text[:-1] + ', "c3": ' + json.dumps(CORPUS["c3"]) + "}")
    raises_input_error(lambda: chitchat.read(bad), "bad.json", "key 'c3'", "duplicate")

    raises_input_error(lambda: chitchat.read(corpus, min_posts_per_timeline=9), "dataset.json", "-",
                       "no sender")


def test_dataset_labels_are_checked_naming_the_utterance(corpus):
    assert ingest("chitchat", corpus, labels=["New", "Cont"]).height == 9
    # A's second post (c1 turn 0 utterance 1) is the first Cont derived
    raises_input_error(lambda: ingest("chitchat", corpus, labels=["New"]), "dataset.json",
                       "conversation c1 turn 0 utterance 1",
                       "unknown label 'Cont': not one of the dataset's labels ['New']")


def test_timestamp_after_latest_is_refused(tmp_path, corpus):
    data = json.loads(json.dumps(CORPUS))
    data["c1"]["messages"][1][0]["timestamp"] = "2999-05-02T09:00:03Z"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    raises_input_error(lambda: chitchat.read(bad), "bad.json", "conversation c1 turn 1 utterance 0",
                       "timestamp 2999-05-02T09:00:03+00:00 is after latest_timestamp now")
    raises_input_error(lambda: chitchat.read(corpus, latest_timestamp="2018-05-02T09:00:00Z"),
                       "dataset.json", "conversation c2 turn 0 utterance 0",
                       "; 6 of 9 timestamp(s) read are out of range")  # 09:00:00 itself is in
