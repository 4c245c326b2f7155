"""SemEval-2020 Task 1 readers: release layout, POS tags, token/lemma alignment, bad input, real files."""

import gzip
import logging
from pathlib import Path

import pytest

from tempoformer.data.posts import InputError
from tempoformer.semantic_change.data import load_dataset, read_release, read_small_corpora

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "semeval2020_task1"


def gz(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in lines))


@pytest.fixture
def release(tmp_path):
    root = tmp_path / "semeval2020_ulscd_eng"
    gz(root / "corpus1" / "lemma" / "ccoha1.txt.gz",
       ["the plane_nn fly over the plane", "", "a tree_nn grow", "the plane_nn and the plane_nn"])
    gz(root / "corpus1" / "token" / "ccoha1.txt.gz",
       ["the planes flew over the plane", "", "a tree grows", "the plane and the planes"])
    gz(root / "corpus2" / "lemma" / "ccoha2.txt.gz", ["a plane_nn land", "tree_nn and plane"])
    gz(root / "corpus2" / "token" / "ccoha2.txt.gz", ["a plane lands", "trees and plane"])
    (root / "targets.txt").write_text("plane_nn\ntree_nn\n")
    (root / "truth").mkdir()
    (root / "truth" / "graded.txt").write_text("plane_nn\t0.8\ntree_nn\t0.1\n")
    (root / "truth" / "binary.txt").write_text("plane_nn\t1\ntree_nn\t0\n")
    return root


def test_release_strip_tags(release, caplog):
    with caplog.at_level(logging.INFO):
        corpus = read_release(release, periods=["1810", "1960"])
    assert corpus.periods == ["1810", "1960"] and corpus.targets == ["plane_nn", "tree_nn"]
    assert corpus.words == {"plane_nn": "plane", "tree_nn": "tree"}
    assert corpus.graded == {"plane_nn": 0.8, "tree_nn": 0.1} and corpus.binary == {"plane_nn": 1, "tree_nn": 0}
    # Tagged and untagged "plane" both count; the model reads words without tags.
    assert corpus.occurrences["plane_nn"][0] == [(0, (1, 5)), (2, (1, 4))]
    assert corpus.occurrences["plane_nn"][1] == [(0, (1,)), (1, (2,))]
    assert corpus.sentences[0][0] == ("the", "plane", "fly", "over", "the", "plane")
    assert corpus.skipped_blank_lines == 1 and "skipped 1 blank lines" in caplog.text


def test_release_keep_tags(release):
    corpus = read_release(release, pos_tags="keep")
    assert corpus.words["plane_nn"] == "plane_nn"
    assert corpus.occurrences["plane_nn"][0] == [(0, (1,)), (2, (1, 4))]  # only the tagged tokens
    assert corpus.occurrences["plane_nn"][1] == [(0, (1,))]
    assert corpus.sentences[1][1] == ("tree", "and", "plane")  # still without tags for the model


def test_token_variant_located_by_lemma(release):
    corpus = read_release(release, variant="token")
    assert corpus.sentences[0][0] == ("the", "planes", "flew", "over", "the", "plane")
    assert corpus.occurrences["plane_nn"][0][0] == (0, (1, 5))  # "planes" found through the lemma
    assert corpus.occurrences["tree_nn"][1] == [(1, (0,))]


def test_explicit_corpora_and_synthetic_spec(release, tmp_path):
    plain = tmp_path / "c1.txt"
    plain.write_text("plane_nn tree_nn\n")
    corpus = load_dataset({"format": "release", "release": str(release),
                           "corpora": [str(plain), str(release / "corpus2" / "lemma")]}, "x")
    assert corpus.name == "x" and corpus.periods == ["1", "2"] and corpus.doc_counts() == [1, 2]


@pytest.mark.parametrize("path, content, expected", [
    ("truth/graded.txt", "plane_nn\t0.8\ntree_nn 0.1 extra\n", "graded.txt: record line 2: expected 'target<TAB>value'"),
    ("truth/graded.txt", "plane_nn\t0.8\ntree_nn\tlots\n", "line 2: value 'lots' of 'tree_nn' is not a number"),
    ("truth/graded.txt", "plane_nn\t1.8\ntree_nn\t0.1\n", "line 1: graded value of 'plane_nn' must be in [0, 1]"),
    ("truth/binary.txt", "plane_nn\t2\ntree_nn\t0\n", "line 1: binary value of 'plane_nn' must be 0 or 1"),
    ("truth/graded.txt", "plane_nn\t0.8\n", "targets and truth differ: missing from truth ['tree_nn']"),
    ("targets.txt", "plane_nn\nplane_nn\n", "line 2: duplicate target 'plane_nn'"),
    ("targets.txt", "plane_nn tree_nn\n", "line 1: expected one target word"),
])
def test_bad_input_names_file_line_and_problem(release, path, content, expected):
    (release / path).write_text(content)
    with pytest.raises(InputError) as error:
        read_release(release)
    assert expected in str(error.value) and Path(path).name in str(error.value)


def test_bad_corpus_bytes_and_missing_parts(release, tmp_path):
    bad = release / "corpus2" / "lemma" / "ccoha2.txt.gz"
    with gzip.open(bad, "wb") as handle:
        handle.write(b"a plane_nn land\n\xff\xfe broken\n")
    with pytest.raises(InputError, match=r"ccoha2.txt.gz: record line 2: not UTF-8 text"):
        read_release(release)
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match=r"ccoha2.txt.gz: record -: cannot read"):
        read_release(release)
    with pytest.raises(InputError, match="no such release folder"):
        read_release(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "targets.txt").write_text("plane_nn\n")
    with pytest.raises(InputError, match="no corpus1/, corpus2/ folders"):
        read_release(empty)


def test_misaligned_token_and_lemma_lines(release):
    gz(release / "corpus2" / "token" / "ccoha2.txt.gz", ["a plane lands today", "trees and plane"])
    with pytest.raises(InputError, match=r"ccoha2.txt.gz: record line 1: 4 tokens, but the aligned line"):
        read_release(release, variant="token")


@pytest.mark.skipif(not (SHARED / "semeval2020_ulscd_eng" / "targets.txt").exists(),
                    reason="../shared/data/semeval2020_task1 (SemEval-2020 English truth + small corpora) is absent")
def test_real_english_small_corpora():
    corpus = read_small_corpora(SHARED / "derived_small-corpora-scd_downsampled", "english",
                                SHARED / "semeval2020_ulscd_eng")
    assert len(corpus.targets) == 37 and "plane_nn" in corpus.targets
    assert sum(corpus.binary.values()) == 16
    assert corpus.periods == ["1810", "1960"] and corpus.doc_counts() == [4078, 6585]
    counts = {t: [len(p) for p in corpus.occurrences[t]] for t in corpus.targets}
    assert min(min(c) for c in counts.values()) >= 80  # every target in both periods
    kept = read_small_corpora(SHARED / "derived_small-corpora-scd_downsampled", "english",
                              SHARED / "semeval2020_ulscd_eng", pos_tags="keep")
    assert all(len(kept.occurrences[t][0]) <= counts[t][0] for t in corpus.targets)
