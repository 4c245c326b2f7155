"""Figure 3 of the paper: TempoFormer's test F1 per window size, ours beside the paper's."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from ..atomic import write_with
from . import paper_numbers  # noqa: E402


def figure3(summary: pl.DataFrame, datasets, out_path: str | Path) -> Path:
    """One panel per dataset: per class and macro F1 (%) against the window size; ours as
    mean ± std over (fold, seed) runs (solid, error bars), the paper's Table 11 dashed."""
    paper = paper_numbers.f1_numbers(11)
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.6), squeeze=False)
    for ax, d in zip(axes[0], datasets):
        ours = summary.filter((pl.col("dataset") == d.name) & (pl.col("model") == "tempoformer"))
        ticks = set(ours["window"])
        for i, label in enumerate([*d.labels, "macro"]):
            color = f"C{i}"
            mine = ours.filter(pl.col("label") == label).sort("window")
            if mine.height:
                ax.errorbar(mine["window"], mine["mean"], yerr=mine["std"], color=color, marker="o",
                            capsize=3, label=f"{label} (ours)")
            if d.paper_column:
                points = sorted((int(w), v) for (w, column, lab), v in paper.items()
                                if column == d.paper_column and lab == label)
                ticks |= {w for w, _ in points}
                ax.plot([w for w, _ in points], [v for _, v in points], color=color, marker="s",
                        linestyle="--", alpha=0.7, label=f"{label} (paper)")
        title = d.name + (f" (paper: {d.paper_column})" if d.paper_column else "")
        ax.set(title=title, xlabel="window (posts)", ylabel="test F1 (%)", xticks=sorted(ticks))
        if not ours.height and not d.paper_column:
            ax.text(0.5, 0.5, "TempoFormer not run", ha="center", transform=ax.transAxes)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle("Figure 3: TempoFormer results for different window sizes")
    fig.tight_layout()
    out_path = Path(out_path)
    write_with(out_path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)
    return out_path
