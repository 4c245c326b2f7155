"""DCWE corpora: the chitchat construction, the CSV and authors' readers, bad input, Table 1 statistics."""

import json
import pickle

import pytest

from tempoformer.cli import main
from tempoformer.dcwe.data import chitchat_corpus, load_corpus, read_corpus, read_csv_corpus, read_release, split_by_time
from tempoformer.errors import InputError


def write_csv(path, header, rows):
    path.write_text("\n".join([",".join(header)] + [",".join(map(str, r)) for r in rows]) + "\n")
    return path


DOCS = [("a", 0, "one two three four five six"), ("b", 0, "seven eight nine ten"), ("c", 1, "eleven twelve"),
        ("a", 1, "thirteen fourteen"), ("b", 2, "fifteen sixteen"), ("c", 2, "seventeen")]


@pytest.fixture
def csv_corpus(tmp_path):
    docs = write_csv(tmp_path / "docs.csv", ["unit", "time", "text"], DOCS)
    edges = write_csv(tmp_path / "edges.csv", ["source", "target"], [("a", "b"), ("b", "c")])
    return docs, edges


def test_csv_reader(csv_corpus):
    corpus = read_csv_corpus(*csv_corpus, name="toy")
    assert corpus.units == ["a", "b", "c"] and corpus.edges == [(0, 1), (1, 2)]
    assert corpus.periods == ["0", "1", "2"] and corpus.docs["time"].to_list() == [0, 0, 1, 1, 2, 2]
    assert corpus.edge_index().tolist() == [[0, 1, 1, 2], [1, 2, 0, 1]]  # both directions
    assert set(corpus.docs["split"]) <= {"train", "dev", "test"}


def test_missing_column_names_file_record_and_problem(tmp_path, csv_corpus):
    bad = write_csv(tmp_path / "bad.csv", ["unit", "text"], [("a", "x y")])
    with pytest.raises(InputError) as error:
        read_csv_corpus(bad, csv_corpus[1])
    assert str(bad) in str(error.value) and "header" in str(error.value) and "missing column 'time'" in str(error.value)


def test_unknown_user_in_the_edge_list(tmp_path, csv_corpus):
    edges = write_csv(tmp_path / "edges.csv", ["source", "target"], [("a", "b"), ("b", "zed")])
    with pytest.raises(InputError) as error:
        read_csv_corpus(csv_corpus[0], edges)
    message = str(error.value)
    assert str(edges) in message and "line 3" in message and "unknown unit 'zed'" in message


def test_an_empty_time_unit(tmp_path, csv_corpus):
    docs = write_csv(tmp_path / "gap.csv", ["unit", "time", "text"], [r for r in DOCS if r[1] != 1])
    with pytest.raises(InputError) as error:
        read_csv_corpus(docs, csv_corpus[1])
    assert str(docs) in str(error.value) and "time 1" in str(error.value) and "has no document" in str(error.value)
    with pytest.raises(InputError, match="time unit '2019' .* has no document"):
        read_csv_corpus(csv_corpus[0], csv_corpus[1], periods=["0", "1", "2", "2019"])


def test_bad_input_leaves_no_output(tmp_path, csv_corpus):
    edges = write_csv(tmp_path / "edges.csv", ["source", "target"], [("a", "nobody")])
    out = tmp_path / "out"
    spec = json.dumps({"format": "csv", "docs": str(csv_corpus[0]), "edges": str(edges)})
    assert main(["dcwe-data", "--data", spec, "--name", "toy", "--out-dir", str(out)]) == 1
    assert not out.exists() or not any(out.iterdir())


def test_the_authors_layout(tmp_path):
    header = ["user", "time", "year", "month", "day", "text", "rating", "label"]
    for split, rows in {"train": [("u1", "2010-03-01", 2010, 3, 1, "Good Food", 5, 1),
                                  ("u2", "2012-05-02", 2012, 5, 2, "bad service", 1, 0)],
                        "dev": [("u1", "2011-01-01", 2011, 1, 1, "fine", 4, 1)],
                        "test": [("u3", "2012-01-01", 2012, 1, 1, "meh", 2, 0)]}.items():
        write_csv(tmp_path / f"yelp_{split}.csv", header, rows)
    (tmp_path / "yelp_users.p").write_bytes(pickle.dumps(["u1", "u2", "u3"]))
    (tmp_path / "yelp_edges.p").write_bytes(pickle.dumps({("u1", "u2"), ("u3", "u1")}))
    corpus = read_release(tmp_path, "yelp", directed=True, allow_pickle=True)
    assert corpus.periods == ["2010", "2011", "2012"] and corpus.docs["time"].to_list() == [0, 2, 1, 2]
    assert corpus.docs["split"].to_list() == ["train", "train", "dev", "test"]
    assert corpus.docs["label"].to_list() == [1, 0, 1, 0] and corpus.docs["text"][0] == "good food"
    assert sorted(corpus.edges) == [(0, 1), (2, 0)]
    (tmp_path / "yelp_edges.p").write_bytes(pickle.dumps({("u1", "u9")}))
    with pytest.raises(InputError, match="yelp_edges.p: record edge 0 .* unknown user 'u9'"):
        read_release(tmp_path, "yelp", allow_pickle=True)
    (tmp_path / "yelp_users.p").write_bytes(pickle.dumps(["u1", "u2"]))
    with pytest.raises(InputError, match="yelp_test.csv: record line 2: user 'u3' is not in yelp_users.p"):
        read_release(tmp_path, "yelp", allow_pickle=True)


def conversation(a, b, texts, month="05"):
    return {"messages": [[{"text": t, "timestamp": f"2018-{month}-0{i % 9 + 1}T00:00:00Z", "sender": s}]
                         for i, (s, t) in enumerate(zip([a, b] * len(texts), texts))]}


def test_chitchat_construction_on_a_small_file(tmp_path):
    long = "word " * 9
    data = {
        "c1": conversation("x", "y", [long + "one", long + "two", "too short"], "04"),
        "c2": conversation("y", "z", [long + "three", long + "one"], "09"),          # duplicate of c1's first turn
        "c3": {"messages": [[{"text": long + "alone", "timestamp": "2018-05-01T00:00:00Z", "sender": "w"}]]},
    }
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps(data))
    corpus = chitchat_corpus(path)
    assert corpus.docs["doc_id"].to_list() == ["c1:0", "c1:1", "c2:0"]   # short, duplicate, one-sender left out
    assert corpus.units == ["x", "y"] and corpus.periods == ["2018-04", "2018-09"]  # z wrote only a duplicate
    assert corpus.edges == [(0, 1)]
    capped = chitchat_corpus(path, cap=1, largest_component=True)
    assert capped.docs.height == 3  # one turn per (sender, month) each already
    data["c1"]["messages"][0][0].pop("sender")
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="conversation c1 turn 0 utterance 0: missing field 'sender'"):
        chitchat_corpus(path)


def test_chitchat_counts_match_the_spec(tmp_path):
    """../shared/specs/dcwe.md §5: c = 5 -> 4,864 documents, 1,027 senders, 2,175 edges."""
    corpus = load_corpus({"format": "chitchat", "cap": 5, "largest_component": True}, "cc5")
    assert (corpus.docs.height, len(corpus.units), len(corpus.edges)) == (4864, 1027, 2175)
    assert corpus.docs.group_by("time").len().sort("time")["len"].to_list() == [1153, 1802, 554, 1075, 280]
    assert corpus.notes["skipped"]["turns under 10 words"] == 54698


def test_split_is_stratified_by_time():
    splits = split_by_time([0] * 10 + [1] * 20, seed=0)
    assert [splits[:10].count(s) for s in ("train", "dev", "test")] == [7, 1, 2]
    assert [splits[10:].count(s) for s in ("train", "dev", "test")] == [14, 2, 4]
    assert splits == split_by_time([0] * 10 + [1] * 20, seed=0)


def test_data_command_writes_the_corpus_and_table1_stats(tmp_path, csv_corpus):
    spec = json.dumps({"format": "csv", "docs": str(csv_corpus[0]), "edges": str(csv_corpus[1])})
    assert main(["dcwe-data", "--data", spec, "--name", "toy", "--out-dir", str(tmp_path / "out")]) == 0
    corpus, stats = read_corpus(tmp_path / "out")
    assert corpus.docs.height == 6 and stats["units"] == 3 and stats["edges"] == 2
    assert stats["mean_degree"] == pytest.approx(4 / 3) and stats["mean_shortest_path"] == pytest.approx(8 / 6)
    assert stats["times"] == 3 and stats["documents_per_time"] == [2, 2, 2]
    assert stats["mean_words"] == pytest.approx(sum(len(d[2].split()) for d in DOCS) / 6)


def test_reading_the_authors_node_vectors(tmp_path, csv_corpus):
    """{name}_vectors_50.txt: gensim's word2vec text format, in any order, maybe with other nodes."""
    import numpy as np

    from tempoformer.dcwe.data import read_vectors

    path = tmp_path / "toy_vectors_3.txt"
    path.write_text("4 3\nc 0.5 0.6 0.7\na 1 2 3\n\nzed 9 9 9\nb -1 -2 -3e-1\n")
    vectors = read_vectors(path, ["a", "b", "c"])
    np.testing.assert_array_equal(vectors, np.array([[1, 2, 3], [-1, -2, -0.3], [0.5, 0.6, 0.7]], dtype=np.float32))
    assert vectors.dtype == np.float32
    out = tmp_path / "corpus"
    spec = json.dumps({"format": "csv", "docs": str(csv_corpus[0]), "edges": str(csv_corpus[1])})
    assert main(["dcwe-data", "--data", spec, "--name", "toy", "--out-dir", str(out)]) == 0
    assert main(["dcwe-vectors", "--corpus", str(out), "--vectors-file", str(path), "--output",
                 str(tmp_path / "v.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), vectors)   # units a, b, c in corpus order
    bad = {"2 3\na 1 2 3\n": "header says 2 vectors, the file has 1",
           "1 3\na 1 2\n": "line 2: node 'a' has 2 values, the header says 3",
           "2 3\na 1 2 3\na 4 5 6\n": "line 3: node 'a' again",
           "1 3\na 1 x 3\n": "line 2: node 'a': a value is not a number",
           "a 1 2 3\n": "line 1: header 'a 1 2 3' is not 'count dimension'",
           "2 3\na 1 2 3\nc 1 2 3\n": "unit 'b': no vector for this unit (1 of 3 units have none)"}
    for text, problem in bad.items():
        path.write_text(text)
        with pytest.raises(InputError) as error:
            read_vectors(path, ["a", "b", "c"])
        assert str(path) in str(error.value) and problem in str(error.value), (text, str(error.value))
    path.write_text("2 1\n7 0.5\n12 1.5\n")                        # the authors' Ciao file: integer user ids
    assert read_vectors(path, [12, 7]).ravel().tolist() == [1.5, 0.5]


def test_word_piece_counts_without_transformers_equal_the_tokenizer():
    """Table 1's word pieces come from tokenizer.json through `tokenizers` (no torch in the data job)."""
    from tempoformer.dcwe.cli import piece_counts
    from tempoformer.semantic_change.model import load_tokenizer

    texts = ["Hello World, naïve café!", "isolating " * 300, "", "the 2nd of may 🙂 co-operate"]
    expected = [len(ids) for ids in load_tokenizer("minilm")(texts, add_special_tokens=True)["input_ids"]]
    assert piece_counts(texts, "minilm") == expected
    assert expected[1] == 2 * 300 + 2 and expected[2] == 2                       # no truncation at 128, [CLS] [SEP]
