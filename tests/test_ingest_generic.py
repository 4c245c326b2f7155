"""Generic reader: CSV / JSONL / Parquet round trips, ordering, options, bad input."""

import json
from datetime import datetime, timezone

import polars as pl
import pytest

from tempoformer.data.ingest import READERS, generic, ingest
from tempoformer.data.posts import InputError

COLUMNS = {"timeline_id": "user", "post_id": "id", "timestamp": "time", "text": "body",
           "label": "y"}


@pytest.fixture
def table(make_posts):
    return make_posts({
        "u1": [(0, "a"), (30, "b"), (30, "a"), (3600, None)],
        "u2": [(5, "b"), (86400, "b")],
        "u3": [(100, "a")],
    }, dataset="mine")


def as_file_rows(table: pl.DataFrame) -> pl.DataFrame:
    """The table in the file's own column names, rows out of time order except for the tie
    (u1-1 and u1-2 share a second, so only the file order can put them right)."""
    renamed = table.select(
        pl.col("timeline_id").alias("user"), pl.col("post_id").alias("id"),
        pl.col("timestamp").alias("time"), pl.col("text").alias("body"), pl.col("label").alias("y"),
    )
    order = ["u1-3", "u3-0", "u2-1", "u1-0", "u2-0", "u1-1", "u1-2"]
    return renamed.sort(pl.col("id").replace_strict(order, list(range(len(order)))))


def write(rows: pl.DataFrame, path, kind):
    if kind == "csv":
        rows.with_columns(pl.col("time").dt.strftime("%Y-%m-%dT%H:%M:%S%z")).write_csv(path)
    elif kind == "jsonl":
        with open(path, "w") as f:
            for r in rows.iter_rows(named=True):
                r["time"] = r["time"].timestamp()  # numbers are Unix seconds
                f.write(json.dumps(r) + "\n")
    else:
        rows.write_parquet(path)
    return path


@pytest.mark.parametrize("kind", ["csv", "jsonl", "parquet"])
def test_round_trip(tmp_path, table, kind):
    path = write(as_file_rows(table), tmp_path / f"posts.{kind}", kind)
    back = ingest("generic", path, dataset="mine", columns=COLUMNS, labels=["a", "b"])
    assert back.equals(table)


def test_same_second_keeps_file_order(tmp_path, table):
    # u1's second and third posts share a time; the file lists them in that order.
    back = generic.read(write(as_file_rows(table), tmp_path / "p.csv", "csv"), columns=COLUMNS)
    u1 = back.filter(pl.col("timeline_id") == "u1")
    assert u1["post_id"].to_list() == ["u1-0", "u1-1", "u1-2", "u1-3"]


def test_canonical_names_without_mapping_and_file_order(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("timeline_id,post_id,text\nt1,3,third\nt2,9,other\nt1,1,first\n")
    df = generic.read(path)
    assert df["post_id"].to_list() == ["3", "1", "9"]  # no timestamps: file order
    assert df["timestamp"].null_count() == 3 and df["label"].null_count() == 3
    assert df["dataset"][0] == "generic"


def test_timestamp_format(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("timeline_id,post_id,text,timestamp\nt,a,x,05.01.2020 10:00\n"
                    "t,b,y,04.01.2020 10:00\n")
    df = generic.read(path, timestamp_format="%d.%m.%Y %H:%M")
    assert df["post_id"].to_list() == ["b", "a"]
    assert df["timestamp"][0] == datetime(2020, 1, 4, 10, tzinfo=timezone.utc)


def raises_input_error(call, file_name, record, problem):
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert file_name in message and record in message and problem in message, message


@pytest.mark.parametrize("name, content, options, record, problem", [
    ("a.csv", "timeline_id,post_id,text,label\nt,1,x,a\nt,2,y,c\n", {"labels": ["a", "b"]},
     "line 3 (timeline 't', post '2')", "unknown label 'c'"),
    ("a.csv", "timeline_id,post_id,text\nt,1,x\nu,1,y\n", {}, "line 3", "duplicate post_id"),
    ("a.csv", "timeline_id,post_id,body\nt,1,x\n", {}, "line 2", "missing column(s) ['text']"),
    ("a.csv", "timeline_id,post_id,text,timestamp\nt,1,x,soon\n", {}, "line 2",
     "unparseable timestamp 'soon'"),
    ("a.csv", "timeline_id,post_id,text\nt,1,\"x\n", {}, "line", "malformed CSV"),
    ("a.jsonl", '{"timeline_id": "t", "post_id": 1, "text": "x"}\n{"timeline_id": "t", ', {},
     "line 2", "malformed JSON"),
    ("a.jsonl", '{"timeline_id": "t", "post_id": 1, "text": "x"}\n{"timeline_id": "t", '
     '"post_id": 2}\n', {}, "line 2", "missing field(s) ['text']"),
    ("a.parquet", "not parquet", {}, "-", "not a readable Parquet file"),
    ("a.txt", "x", {}, "-", "unknown extension"),
    ("a.csv", "timeline_id,post_id,text\n", {}, "-", "empty: no posts"),
])
def test_bad_input(tmp_path, name, content, options, record, problem):
    path = tmp_path / name
    path.write_text(content)
    raises_input_error(lambda: generic.read(path, **options), name, record, problem)


def test_missing_file_and_unknown_format(tmp_path):
    raises_input_error(lambda: generic.read(tmp_path / "x.csv"), "x.csv", "-", "no such file")
    with pytest.raises(ValueError, match="unknown format"):
        ingest("nope", tmp_path / "x.csv")
    assert set(READERS) == {"chitchat", "lrs", "topic_shift_mi", "talklife", "generic"}
    assert all(hasattr(m, "read") and isinstance(m.LABELS, tuple) for m in READERS.values())
