import json

import numpy as np
import polars as pl
import pytest

from tempoformer.reporting.dataset_tables import write_table1, write_table5
from tempoformer.reporting.diversity import (
    bertscore_f1, dataset_diversity, mean_pairwise_cosine, outlier_distance, sample_pairs,
)


def test_bertscore_hand_computed():
    a = np.array([[1.0, 0.0]])
    b = np.array([[2.0, 0.0], [0.0, 3.0]])
    # cosines: a·b0 = 1, a·b1 = 0; P = max over b for a's one token = 1; R = mean over b's
    # tokens of their best match = (1 + 0) / 2; F1 = 2·1·0.5 / 1.5 = 2/3
    assert bertscore_f1(a, b) == pytest.approx(2 / 3)
    assert bertscore_f1(b, a) == pytest.approx(2 / 3)  # F1 is symmetric
    c = np.array([[1.0, 1.0], [1.0, 0.0]])
    # a vs c: cosines 1/√2, 1 → P = 1; R = (1/√2 + 1) / 2 = 0.85355; F1 = 2·0.85355 / 1.85355
    r = (2**-0.5 + 1) / 2
    assert bertscore_f1(a, c) == pytest.approx(2 * r / (1 + r))
    with pytest.raises(ValueError, match="at least one token"):
        bertscore_f1(a, np.empty((0, 2)))


def test_mean_pairwise_cosine_hand_computed():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    # pairs: (0,1) 0, (0,2) 1/√2, (1,2) 1/√2 → mean √2/3
    assert mean_pairwise_cosine(x) == pytest.approx(2**0.5 / 3)
    rng = np.random.default_rng(0)
    y = rng.normal(size=(7, 4))
    u = y / np.linalg.norm(y, axis=1, keepdims=True)
    brute = np.mean([u[i] @ u[j] for i in range(7) for j in range(7) if i != j])
    assert mean_pairwise_cosine(y) == pytest.approx(brute)


def test_outlier_hand_computed(make_posts):
    posts = make_posts({"t1": [(0, "A"), (1, "B")], "t2": [(0, "B")], "t3": [(0, "A")]})
    # rows in posts order: t1-0, t1-1, t2-0, t3-0
    embeddings = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 4.0], [3.0, 4.0]])
    folds = pl.DataFrame({"fold": [0, 0, 0, 1, 1, 1], "timeline_id": ["t1", "t2", "t3"] * 2,
                          "split": ["train", "dev", "test", "test", "dev", "train"]})
    # fold 0: train t1 → mean (1, 0); test t3 (3, 4) → distance √(4 + 16) = √20
    # fold 1: train t3 → (3, 4); test t1 (0,0) → 5, (2,0) → √(1 + 16) = √17 → mean (5 + √17)/2
    result = outlier_distance(embeddings, posts, folds)
    expected = [20**0.5, (5 + 17**0.5) / 2]
    assert result["per_fold"] == pytest.approx(expected)
    assert result["mean"] == pytest.approx(np.mean(expected))
    assert result["std"] == pytest.approx(np.std(expected, ddof=1))


def test_sample_pairs():
    i, j = sample_pairs(4, 10, seed=0)  # 6 pairs ≤ 10: all of them, once each
    assert sorted(zip(i.tolist(), j.tolist())) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    i, j = sample_pairs(50, 300, seed=3)
    assert len(i) == 300 and (i != j).all() and j.max() == 49
    assert np.array_equal(sample_pairs(50, 300, seed=3)[1], j)  # seeded
    with pytest.raises(ValueError):
        sample_pairs(1, 10, 0)


@pytest.fixture
def small_dataset(make_posts, tmp_path):
    posts = make_posts({f"t{k}": [(i * 60, "A" if i == 0 else "B") for i in range(3)] for k in range(4)})
    texts = ["the cat sat on the mat"] * posts.height
    posts = posts.with_columns(pl.Series("text", texts))
    posts.write_parquet(tmp_path / "posts.parquet")
    rng = np.random.default_rng(0)
    np.save(tmp_path / "sbert.npy", np.repeat(rng.normal(size=(1, 8)), posts.height, 0).astype(np.float32))
    folds = pl.DataFrame({"fold": [0] * 4 + [1] * 4, "timeline_id": [f"t{k}" for k in range(4)] * 2,
                          "split": ["train", "train", "dev", "test", "test", "dev", "train", "train"]})
    folds.write_parquet(tmp_path / "folds.parquet")
    return tmp_path


def test_identical_posts_score_one_with_the_real_backbone(small_dataset):
    d = small_dataset
    result = dataset_diversity(d / "posts.parquet", d / "sbert.npy", d / "folds.parquet", max_pairs=20, seed=1)
    # every post has the same text and embedding: BERTScore 1, cosine 1, no distance to the mean
    assert result["bertscore"] == pytest.approx(1.0, abs=1e-5)
    assert result["cosine"] == pytest.approx(1.0, abs=1e-6)
    assert result["outlier"]["mean"] == pytest.approx(0.0, abs=1e-6)
    assert result["settings"]["pairs"] == 20 and not result["settings"]["all_pairs"]
    with pytest.raises(ValueError, match="layers 1..6"):
        dataset_diversity(d / "posts.parquet", d / "sbert.npy", d / "folds.parquet", layer=7)


def test_embeddings_must_match_posts(small_dataset):
    d = small_dataset
    np.save(d / "short.npy", np.zeros((3, 8), dtype=np.float32))
    with pytest.raises(ValueError, match=r"short\.npy: 3 embeddings for the 12 posts"):
        dataset_diversity(d / "posts.parquet", d / "short.npy", d / "folds.parquet")


def diversity_json(path, bertscore, cosine, outlier):
    path.write_text(json.dumps({
        "bertscore": bertscore, "cosine": cosine, "outlier": {"mean": outlier, "std": 0.01, "per_fold": []},
        "settings": {"backbone": "minilm", "layer": 5, "max_tokens": 128, "seed": 0, "max_pairs": 1000,
                     "pairs": 1000, "all_pairs": False, "posts": 5568, "posts_without_text": 0}}))
    return path


def test_table5_puts_the_papers_row_under_ours(tmp_path):
    paths = {"lrs": diversity_json(tmp_path / "a.json", 0.45, 0.25, 0.87),
             "toy": diversity_json(tmp_path / "b.json", 0.3, 0.1, 0.9)}
    write_table5(paths, {"lrs": "LRS", "toy": None}, tmp_path / "tables")
    md = (tmp_path / "tables" / "table5.md").read_text()
    assert "| lrs | 0.450 | 0.250 | 0.870 ± 0.010 |\n| LRS (paper) | 0.457 | 0.245 | 0.867 |\n| toy |" in md
    assert "hidden layer 5" in md and "1000 sampled (seed 0) of 5568 posts" in md
    csv = pl.read_csv(tmp_path / "tables" / "table5.csv")
    assert csv["source"].to_list() == ["ours", "paper", "ours"]
    assert "\\begin{tabular}{lrrr}" in (tmp_path / "tables" / "table5.tex").read_text()


def test_table1_puts_the_papers_row_under_ours(make_posts, tmp_path):
    posts = make_posts({"t1": [(0, "M"), (60, "R")], "t2": [(0, "R")]})
    posts.write_parquet(tmp_path / "posts.parquet")
    write_table1({"tsmi": tmp_path / "posts.parquet"}, {"tsmi": ["M"]}, {"tsmi": "TopicShift"}, tmp_path / "t")
    md = (tmp_path / "t" / "table1.md").read_text()
    assert "| tsmi | 3 | 2 | 1.5 (1.5) | 1m 0s (1m 0s) | 0.5 (0.5) |" in md
    assert "| TopicShift (paper) | 12,536 | 74 | 169.4 (153.5) | - | 60.5 (51.5) |" in md
    write_table1({"lrs": tmp_path / "posts.parquet"}, {"lrs": ["M"]}, {"lrs": "LRS"}, tmp_path / "t")
    md = (tmp_path / "t" / "table1.md").read_text()  # cells as the paper prints them: 13, not 13.0
    assert "| LRS (paper) | 5,568 | 325 | 17.1 (13) | 1h 26m 40s (1m 39s) | 6.5 (0) |" in md
    with pytest.raises(ValueError, match="paper_column 'Twitter'"):
        write_table1({"tsmi": tmp_path / "posts.parquet"}, {"tsmi": ["M"]}, {"tsmi": "Twitter"}, tmp_path / "t")
