"""The record of a grid search: every grid point's dev macro-F1 and best epoch, per model, from
the `grid` entry each run's metrics.json keeps. A CPU-budget config searches a grid on one
(fold, seed) and fixes the chosen point for all runs; this record shows what it chose and why."""

from __future__ import annotations

import json
from pathlib import Path

from ..artefacts import read_json
from ..atomic import write_text_atomic


def _point(hp: dict) -> str:
    return json.dumps(hp, sort_keys=True)


def grid_section(metrics: dict, source: Path) -> str:
    """One model's search: the chosen point, its test macro-F1, the search's time, every point."""
    if not metrics.get("grid"):
        raise ValueError(f"{source}: no 'grid' entry (not a finished training run)")
    lines = [
        f"## {metrics['model']}: chose {_point(metrics['selected'])} "
        f"(test macro {100 * metrics['test']['macro']:.1f}, {metrics['seconds']:.0f} s for the search)",
        "",
        "| grid point | dev macro-F1 | epoch |",
        "|---|---|---|",
    ]
    for point in metrics["grid"]:
        lines.append(f"| {_point(point['hp'])} | {100 * point['dev_macro']:.1f} | {point['best_epoch'] + 1} |")
    return "\n".join(lines)


def write_grid_report(metrics_paths: list[Path], out: Path, title: str, intro: str = "") -> None:
    """Markdown: a title, an optional paragraph, one section per run (in the order given)."""
    runs = [(Path(p), read_json(p)) for p in metrics_paths]
    sections = [grid_section(metrics, path) for path, metrics in runs]
    text = "\n\n".join([f"# {title}", *([intro] if intro else []), *sections]) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, text)
