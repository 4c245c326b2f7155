"""Dataset statistics: the paper's Table 1, from canonical post tables.

Per dataset: data points (posts), timelines, timeline length (posts) mean and median, time
between consecutive posts of a timeline mean and median, and minority-class events (posts of
a minority label) per timeline mean and median, for one or several minority labels.

`dataset_statistics` returns raw numbers (a JSON-serialisable dict); `table1` formats them as
the paper does: means to 1 decimal, medians as integers when whole (else 1 decimal), times
rounded to whole seconds and written "1h 26m 40s" (units above the largest non-zero one
left out), "-" where a dataset has no timestamps, several minority labels as "IS:1.8 IE:4.0".
Rounding is half up (39.5 s -> 40 s, 0.25 -> 0.3), not Python's round-half-to-even.
"""

from __future__ import annotations

import logging
from decimal import ROUND_HALF_UP, Decimal
from typing import Mapping, Sequence

import polars as pl

log = logging.getLogger(__name__)

CSV_COLUMNS = (
    "dataset", "data_points", "timelines", "timeline_len_mean", "timeline_len_median",
    "gap_mean", "gap_median", "minority_events_per_timeline_mean",
    "minority_events_per_timeline_median",
)
MARKDOWN_HEADER = (
    "Dataset", "Data points", "Timelines", "Timeline length, posts: mean (median)",
    "Time between consecutive posts: mean (median)",
    "Minority events per timeline: mean (median)",
)


def dataset_statistics(posts: pl.DataFrame, minority_labels: Sequence[str]) -> dict:
    """Table 1 statistics of one canonical post table (posts.POST_SCHEMA).

    `minority_labels`: the minority class name(s), e.g. ["Sw"] for LRS, ["M"] for Topic Shift,
    ["IS", "IE"] for TalkLife (with the config's `labels`, minority first and the majority
    last, that is `labels[:-1]`). Unlabelled posts (null label) count as no event; every
    timeline counts, also those without any event (count 0).

    Returns {"data_points", "timelines", "timeline_length": {"mean", "median"},
    "gap_seconds": {"mean", "median", "pairs"} (mean/median None without timestamps),
    "minority_labels": [...], "minority_events_per_timeline": {label: {"mean", "median",
    "total"}}} with unrounded values.
    """
    minority_labels = list(minority_labels)
    if not minority_labels:
        raise ValueError("minority_labels is empty: name at least one minority class")
    needed = ("timeline_id", "position", "timestamp", "label")
    missing = [c for c in needed if c not in posts.columns]
    if missing:
        raise ValueError(f"not a post table: missing column(s) {missing}")
    if posts.height == 0:
        raise ValueError("the post table is empty")
    present = set(posts["label"].drop_nulls().unique().to_list())
    for label in minority_labels:
        if label not in present:
            log.warning("minority label %r never occurs (labels present: %s): counted as 0 "
                        "events", label, sorted(present))

    ordered = posts.sort("timeline_id", "position")
    per_timeline = ordered.group_by("timeline_id").agg(
        pl.len().alias("length"),
        *[(pl.col("label") == label).fill_null(False).sum().alias(f"events_{i}")
          for i, label in enumerate(minority_labels)],
    )
    # Gaps between consecutive posts of the same timeline where both have a timestamp.
    gaps = (
        ordered.select(
            (pl.col("timestamp") - pl.col("timestamp").shift(1)).dt.total_microseconds()
            .over("timeline_id").alias("gap")
        )["gap"].drop_nulls().cast(pl.Float64) / 1e6
    )
    lengths = per_timeline["length"]
    return {
        "data_points": posts.height,
        "timelines": per_timeline.height,
        "timeline_length": {"mean": float(lengths.mean()), "median": float(lengths.median())},
        "gap_seconds": {
            "mean": float(gaps.mean()) if gaps.len() else None,
            "median": float(gaps.median()) if gaps.len() else None,
            "pairs": gaps.len(),
        },
        "minority_labels": minority_labels,
        "minority_events_per_timeline": {
            label: {
                "mean": float(per_timeline[f"events_{i}"].mean()),
                "median": float(per_timeline[f"events_{i}"].median()),
                "total": int(per_timeline[f"events_{i}"].sum()),
            }
            for i, label in enumerate(minority_labels)
        },
    }


def table1(stats_by_dataset: Mapping[str, Mapping]) -> tuple[str, pl.DataFrame]:
    """(Markdown, CSV table) of Table 1, one row per dataset in the mapping's order.

    `stats_by_dataset` maps the name to show (e.g. "LRS") to dataset_statistics()'s dict (as
    is, or read back from JSON). The CSV table has the columns of the paper's
    tempoformer_table1_datasets.csv (CSV_COLUMNS): counts as integers, everything else as the
    formatted text, so `csv.write_csv(path)` gives rows like
    `LRS,5568,325,17.1,13,1h 26m 40s,1m 39s,6.4,0`.
    """
    if not stats_by_dataset:
        raise ValueError("no datasets")
    rows = []
    for name, stats in stats_by_dataset.items():
        gap = stats["gap_seconds"]
        events = stats["minority_events_per_timeline"]
        labels = list(stats.get("minority_labels") or events)
        rows.append({
            "dataset": name,
            "data_points": int(stats["data_points"]),
            "timelines": int(stats["timelines"]),
            "timeline_len_mean": format_mean(stats["timeline_length"]["mean"]),
            "timeline_len_median": format_median(stats["timeline_length"]["median"]),
            "gap_mean": format_duration(gap["mean"]),
            "gap_median": format_duration(gap["median"]),
            "minority_events_per_timeline_mean": _per_label(events, labels, format_mean),
            "minority_events_per_timeline_median": _per_label(events, labels, format_median),
            "_labels": labels,
        })
    csv = pl.DataFrame(
        [{k: r[k] for k in CSV_COLUMNS} for r in rows],
        schema={c: (pl.Int64 if c in ("data_points", "timelines") else pl.String)
                for c in CSV_COLUMNS},
    )
    lines = ["| " + " | ".join(MARKDOWN_HEADER) + " |",
             "|---|" + "---:|" * (len(MARKDOWN_HEADER) - 1)]
    for r in rows:
        lines.append("| " + " | ".join([
            r["dataset"], f"{r['data_points']:,}", f"{r['timelines']:,}",
            f"{r['timeline_len_mean']} ({r['timeline_len_median']})",
            _mean_median(r["gap_mean"], r["gap_median"]),
            f"{r['minority_events_per_timeline_mean']} "
            f"({r['minority_events_per_timeline_median']})",
        ]) + " |")
    lines.append("")
    lines.append("Minority events: posts of the minority class(es) — " + "; ".join(
        f"{r['dataset']}: {', '.join(r['_labels'])}" for r in rows) + ". Times are between "
        "consecutive posts of a timeline; - where the data has no timestamps.")
    return "\n".join(lines) + "\n", csv


def _mean_median(mean: str, median: str) -> str:
    return "-" if mean == "-" and median == "-" else f"{mean} ({median})"


def _per_label(events: Mapping, labels: list[str], fmt) -> str:
    key = "mean" if fmt is format_mean else "median"
    if len(labels) == 1:
        return fmt(events[labels[0]][key])
    return " ".join(f"{label}:{fmt(events[label][key])}" for label in labels)


def _half_up(value: float, places: int) -> Decimal:
    # Decimal(repr(x)) is the shortest decimal that is x, so 6.45 rounds to 6.5 as on paper.
    return Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)


def format_mean(value: float) -> str:
    """One decimal, half up: 17.0625 -> '17.1', 4 -> '4.0'."""
    return str(_half_up(value, 1))


def format_median(value: float) -> str:
    """Whole numbers without decimals ('13'), else one decimal ('153.5')."""
    if float(value).is_integer():
        return str(int(value))
    return str(_half_up(value, 1))


def format_duration(seconds: float | None) -> str:
    """Seconds rounded half up to whole seconds, as '1h 26m 40s', '59m 38s', '45s', '0s';
    days as '2d 3h 0m 5s'; None (no timestamps) as '-'."""
    if seconds is None:
        return "-"
    if seconds < 0:
        raise ValueError(f"negative duration {seconds}")
    total = int(_half_up(seconds, 0))
    days, rest = divmod(total, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    while len(parts) > 1 and parts[0][0] == 0:  # drop leading zero units only
        parts.pop(0)
    return " ".join(f"{n}{unit}" for n, unit in parts)
