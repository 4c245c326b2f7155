"""`tempoformer ingest` and the other data subcommands on the command line: the dataset's
labels (--labels), reader options named and typed from the readers' signatures, help text."""

import argparse
import re

import pytest

from tempoformer.cli import build_parser, main
from tempoformer.data.ingest import READERS, reader_options

LINES = "timeline_id,post_id,text,label\nt,1,x,a\nt,2,y,c\n"


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(LINES)
    return path


def run(capsys, *argv):
    code = main(["ingest", *argv])
    return code, capsys.readouterr().err


def test_labels_flag_stops_on_a_label_outside_them_naming_the_line(tmp_path, corpus, capsys):
    out = tmp_path / "posts.parquet"
    code, err = run(capsys, "--format", "generic", "--input", str(corpus), "--output", str(out),
                    "--labels", '["a", "b"]')
    assert code == 1 and not out.exists()
    assert (f"tempoformer ingest: error: {corpus}: record line 3 (timeline 't', post '2'): "
            "unknown label 'c': not one of the dataset's labels ['a', 'b']") in err, err
    code, err = run(capsys, "--format", "generic", "--input", str(corpus), "--output", str(out),
                    "--labels", '["a", "c"]')
    assert code == 0 and out.exists(), err


def test_labels_given_twice_must_agree(tmp_path, corpus, capsys):
    out = str(tmp_path / "posts.parquet")
    code, err = run(capsys, "--format", "generic", "--input", str(corpus), "--output", out,
                    "--labels", '["a", "c"]', "--options", '{"labels": ["a", "b"]}')
    assert code == 1 and "differ: give the dataset's labels once" in err, err
    code, err = run(capsys, "--format", "generic", "--input", str(corpus), "--output", out,
                    "--labels", '["a", "c"]', "--options", '{"labels": ["a", "c"]}')
    assert code == 0, err


def test_unknown_option_names_it_and_lists_what_the_format_takes(tmp_path, corpus, capsys):
    out = tmp_path / "posts.parquet"
    code, err = run(capsys, "--format", "generic", "--input", str(corpus), "--output", str(out),
                    "--options", '{"label": "y", "columns": null}')
    assert code == 1 and not out.exists() and "Traceback" not in err
    takes = ", ".join(reader_options("generic"))
    assert "columns, timestamp_format, earliest_timestamp, latest_timestamp" == takes
    assert (f"tempoformer ingest: error: unknown option(s) 'label' for format 'generic'; "
            f"it takes: {takes}") in err, err


@pytest.mark.parametrize("fmt, options, problem", [
    ("chitchat", '{"max_timelines": "16"}',
     "option 'max_timelines' of format 'chitchat' must be an integer or null, got '16'"),
    ("chitchat", '{"min_posts_per_timeline": true}',
     "option 'min_posts_per_timeline' of format 'chitchat' must be an integer, got True"),
    ("generic", '{"columns": ["timeline_id"]}',
     "option 'columns' of format 'generic' must be an object of strings or null"),
    ("generic", '{"latest_timestamp": 2020}',
     "option 'latest_timestamp' of format 'generic' must be a string or null, got 2020"),
    ("lrs", '{"annotations": [1]}',
     "option 'annotations' of format 'lrs' must be a string or a list of strings or null"),
])
def test_option_of_the_wrong_type_is_named(tmp_path, corpus, capsys, fmt, options, problem):
    code, err = run(capsys, "--format", fmt, "--input", str(corpus), "--output",
                    str(tmp_path / "p.parquet"), "--options", options)
    assert code == 1 and problem in err and "Traceback" not in err, err


@pytest.mark.parametrize("flag, value, problem", [
    ("--options", "[1]", "expected a JSON object"),
    ("--labels", '"M"', "expected a JSON list of class names"),
    ("--labels", "[]", "expected a JSON list of class names"),
])
def test_options_and_labels_must_be_the_right_json(tmp_path, corpus, capsys, flag, value, problem):
    with pytest.raises(SystemExit) as info:
        main(["ingest", "--format", "generic", "--input", str(corpus), "--output",
              str(tmp_path / "p.parquet"), flag, value])
    assert info.value.code == 2
    assert f"argument {flag}: {problem}" in capsys.readouterr().err


def test_ingest_help_lists_every_format_and_its_options(capsys):
    with pytest.raises(SystemExit) as info:
        main(["ingest", "--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # undo argparse's line wrapping
    assert f"reader: {', '.join(READERS)}" in text
    for fmt in READERS:
        options = reader_options(fmt)
        listed = re.search(rf"{fmt}: (.*?)(;|\(default: \{{\}}\)|$)", text.split("by format: ")[1])
        names = re.findall(r"(\w+) \(", listed[1]) if options else []
        assert names == list(options), (fmt, listed[1])
    assert 'latest_timestamp (a string or null, default "now")' in text
    assert "min_posts_per_timeline (an integer, default 1)" in text
    assert "topic_shift_mi: none" in text


DATA_COMMANDS = ("ingest", "synthetic-lrs", "windows", "folds", "embed")


@pytest.mark.parametrize("command", DATA_COMMANDS)
def test_every_data_flag_has_help_and_shows_its_default(command):
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices[command]
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help, f"{command} {action.option_strings} has no help"
        if action.default is not None and not action.required:
            shown = str(action.default)
            assert f"(default: {shown})" in text, (command, action.option_strings, text)
        elif not action.required:  # no default value: the help says what absence means
            assert "default:" in action.help, (command, action.option_strings)
