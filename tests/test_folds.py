import numpy as np
import polars as pl
import pytest

from tempoformer.data.folds import make_folds, split_rows


@pytest.fixture
def posts(make_posts):
    rng = np.random.default_rng(3)
    return make_posts({
        f"t{k:02d}": [(60 * i, "S" if rng.random() < 0.2 * (k % 3) else "N") for i in range(3 + k % 5)]
        for k in range(30)
    })


def test_every_post_tested_once_and_no_timeline_shared(posts):
    folds = make_folds(posts, n_folds=5, dev_ratio=0.25, seed=0)
    tested = []
    for fold in range(5):
        rows = split_rows(posts, folds, fold)
        sets = [set(posts["timeline_id"].to_numpy()[r]) for r in rows.values()]
        assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
        assert sum(len(r) for r in rows.values()) == posts.height
        tested.extend(rows["test"].tolist())
        n_rest = 30 - len(sets[2])
        assert abs(len(sets[1]) - 0.25 * n_rest) <= 1
    assert sorted(tested) == list(range(posts.height))


def test_folds_deterministic_and_stratified(posts):
    a = make_folds(posts, seed=7)
    assert a.equals(make_folds(posts, seed=7))
    assert not a.equals(make_folds(posts, seed=8))
    minority = posts.group_by("timeline_id").agg((pl.col("label") == "S").sum().alias("m"))
    per_fold = (a.filter(pl.col("split") == "test").join(minority, on="timeline_id")
                .group_by("fold").agg(pl.col("m").sum())["m"].to_numpy())
    total = minority["m"].sum()
    assert per_fold.max() - per_fold.min() <= max(3, 0.15 * total)
