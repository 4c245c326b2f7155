"""TalkLife reader, on a synthetic file of the Moments of Change form."""

import pytest

from tempoformer.data.ingest import ingest, talklife
from tempoformer.data.posts import InputError

HEADER = "timeline_id,post_id,datetime,content,label\n"
ROWS = [
    "u1,p3,2019-03-02 10:00:00,feeling better today,0",
    "u1,p1,2019-03-01 08:00:00,\"bad night, again\",IS",
    "u1,p2,2019-03-01 09:30:00,can't stop crying,ISB",
    "u2,p5,2019-04-10T12:00:00+02:00,new job!!,IEP",
    "u2,p4,2019-04-10T09:00:00Z,nervous about monday,0",
    "u2,p6,2019-04-10 10:00:00,it went great,IE",
]


def write(tmp_path, rows, header=HEADER, name="moc.csv"):
    path = tmp_path / name
    path.write_text(header + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_labels_and_time_order(tmp_path):
    df = ingest("talklife", write(tmp_path, ROWS))
    assert df["timeline_id"].to_list() == ["u1"] * 3 + ["u2"] * 3
    # u2: 09:00Z, 10:00 (naive = UTC), 12:00+02:00 = 10:00Z ties 10:00 -> file order (p5 first).
    assert df["post_id"].to_list() == ["p1", "p2", "p3", "p4", "p5", "p6"]
    assert df["label"].to_list() == ["IS", "IS", "O", "O", "IE", "IE"]
    assert df["text"][0] == "bad night, again"
    assert df["dataset"][0] == "talklife"
    assert talklife.LABELS == ("IS", "IE", "O")


def test_timestamp_format_option(tmp_path):
    rows = ["u1,a,02/03/2019 10:00,x,0", "u1,b,01/03/2019 10:00,y,IS"]
    df = talklife.read(write(tmp_path, rows), timestamp_format="%d/%m/%Y %H:%M")
    assert df["post_id"].to_list() == ["b", "a"]


def raises_input_error(call, file_name, record, problem):
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert file_name in message and record in message and problem in message, message


@pytest.mark.parametrize("rows, header, record, problem", [
    (["u1,p1,2019-03-01 08:00:00,x,IX"], HEADER, "line 2 (timeline 'u1', post 'p1')",
     "unknown label 'IX'"),
    (["u1,p1,2019-03-01 08:00:00,x,0", "u1,p1,2019-03-02 08:00:00,y,0"], HEADER,
     "line 3 (timeline 'u1', post 'p1')", "duplicate post_id (also on line 2)"),
    (["u1,p1,yesterday,x,0"], HEADER, "line 2", "unparseable timestamp 'yesterday'"),
    (["u1,p1,2019-03-01,x"], HEADER, "line 2", "expected 5 fields, found 4"),
    (["u1,p1,2019-03-01,\"x,0"], HEADER, "line", "malformed CSV"),
    (["u1,p1,x,0"], "timeline_id,post_id,content,label\n", "header", "['datetime']"),
    ([",p1,2019-03-01,x,0"], HEADER, "line 2", "empty timeline_id"),
    ([], HEADER, "-", "empty: no posts"),
])
def test_bad_input(tmp_path, rows, header, record, problem):
    path = write(tmp_path, rows, header)
    raises_input_error(lambda: talklife.read(path), "moc.csv", record, problem)


def test_missing_file(tmp_path):
    raises_input_error(lambda: talklife.read(tmp_path / "gone.csv"), "gone.csv", "-", "no such file")


def test_dataset_labels_are_checked_after_the_mapping(tmp_path):
    path = write(tmp_path, ROWS)
    assert ingest("talklife", path, labels=list(talklife.LABELS)).height == len(ROWS)
    # line 5 is the first whose mapped label (IEP -> IE) is not among the dataset's labels
    raises_input_error(lambda: ingest("talklife", path, labels=["IS", "O"]), "moc.csv",
                       "line 5 (timeline 'u2', post 'p5')",
                       "unknown label 'IE': not one of the dataset's labels ['IS', 'O']")


def test_timestamp_after_latest_is_refused(tmp_path):
    rows = ROWS + ["u3,p7,2999-01-01 00:00:00,from the future,0"]
    raises_input_error(lambda: talklife.read(write(tmp_path, rows)), "moc.csv",
                       "line 8 (timeline 'u3', post 'p7')",
                       "timestamp 2999-01-01T00:00:00+00:00 is after latest_timestamp now")
    assert talklife.read(write(tmp_path, rows), latest_timestamp="3000-01-01").height == 7


def test_field_over_131072_characters(tmp_path):
    long = "x" * 200_000
    df = talklife.read(write(tmp_path, [f"u1,p1,2019-03-01 08:00:00,{long},0"]))
    assert df["text"][0] == long
