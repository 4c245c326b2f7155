"""One table, four renderings: Markdown, LaTeX (booktabs), HTML (for the Snakemake report), and
the writer that puts them, with the table's CSV, under a tables folder atomically.

Cells and notes are plain text (no Markdown markup), so every rendering shows the same words.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..atomic import write_text_atomic

# Characters LaTeX treats specially, and the few non-ASCII symbols the tables use.
LATEX_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "±": r"$\pm$", "ρ": r"$\rho$", "¬": r"$\neg$", "–": "--", "—": "---", "≤": r"$\leq$",
    "≥": r"$\geq$", "↓": r"$\downarrow$", "↑": r"$\uparrow$", "·": r"$\cdot$",
}


def latex_escape(text: str) -> str:
    return "".join(LATEX_ESCAPES.get(ch, ch) for ch in str(text))


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    label_columns: int = 1  # leading text columns (left-aligned); the rest are numbers

    def __post_init__(self):
        for i, row in enumerate(self.rows):
            if len(row) != len(self.header):
                raise ValueError(f"table {self.title!r}: row {i} has {len(row)} cells, "
                                 f"the header {len(self.header)}")

    def markdown(self) -> str:
        def line(cells):
            return "| " + " | ".join(str(c).replace("|", r"\|") for c in cells) + " |"

        rule = "|" + "|".join("---" if i < self.label_columns else "---:"
                              for i in range(len(self.header))) + "|"
        body = [line(self.header), rule, *(line(r) for r in self.rows)]
        notes = "".join(f"\n{note}\n" for note in self.notes)
        return f"# {self.title}\n\n" + "\n".join(body) + "\n" + notes

    def latex(self, label: str = "") -> str:
        spec = "l" * self.label_columns + "r" * (len(self.header) - self.label_columns)
        caption = " ".join([self.title.rstrip(".") + ".", *self.notes])
        lines = [
            "% requires \\usepackage{booktabs}",
            "\\begin{table*}[t]",
            "\\centering",
            "\\small",
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
            " & ".join(latex_escape(c) for c in self.header) + " \\\\",
            "\\midrule",
            *(" & ".join(latex_escape(c) for c in row) + " \\\\" for row in self.rows),
            "\\bottomrule",
            "\\end{tabular}",
            f"\\caption{{{latex_escape(caption)}}}",
            *([f"\\label{{{label}}}"] if label else []),
            "\\end{table*}",
        ]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        def cells(tag, row):
            return "".join(f"<{tag}>{html.escape(str(c))}</{tag}>" for c in row)

        rows = "\n".join(f"<tr>{cells('td', r)}</tr>" for r in self.rows)
        notes = "\n".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return (
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(self.title)}</title><style>"
            "body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
            "th,td{border-bottom:1px solid #ccc;padding:3px 8px;text-align:right;white-space:nowrap}"
            f"td:nth-child(-n+{self.label_columns}),th:nth-child(-n+{self.label_columns})"
            "{text-align:left}</style></head><body>\n"
            f"<h3>{html.escape(self.title)}</h3>\n<table>\n<tr>{cells('th', self.header)}</tr>\n"
            f"{rows}\n</table>\n{notes}\n</body></html>\n"
        )

    @classmethod
    def from_markdown(cls, title: str, markdown: str, notes: list[str] | None = None,
                      label_columns: int = 1) -> "Table":
        """A table from a Markdown pipe table (header, rule, rows); other lines are ignored."""
        lines = [ln.strip() for ln in markdown.splitlines() if ln.strip().startswith("|")]
        if len(lines) < 2:
            raise ValueError(f"table {title!r}: no Markdown pipe table found")

        def split(line):
            return [c.strip() for c in line.strip("|").split(" | ")]

        return cls(title, split(lines[0]), [split(ln) for ln in lines[2:]], notes or [], label_columns)


def write_table(table: Table, csv: pl.DataFrame | None, out_dir: str | Path, stem: str) -> list[Path]:
    """{stem}.md, .tex, .html (and .csv when given) under out_dir, each written atomically."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    texts = {"md": table.markdown(), "tex": table.latex(f"tab:{stem}"), "html": table.html()}
    if csv is not None:
        texts["csv"] = csv.write_csv()
    paths = []
    for ext, text in texts.items():
        write_text_atomic(out_dir / f"{stem}.{ext}", text)
        paths.append(out_dir / f"{stem}.{ext}")
    return paths

