"""The canonical post table's contract (posts.py): validation errors name the source and the
record; write_parquet_atomic never leaves partial or temporary files. Also: the generic
reader's vectorised Parquet path gives exactly what its row-by-row path gives."""

from datetime import datetime, timedelta, timezone

import numpy as np
import polars as pl
import pytest

from tempoformer.data.ingest import _common, generic
from tempoformer.data.ingest._common import TimeRange
from tempoformer.data.posts import (
    POST_SCHEMA, InputError, posts_from_records, read_posts, validate_posts, write_parquet_atomic,
)

SOURCE = "corpus/posts.parquet"


@pytest.fixture
def posts(make_posts):
    # rows: 0 a-0, 1 a-1, 2 a-2, 3 b-0, 4 b-1
    return make_posts({"a": [(0, "N"), (60, "S"), (120, "N")], "b": [(5, "N"), (6, "N")]})


def set_cell(df: pl.DataFrame, row: int, column: str, value) -> pl.DataFrame:
    return df.with_columns(df[column].scatter([row], value))


def rejects(df, record, problem, labels=None):
    with pytest.raises(InputError) as info:
        validate_posts(df, SOURCE, labels)
    message = str(info.value)
    assert message.startswith(f"{SOURCE}: record {record}: "), message
    assert problem in message, message
    assert info.value.path == SOURCE and info.value.record == record
    return info.value


def test_a_valid_table_passes_unchanged(posts):
    assert validate_posts(posts, SOURCE, ["N", "S"]).equals(posts)
    assert posts.schema == pl.Schema(POST_SCHEMA)
    assert posts["position"].to_list() == [0, 1, 2, 0, 1]


def test_duplicate_post_id(posts):
    rejects(set_cell(posts, 2, "post_id", "a-1"), "timeline 'a' post 'a-1'", "duplicate post_id")
    # the same id in two datasets is two posts
    other = posts.with_columns(dataset=pl.lit("other"))
    validate_posts(pl.concat([posts.filter(pl.col("timeline_id") == "a"),
                              other.filter(pl.col("timeline_id") == "b")]), SOURCE)


def test_unsorted_rows_name_the_first_row_out_of_order(posts):
    swapped = posts[[0, 1, 3, 4, 2]]  # timeline a's last post after timeline b
    rejects(swapped, "timeline 'a' post 'a-2'", "rows are not sorted by (timeline_id, position)")
    within = posts[[0, 2, 1, 3, 4]]  # positions 0, 2, 1 inside timeline a
    rejects(within, "timeline 'a' post 'a-1'", "rows are not sorted")


@pytest.mark.parametrize("row, position, record", [
    (2, 3, "timeline 'a' post 'a-2'"),   # 0, 1, 3: a gap
    (0, 1, "timeline 'a' post 'a-0'"),   # 1, 1, 2: does not start at 0 (and repeats)
    (4, 0, "timeline 'b' post 'b-1'"),   # 0, 0: a repeat
])
def test_positions_not_0_to_n_minus_1(posts, row, position, record):
    rejects(set_cell(posts, row, "position", position), record, "positions are not 0..N-1")


def test_timestamp_going_backwards(posts):
    earlier = datetime(2020, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=30)
    rejects(set_cell(posts, 2, "timestamp", earlier), "timeline 'a' post 'a-2'",
            "timestamp earlier than previous post")
    # equal times are fine, and a timeline may start before the previous timeline ends
    same = datetime(2020, 1, 1, 0, 1, tzinfo=timezone.utc)
    validate_posts(set_cell(posts, 2, "timestamp", same), SOURCE)


def test_unknown_label(posts):
    rejects(posts, "timeline 'a' post 'a-1'", "unknown label 'S'", labels=["N"])
    unlabelled = set_cell(posts, 1, "label", None)  # null = unlabelled, always allowed
    validate_posts(unlabelled, SOURCE, ["N"])


@pytest.mark.parametrize("column", ["timeline_id", "post_id", "position", "text"])
def test_empty_required_field(posts, column):
    record = "timeline None post 'a-1'" if column == "timeline_id" else (
        "timeline 'a' post None" if column == "post_id" else "timeline 'a' post 'a-1'")
    rejects(set_cell(posts, 1, column, None), record, f"{column} is empty")


def test_missing_column(posts):
    rejects(posts.drop("label"), "-", "missing column(s) ['label']")


def test_posts_from_records_orders_and_numbers():
    t = datetime(2021, 5, 1, tzinfo=timezone.utc)
    records = [
        dict(timeline_id="z", post_id="z2", order=2, timestamp=t, text="c", label=None),
        dict(timeline_id="y", post_id="y1", order=1, timestamp=None, text="b", label="L"),
        dict(timeline_id="z", post_id="z1", order=1, timestamp=t, text="a", label="L"),
    ]
    df = posts_from_records(records, "d", SOURCE)
    assert df["post_id"].to_list() == ["y1", "z1", "z2"]
    assert df["position"].to_list() == [0, 0, 1]
    with pytest.raises(InputError, match="no posts were read"):
        posts_from_records([], "d", SOURCE)


def test_write_parquet_atomic_round_trip(tmp_path, posts):
    out = tmp_path / "sub" / "posts.parquet"
    write_parquet_atomic(posts, out)
    assert read_posts(out).equals(posts)
    assert [p.name for p in out.parent.iterdir()] == ["posts.parquet"]


@pytest.mark.parametrize("existing", [False, True])
def test_failed_write_leaves_no_file_and_no_temp(tmp_path, posts, monkeypatch, existing):
    out = tmp_path / "posts.parquet"
    if existing:
        out.write_bytes(b"previous output")

    def broken_write(self, file, *args, **kwargs):
        with open(file, "wb") as f:  # a partial file, then the failure
            f.write(b"PAR1 half")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", broken_write)
    with pytest.raises(OSError, match="disk full"):
        write_parquet_atomic(posts, out)
    if existing:  # the previous output is untouched, never half-overwritten
        assert out.read_bytes() == b"previous output"
        assert [p.name for p in tmp_path.iterdir()] == ["posts.parquet"]
    else:
        assert list(tmp_path.iterdir()) == []


def test_interrupted_write_leaves_no_temp(tmp_path, posts, monkeypatch):
    def interrupted(self, file, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pl.DataFrame, "write_parquet", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_parquet_atomic(posts, tmp_path / "posts.parquet")
    assert list(tmp_path.iterdir()) == []


# --- generic reader: the vectorised Parquet path against the row-by-row path ---------------

N = 60
SECONDS = np.random.default_rng(0).integers(1_500_000_000, 1_500_000_500, N)  # many ties
TIMESTAMPS = {
    "datetime_utc": pl.Series(SECONDS * 1_000_000).cast(pl.Datetime("us", "UTC")),
    "datetime_ms_naive": pl.Series(SECONDS * 1000).cast(pl.Datetime("ms")),
    "datetime_ns_paris": pl.Series(SECONDS * 10**9).cast(pl.Datetime("ns", "UTC"))
    .dt.convert_time_zone("Europe/Paris"),
    "datetime_ns_fraction": pl.Series(SECONDS * 10**9 + 7).cast(pl.Datetime("ns")),
    "date": pl.Series(SECONDS * 1_000_000).cast(pl.Datetime("us")).cast(pl.Date),
    "int_seconds": pl.Series(SECONDS),
    "uint32_seconds": pl.Series(SECONDS).cast(pl.UInt32),
    # fractions that round half to even at the microsecond, as datetime.fromtimestamp does
    "float_seconds": pl.Series(SECONDS + np.resize([0.0, 0.5e-6, 1.5e-6, 2.5e-6, 0.1234565], N)),
    "iso_text": pl.Series(SECONDS * 1_000_000).cast(pl.Datetime("us", "UTC"))
    .dt.convert_time_zone("Asia/Kolkata").dt.strftime("%Y-%m-%dT%H:%M:%S%z"),
    "nan": pl.Series(np.where(np.arange(N) == 17, np.nan, SECONDS + 0.5)),
    "null": pl.Series(SECONDS).scatter([23], None),
    "bool": pl.Series([True] * N),
    "out_of_range": pl.Series(np.where(np.arange(N) == 9, 10**13, SECONDS)),
    "bad_text": pl.Series(["2020-01-01T00:00:00"] * (N - 1) + ["soon"]),
    # valid timestamps outside the accepted range (1970 to now): refused by both paths alike
    "year_2999": pl.Series(SECONDS * 1_000_000).cast(pl.Datetime("us")).scatter(
        [11], datetime(2999, 1, 1)),
    "before_1970": pl.Series(np.where(np.arange(N) == 5, -1, SECONDS)),
}
LABELS = {
    "text_with_empty_and_null": pl.Series(np.resize(["a", "b", "", "N"], N)).replace("N", None),
    "int": pl.Series(np.resize([0, 1], N)),
    "all_null": pl.Series([None] * N),
    "categorical": pl.Series(np.resize(["a", "b"], N)).cast(pl.Categorical),
}


def row_path(path, **options):
    return generic._read_rows(generic._parquet_rows(path), path, "generic",
                              options.get("columns"), options.get("labels"),
                              options.get("timestamp_format"), TimeRange())


def outcome(call):
    try:
        return call()
    except InputError as e:
        return str(e)


@pytest.fixture
def frozen_now(monkeypatch):
    # Both read paths put the "now" bound, to the second, into their error messages; one clock
    # reading for both keeps two reads that straddle a second from differing.
    now = _common._bound("now", "latest_timestamp")
    bound = _common._bound
    monkeypatch.setattr(_common, "_bound", lambda value, name: now if (
        value == "now" and name == "latest_timestamp") else bound(value, name))


def same_as_row_path(path, **options):
    fast = outcome(lambda: generic.read(path, **options))
    rows = outcome(lambda: row_path(path, **options))
    if isinstance(rows, str):
        assert fast == rows
    else:
        assert isinstance(fast, pl.DataFrame) and fast.equals(rows), (fast, rows)
    return fast


@pytest.mark.parametrize("stamps", sorted(TIMESTAMPS))
@pytest.mark.parametrize("labels", sorted(LABELS))
@pytest.mark.parametrize("allowed", [None, ["a", "b"]])
def test_generic_parquet_fast_path_equals_row_path(tmp_path, frozen_now, stamps, labels,
                                                    allowed):
    df = pl.DataFrame({
        "u": [f"user{i % 7}" for i in range(N)], "id": [f"p{i}" for i in range(N)],
        "t": TIMESTAMPS[stamps], "body": [f"text {i}" for i in range(N)], "y": LABELS[labels],
    })
    path = tmp_path / "posts.parquet"
    df[np.random.default_rng(1).permutation(N)].write_parquet(path)
    columns = {"timeline_id": "u", "post_id": "id", "timestamp": "t", "text": "body", "label": "y"}
    result = same_as_row_path(path, columns=columns, labels=allowed)
    # the vectorised path really ran on every valid file, and gave up on every bad one
    bad = stamps in ("nan", "null", "bool", "out_of_range", "bad_text", "year_2999",
                     "before_1970") or (
        labels == "int" and allowed is not None)
    assert isinstance(result, str) == bad
    uses_fast = generic._parquet_fast(path, "generic", columns, allowed, None,
                                      TimeRange()) is not None
    assert uses_fast == (not bad and stamps != "datetime_ns_fraction")


@pytest.mark.parametrize("case", ["int_ids", "blank_timeline", "duplicate_id", "null_text",
                                  "empty_text", "empty_file", "missing_column", "format"])
def test_generic_parquet_fast_path_equals_row_path_edge_cases(tmp_path, frozen_now, case):
    df = pl.DataFrame({"timeline_id": [i % 3 for i in range(N)], "post_id": list(range(N)),
                       "text": [f"t{i}" for i in range(N)]})
    options = {}
    if case == "blank_timeline":
        df = df.with_columns(df["timeline_id"].cast(pl.String).scatter([5], " \x1c"))
    elif case == "duplicate_id":
        df = df.with_columns(df["post_id"].scatter([5], 7))
    elif case == "null_text":
        df = df.with_columns(df["text"].scatter([5], None))
    elif case == "empty_text":  # empty text is a post; empty ids are not
        df = df.with_columns(df["text"].scatter([5], ""))
    elif case == "empty_file":
        df = df.head(0)
    elif case == "missing_column":
        df = df.drop("text")
    elif case == "format":
        days = [f"{1 + i % 28:02d}.01.2020 10:00" for i in range(N)]
        df = df.with_columns(timestamp=pl.Series(days))
        options = {"timestamp_format": "%d.%m.%Y %H:%M"}
    path = tmp_path / "posts.parquet"
    df.write_parquet(path)
    result = same_as_row_path(path, **options)
    expected_ok = case in ("int_ids", "empty_text", "format")
    assert isinstance(result, pl.DataFrame) == expected_ok, result
