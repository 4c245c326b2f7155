"""Topic Shift MI reader: windows-1252 CSVs, dropped rows, class mapping, real counts."""

import logging
from pathlib import Path

import pytest

from tempoformer.data.ingest import ingest, topic_shift_mi
from tempoformer.data.posts import InputError

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "topic_shift_mi"
HEADER = ",Person,Conversation,Custom Tag,Custom Tag 2,Topic Description,Class\r\n"


def write(folder: Path, name: str, rows: list[str], header: str = HEADER) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes((header + "".join(r + "\r\n" for r in rows)).encode("windows-1252"))
    return path


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "mi"
    write(root, "3001.csv", [
        '0,A,"Hi, there.",opening,,,0',
        '2,A,It\u2019s caf\u00e9 time,major topic start,,"coffee, of course",1',  # 0x92, 0xe9
        '1,B,Hello.,,,,0',
        '3,B,,,,,2',  # empty Conversation: dropped
        '4,,Uh-huh.,,,,0',  # empty Person: dropped
        '5,B,"Sure, two sugars",,,,2',
    ])
    write(root, "2999.csv", ['0,A,Bye.,closing,,,0'])
    (root / "SOURCE.md").write_text("not a conversation")
    return root


def test_reads_sorted_files_ordered_rows_and_maps_classes(folder, caplog):
    with caplog.at_level(logging.INFO, logger="tempoformer.data.ingest.topic_shift_mi"):
        df = ingest("topic_shift_mi", folder)
    assert df["timeline_id"].to_list() == ["2999", "3001", "3001", "3001", "3001"]
    assert df["post_id"].to_list() == ["2999:0", "3001:0", "3001:1", "3001:2", "3001:5"]
    assert df["text"].to_list() == ["Bye.", "Hi, there.", "Hello.", "It\u2019s caf\u00e9 time",
                                    "Sure, two sugars"]
    assert df["label"].to_list() == ["M", "M", "M", "R", "R"]
    assert df["timestamp"].null_count() == df.height
    assert "dropped 2 row(s) with empty Person or Conversation" in caplog.text
    assert "skipped 1 non-CSV file(s): SOURCE.md" in caplog.text


@pytest.mark.skipif(not REAL.is_dir(), reason=f"real Topic Shift MI data not found at {REAL}")
def test_real_counts():
    df = topic_shift_mi.read(REAL)
    assert df.n_unique("timeline_id") == 74
    assert df.height == 12536
    assert (df["label"] == "M").sum() == 4476
    assert df.group_by("timeline_id").len()["len"].median() == 153.5


def raises_input_error(call, file_name, record, problem):
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert file_name in message and record in message and problem in message, message


def test_bad_input(tmp_path, folder):
    read = topic_shift_mi.read
    raises_input_error(lambda: read(tmp_path / "none"), "none", "-", "no such folder")
    raises_input_error(lambda: read(tmp_path / "mi" / "2999.csv"), "2999.csv", "-",
                       "expected a folder")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    raises_input_error(lambda: read(empty_dir), "empty", "-", "no .csv files")

    def case(name, rows, record, problem, header=HEADER):
        root = tmp_path / name
        write(root, "3001.csv", ['0,A,fine,,,,0'])
        write(root, "4000.csv", rows, header)
        raises_input_error(lambda: read(root), "4000.csv", record, problem)

    case("quote", ['0,A,"broken,,,,0', '1,B,x,,,,0'], "line", "malformed CSV")
    case("ragged", ['0,A,ok,,,,0', '1,B,x,,0'], "line 3", "expected 7 fields, found 5")
    case("nocol", ['0,A,x,,,'], "header", "missing column(s) ['Class']",
         header=",Person,Conversation,Custom Tag,Custom Tag 2,Topic Description\r\n")
    case("class", ['0,A,x,,,,0', '1,B,y,,,,3'], "line 3 (utterance '1')", "unknown Class '3'")
    case("dupe", ['0,A,x,,,,0', '0,B,y,,,,1'], "line 3 (utterance '0')", "duplicate utterance index")
    case("index", ['zero,A,x,,,,0'], "line 2", "not an integer")
    case("empty", ['0,,,,,,0'], "-", "empty timeline")
    root = tmp_path / "encoding"
    root.mkdir()
    (root / "4000.csv").write_bytes(HEADER.encode() + b"0,A,bad \x81 byte,,,,0\r\n")
    raises_input_error(lambda: read(root), "4000.csv", "byte", "not windows-1252")


def test_dataset_labels_are_checked_naming_the_line(folder):
    assert ingest("topic_shift_mi", folder, labels=["M", "R"]).height == 5
    # 2999.csv holds only M; in 3001.csv line 3 (utterance 2, Class 1) is the first R read
    with pytest.raises(InputError) as info:
        ingest("topic_shift_mi", folder, labels=["M"])
    assert info.value.path.endswith("3001.csv") and info.value.record == "line 3 (utterance '2')"
    assert "unknown label 'R': not one of the dataset's labels ['M']" in info.value.problem


def test_no_timestamps_so_no_timestamp_options(folder):
    with pytest.raises(ValueError,
                       match="unknown option.*'latest_timestamp'.*it takes: no options"):
        ingest("topic_shift_mi", folder, latest_timestamp=None)
