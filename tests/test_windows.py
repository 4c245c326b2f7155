import math

import numpy as np
import polars as pl

from tempoformer.data.windows import build_windows, window_arrays


def test_windows_hand_computed(make_posts):
    # timeline a: posts at 0 s, 0.5 s, 10 s; timeline b: one post at 100 s
    posts = make_posts({"a": [(0, "N"), (0.5, "S"), (10, "N")], "b": [(100, "N")]})
    streams = build_windows(posts, 3)
    rows, valid, log_gap = window_arrays(streams, np.arange(4))
    np.testing.assert_array_equal(rows, [[-1, -1, 0], [-1, 0, 1], [0, 1, 2], [-1, -1, 3]])
    np.testing.assert_array_equal(valid, rows >= 0)
    # gaps to the current post; under one second clamps to 1 s → log 0; padding is 0
    expected = [[0, 0, 0], [0, 0, 0], [math.log(10), math.log(9.5), 0], [0, 0, 0]]
    np.testing.assert_allclose(log_gap, expected, rtol=1e-6)


def test_windows_never_cross_timelines(make_posts):
    posts = make_posts({t: [(i * 60, "N") for i in range(n)] for t, n in [("a", 4), ("b", 7), ("c", 1)]})
    streams = build_windows(posts, 5)
    timeline = posts["timeline_id"].to_numpy()
    rows, valid, _ = window_arrays(streams, np.arange(posts.height))
    for i in range(posts.height):
        assert rows[i, -1] == i and valid[i, -1]
        assert (timeline[rows[i][valid[i]]] == timeline[i]).all()
        assert valid[i].sum() == min(5, posts["position"][i] + 1)


def test_windows_without_timestamps_have_null_gaps(make_posts):
    posts = make_posts({"a": [(None, "N"), (None, "S")]})
    streams = build_windows(posts, 2)
    assert streams["log_gap"].null_count() == 2
    assert window_arrays(streams, np.arange(2))[2] is None
    assert streams["valid"].to_list() == [[False, True], [True, True]]
