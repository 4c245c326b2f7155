"""Future LM data: readers, the counted filter, splits, history, per-year frequencies."""

import gzip
import json
import math

import numpy as np
import pytest

from conftest import SHARED_DATA
from tempoformer.errors import InputError
from tempoformer.future_lm.data import (FilterSettings, Record, YearSplits, build_corpus, history_years,
                                        read_anthology_jsonl, read_authors_lines, read_sources)
from tempoformer.future_lm.frequency import scale_minmax, smoothed_log_frequency, year_counts

ACL = SHARED_DATA / "acl_abstracts"
LONG = "word " * 12  # more than 10 words: kept by the filter


def write_jsonl(path, records):
    with gzip.open(path, "wt") as handle:
        for r in records:
            handle.write(json.dumps(r) + "\n")
    return path


def rec(i, year, text=LONG, title="t"):
    return {"id": f"P{i}", "year": year, "abstract": text, "title": title}


# ---------------------------------------------------------------- frequencies


def test_smoothed_log_frequencies_by_hand_on_three_years():
    # vocabulary of 4 entries (0..3), EOS = 3; one or two documents per year
    docs = [[0, 0, 1], [1], [2, 2, 2, 0]]
    years = [2001, 2001, 2002]
    docs.append([])          # an empty document of 2003: only its EOS
    years.append(2003)
    got_years, counts = year_counts(docs, years, vocab_size=4, eos=3)
    assert got_years == [2001, 2002, 2003]
    # 2001: w0 twice, w1 twice, EOS twice; 2002: w0 once, w2 three times, EOS once; 2003: EOS once
    assert counts.tolist() == [[2, 2, 0, 2], [1, 0, 3, 1], [0, 0, 0, 1]]
    log_f = smoothed_log_frequency(counts, smoothing=1.0)
    # add-one: (c + 1) / (N + V), N = 6, 5, 1 and V = 4
    expected = [[math.log(3 / 10), math.log(3 / 10), math.log(1 / 10), math.log(3 / 10)],
                [math.log(2 / 9), math.log(1 / 9), math.log(4 / 9), math.log(2 / 9)],
                [math.log(1 / 5), math.log(1 / 5), math.log(1 / 5), math.log(2 / 5)]]
    np.testing.assert_allclose(log_f, expected, rtol=1e-12)
    np.testing.assert_allclose(np.exp(log_f).sum(axis=1), 1.0)  # each year a distribution
    # an absent year (all zeros) is uniform; the authors' scaling maps each year into ±bound
    np.testing.assert_allclose(smoothed_log_frequency(np.zeros((1, 4))), [[math.log(1 / 4)] * 4])
    scaled = scale_minmax(log_f, 0.5)
    assert np.allclose(scaled.min(axis=1), -0.5) and np.allclose(scaled.max(axis=1), 0.5)


# ---------------------------------------------------------------- history


@pytest.mark.parametrize("shortcut", [False, True])
def test_no_document_ever_sees_its_own_year_or_a_later_one(shortcut):
    rng = np.random.default_rng(0)
    for _ in range(300):
        last_train = int(rng.integers(1995, 2025))
        year = int(rng.integers(1990, 2035))
        window = int(rng.integers(1, 12))
        hist = history_years(year, window, last_train, shortcut)
        assert len(hist) == window and hist == sorted(hist)
        assert max(hist) < year, (year, window, last_train, hist)
        if not shortcut or year <= last_train + 1:
            assert hist[-1] == year - 1  # the most recent past year is always read
        else:
            assert hist[-1] == last_train  # the authors' shortcut skips the years after training


def test_test_year_sees_the_dev_year_unless_the_authors_shortcut():
    assert history_years(2021, 2, 2019) == [2019, 2020]
    assert history_years(2021, 2, 2019, shortcut=True) == [2018, 2019]
    assert history_years(2020, 2, 2019, shortcut=True) == [2018, 2019]


# ---------------------------------------------------------------- readers, filter, splits


def test_filter_reasons_are_counted_and_nothing_is_dropped_silently(tmp_path):
    records = [rec(0, 2018), rec(1, 2018, "the shared task on " + LONG), rec(2, 2018, title="SemEval-2018 Task 3"),
               rec(3, 2018, "too short"), rec(4, 2019), rec(5, 2019), rec(6, 2020), rec(7, 2021)]
    path = write_jsonl(tmp_path / "a.jsonl.gz", records)
    corpus = build_corpus(read_anthology_jsonl(path), YearSplits.from_dict({"train": [2018, 2019], "dev": 2020,
                                                                           "test": 2021}), FilterSettings())
    c2018 = corpus.counts["2018"]
    assert (c2018["raw"], c2018["dropped_shared_task"], c2018["dropped_semeval_title"], c2018["dropped_short"],
            c2018["kept"]) == (4, 1, 1, 1, 1)
    for e in corpus.counts.values():
        assert e["raw"] == e["kept"] + sum(v for k, v in e.items() if k.startswith("dropped_"))
    assert [r.doc_id for r in corpus.records] == ["P0", "P4", "P5", "P6", "P7"]


def test_cap_is_a_counted_seeded_sample(tmp_path):
    records = [rec(i, 2018) for i in range(10)] + [rec(20, 2019), rec(21, 2020)]
    splits = YearSplits.from_dict({"train": [2018, 2018], "dev": 2019, "test": 2020})
    a = build_corpus([Record(r["id"], r["year"], r["abstract"], r["title"]) for r in records], splits,
                     FilterSettings(), {"train": 4, "seed": 1})
    b = build_corpus([Record(r["id"], r["year"], r["abstract"], r["title"]) for r in records], splits,
                     FilterSettings(), {"train": 4, "seed": 1})
    assert a.counts["2018"]["used"] == 4 and a.counts["2018"]["capped_out"] == 6
    assert [r.doc_id for r in a.records] == [r.doc_id for r in b.records]


def test_a_year_that_does_not_parse_names_the_record(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl.gz", [rec(0, 2018), rec(1, "20x9")])
    with pytest.raises(InputError) as error:
        read_anthology_jsonl(path)
    assert "line 2" in str(error.value) and "'P1'" in str(error.value) and "20x9" in str(error.value)


def test_an_authors_file_whose_year_does_not_parse_names_the_file(tmp_path):
    (tmp_path / "papers_2019.txt").write_text("one abstract\n\nanother\n")
    (tmp_path / "papers_20l8.txt").write_text("x\n")
    with pytest.raises(InputError) as error:
        read_authors_lines(tmp_path)
    assert "papers_20l8.txt" in str(error.value) and "does not parse" in str(error.value)
    (tmp_path / "papers_20l8.txt").unlink()
    records, blank = read_authors_lines(tmp_path)
    assert [r.text for r in records] == ["one abstract", "another"] and blank == {2019: 1}


def test_an_empty_year_names_the_year(tmp_path):
    # 2020 (dev) has one abstract, and the filter drops it
    path = write_jsonl(tmp_path / "a.jsonl.gz", [rec(0, 2018), rec(1, 2020, "short one"), rec(2, 2021)])
    splits = YearSplits.from_dict({"train": [2018, 2018], "dev": 2020, "test": 2021})
    with pytest.raises(InputError) as error:
        build_corpus(read_anthology_jsonl(path), splits, FilterSettings())
    assert "year 2020 (dev)" in str(error.value) and "after the filter" in str(error.value)
    # a training year with no record at all
    splits = YearSplits.from_dict({"train": [2017, 2018], "dev": 2021, "test": 2022})
    with pytest.raises(InputError) as error:
        build_corpus(read_anthology_jsonl(path), splits, FilterSettings())
    assert "year 2017 (train)" in str(error.value)


def test_a_missing_split_is_refused():
    with pytest.raises(InputError) as error:
        YearSplits.from_dict({"train": [2003, 2019], "test": 2021})
    assert "missing split 'dev'" in str(error.value)
    with pytest.raises(InputError):
        YearSplits.from_dict({"train": [2003, 2019], "dev": 2019, "test": 2021})  # dev inside training


def test_each_year_comes_from_the_first_source_listing_it(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl.gz", [rec(0, 2018), rec(1, 2019)])
    (tmp_path / "authors").mkdir()
    (tmp_path / "authors" / "papers_2018.txt.gz").write_bytes(gzip.compress(b"from the authors' file\n"))
    records, _ = read_sources([{"format": "authors_lines", "path": str(tmp_path / "authors"), "years": [2018]},
                               {"format": "anthology_jsonl", "path": str(path), "years": None}])
    assert sorted((r.year, r.source) for r in records) == [(2018, "authors"), (2019, "anthology")]


@pytest.mark.skipif(not ACL.is_dir(), reason="../shared/data/acl_abstracts is absent")
def test_reader_and_filter_counts_match_source_md():
    records = read_anthology_jsonl(ACL / "anthology_abstracts_2000_2022.jsonl.gz")
    assert len(records) == 38567
    splits = YearSplits.from_dict({"train": [2003, 2019], "dev": 2020, "test": 2021, "future": [2022]})
    counts = build_corpus(records, splits, FilterSettings()).counts
    kept = {int(y): e["kept"] for y, e in counts.items()}
    # shared/data/acl_abstracts/SOURCE.md: after the paper filter
    assert sum(kept[y] for y in range(2003, 2020)) == 15888
    assert (kept[2020], kept[2021], kept[2022]) == (5857, 5341, 7344)
    assert counts["2019"]["stats"]["whitespace_words"] == 506469
