"""Generic reader: CSV / JSONL / Parquet round trips, ordering, options, bad input."""

import json
from datetime import datetime, timedelta, timezone

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
    # types: a text that is not text, an id that is neither text nor an integer (1 and 1.0 would
    # be two timelines), a key given twice (JSON would keep the last value)
    ("a.jsonl", '{"timeline_id": "t", "post_id": 1, "text": {"a": 1}}\n', {}, "line 1 (timeline 't', post 1)",
     "text {'a': 1} (column 'text') is a dict, not text"),
    ("a.jsonl", '{"timeline_id": 1, "post_id": 1, "text": "x"}\n{"timeline_id": 1.0, "post_id": 2, "text": "y"}\n',
     {}, "line 2 (timeline 1.0, post 2)", "timeline_id 1.0 (column 'timeline_id') is a float: an id must be text"),
    ("a.jsonl", '{"timeline_id": "t", "post_id": true, "text": "x"}\n', {}, "line 1", "post_id True"),
    ("a.jsonl", '{"timeline_id": "t", "post_id": 1, "text": "x", "label": [1]}\n', {}, "line 1",
     "label [1] (column 'label') is a list"),
    ("a.jsonl", '{"timeline_id": "t", "post_id": 1, "text": "x", "text": "y"}\n', {}, "line 1",
     "key 'text' appears twice"),
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


# --- timestamps outside [earliest_timestamp, latest_timestamp] (issue 16) -----------------


def stamped_csv(tmp_path, stamps, name="t.csv"):
    path = tmp_path / name
    path.write_text("timeline_id,post_id,text,timestamp\n"
                    + "".join(f"t,{i},x,{s}\n" for i, s in enumerate(stamps, 1)))
    return path


def test_timestamps_out_of_range_are_refused_naming_the_first_and_counting_all(tmp_path):
    path = stamped_csv(tmp_path, ["2020-01-01", "2999-01-01", "1969-12-31T23:59:59Z",
                                  "2998-01-01"])
    raises_input_error(lambda: ingest("generic", path), "t.csv",
                       "line 3 (timeline 't', post '2')",
                       "timestamp 2999-01-01T00:00:00+00:00 is after latest_timestamp now (")
    raises_input_error(lambda: ingest("generic", path), "t.csv", "line 3",
                       "3 of 4 timestamp(s) read are out of range")
    # JSONL numbers (Unix seconds) are held to the same range: -1 is 1969.
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text('{"timeline_id": "t", "post_id": 1, "text": "x", "timestamp": 0}\n'
                     '{"timeline_id": "t", "post_id": 2, "text": "y", "timestamp": -1}\n')
    raises_input_error(lambda: ingest("generic", jsonl), "t.jsonl", "line 2",
                       "timestamp 1969-12-31T23:59:59+00:00 is before earliest_timestamp "
                       "1970-01-01T00:00:00+00:00; 1 of 2")


def test_timestamp_bounds_are_reader_options(tmp_path):
    path = stamped_csv(tmp_path, ["1900-05-01", "2999-01-01"])
    df = ingest("generic", path, earliest_timestamp=None, latest_timestamp=None)
    assert df["timestamp"].dt.year().to_list() == [1900, 2999]
    # both ends inclusive; a date alone is its midnight (UTC)
    df = ingest("generic", path, earliest_timestamp="1900-05-01", latest_timestamp="2999-01-01")
    assert df.height == 2
    raises_input_error(
        lambda: ingest("generic", path, earliest_timestamp=None, latest_timestamp="2998-12-31"),
        "t.csv", "line 3", "after latest_timestamp 2998-12-31T00:00:00+00:00")
    raises_input_error(
        lambda: ingest("generic", path, earliest_timestamp="1900-05-01T00:00:01+00:00",
                       latest_timestamp=None),
        "t.csv", "line 2", "before earliest_timestamp 1900-05-01T00:00:01+00:00")
    with pytest.raises(ValueError, match="latest_timestamp must be an ISO 8601 date"):
        ingest("generic", path, latest_timestamp="tomorrow")
    with pytest.raises(ValueError, match="earliest_timestamp .* is after latest_timestamp"):
        ingest("generic", path, earliest_timestamp="2021-01-01", latest_timestamp="2020-01-01")


def test_now_allows_a_day_of_clock_and_zone_slack(tmp_path):
    now = datetime.now(timezone.utc).replace(tzinfo=None)  # stored without a zone, as UTC
    soon, later = (now + timedelta(hours=14)).isoformat(), (now + timedelta(days=2)).isoformat()
    assert ingest("generic", stamped_csv(tmp_path, [soon])).height == 1
    raises_input_error(lambda: ingest("generic", stamped_csv(tmp_path, [soon, later])), "t.csv",
                       "line 3", "after latest_timestamp now")


def test_csv_field_over_the_csv_module_default_limit(tmp_path):
    # csv refuses fields over 131,072 characters unless its limit is raised.
    path = tmp_path / "long.csv"
    long = "word " * 40_000
    path.write_text(f'timeline_id,post_id,text\nt,1,"{long}"\nt,2,short\n')
    df = ingest("generic", path)
    assert df["text"].str.len_chars().to_list() == [200_000, 5]


def test_float_ids_in_parquet_are_refused_not_turned_into_text(tmp_path):
    path = tmp_path / "a.parquet"
    pl.DataFrame({"timeline_id": [1.0, 2.0], "post_id": [1, 2], "text": ["x", "y"]}).write_parquet(path)
    raises_input_error(lambda: generic.read(path), "a.parquet", "row 0", "timeline_id 1.0 (column 'timeline_id') is a float")
