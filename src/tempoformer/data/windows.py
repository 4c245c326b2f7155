"""Window streams: for each post, the w most recent posts of its timeline ending at it.

Stored as indices into the post table plus log-time gaps, never as copies of text.

Layout of one window (left-padded, the current post in the last slot w-1):
  window_rows[j]  global row of the post in slot j, -1 in padding slots
  valid[j]        explicit padding mask (True = a real post)
  log_gap[j]      log(max(t_current - t_j, 1 s)): gaps under one second are clamped to one
                  second so the log is never negative and the current post sits at 0;
                  0 in padding slots. The whole list is null when the timeline has no
                  timestamps: models then fall back to window positions.
"""

from __future__ import annotations

import numpy as np
import polars as pl

MIN_GAP_SECONDS = 1.0


def log_gap_seconds(gap_seconds: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(gap_seconds, MIN_GAP_SECONDS))


def build_windows(posts: pl.DataFrame, window: int) -> pl.DataFrame:
    """One row per post (same order as `posts`), with its window of history."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    n = posts.height
    position = posts["position"].to_numpy()
    rows = np.arange(n, dtype=np.int64)
    offsets = np.arange(window - 1, -1, -1, dtype=np.int64)  # slot j looks back w-1-j posts
    valid = position[:, None] >= offsets[None, :]
    window_rows = rows[:, None] - offsets[None, :]
    np.putmask(window_rows, ~valid, -1)

    # Gaps slot by slot: the post k back is simply row i-k (rows are contiguous per
    # timeline), so each slot is one shifted subtraction over all posts instead of an
    # [n, w] fancy-indexed gather and its [n, w] float64 temporaries: the same float64
    # operations as before, so the same values, in about half the time (bench/streams.py).
    timestamps = posts["timestamp"]
    seconds = timestamps.dt.epoch("us").to_numpy().astype(np.float64) / 1e6
    has_time = ~np.isnan(seconds) if timestamps.null_count() else None
    seconds = np.nan_to_num(seconds)
    log_gap = np.zeros((n, window), dtype=np.float32)  # slot w-1 (the post itself) stays 0
    window_has_time = np.ones(n, dtype=bool) if has_time is None else has_time.copy()
    for j, k in enumerate(offsets[:-1]):
        if k >= n:
            continue
        gap = seconds[k:] - seconds[:-k]
        log_gap[k:, j] = np.where(valid[k:, j], log_gap_seconds(gap), 0.0)
        if has_time is not None:
            window_has_time[k:] &= has_time[:-k] | ~valid[k:, j]

    log_gap_series = pl.Series("log_gap", log_gap, dtype=pl.Array(pl.Float32, window))
    if not window_has_time.all():
        log_gap_series = pl.select(
            pl.when(pl.Series(window_has_time)).then(log_gap_series).otherwise(None)
        ).to_series().alias("log_gap")
    return pl.DataFrame(
        {
            "row": rows,
            "window_rows": pl.Series(window_rows, dtype=pl.Array(pl.Int64, window)),
            "valid": pl.Series(valid, dtype=pl.Array(pl.Boolean, window)),
            "log_gap": log_gap_series,
        }
    )


def window_arrays(streams: pl.DataFrame, rows: np.ndarray):
    """(window_rows [B,w], valid [B,w], log_gap [B,w] or None) for the given post rows."""
    subset = streams[rows]
    window_rows = subset["window_rows"].to_numpy()
    valid = subset["valid"].to_numpy()
    if subset["log_gap"].null_count():
        return window_rows, valid, None
    return window_rows, valid, subset["log_gap"].to_numpy()
