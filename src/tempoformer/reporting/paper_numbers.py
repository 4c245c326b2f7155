"""The TempoFormer paper's published numbers, copied from its tables into reporting/paper/*.csv.

Each CSV keeps its source line as a `#` comment. Dataset columns are named `<paper column>_<label>`
(LRS_Sw, TalkLife_IE, TopicShift_M, ...); a config dataset's `paper_column` names the paper
column it reproduces, and our label names equal the suffixes.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

PAPER_DIR = Path(__file__).with_name("paper")
FILES = {
    1: "tempoformer_table1_datasets.csv",
    2: "tempoformer_table2.csv",
    3: "tempoformer_table3_ablations.csv",
    4: "tempoformer_table4_recurrence.csv",
    5: "tempoformer_table5_diversity.csv",
    6: "tempoformer_table6_roberta.csv",
    11: "tempoformer_table11_window.csv",
}
PAPER_COLUMNS = ("LRS", "TalkLife", "TopicShift")
CITATION = "Tseriotou et al., EMNLP 2024"


def read_table(table: int, as_printed: bool = False) -> pl.DataFrame:
    """The paper's table: strings kept as strings, numbers as floats; `as_printed`: every cell
    as the text the paper prints (Table 1's median "13" stays "13", not 13.0)."""
    if table not in FILES:
        raise ValueError(f"the paper has no table {table} here; known: {sorted(FILES)}")
    return pl.read_csv(PAPER_DIR / FILES[table], comment_prefix="#", infer_schema_length=None,
                       infer_schema=not as_printed)


def f1_numbers(table: int) -> dict[tuple[str, str, str], float]:
    """{(row, paper column, label): test F1 %} of Tables 2, 3, 4, 6 and 11.

    The row is the model as the paper names it ("BiLSTM", "-RoPE MHA"), or for Table 11 the
    window as text ("20"). Cells the paper leaves empty are absent. Table 6 (TalkLife only)
    has plain label columns; they are read as TalkLife's.
    """
    frame = read_table(table)
    key = "window" if table == 11 else "model"
    numbers = {}
    for row in frame.iter_rows(named=True):
        for column, value in row.items():
            if column in ("level", key) or value is None:
                continue
            dataset, label = ("TalkLife", column) if table == 6 else column.split("_", 1)
            numbers[(str(row[key]), dataset, label)] = float(value)
    return numbers


def dataset_rows(table: int) -> dict[str, dict]:
    """Tables 1 and 5: {paper column: that dataset's row as a dict}."""
    if table not in (1, 5):
        raise ValueError("dataset_rows reads Tables 1 and 5")
    return {row["dataset"]: row for row in read_table(table, as_printed=table == 1).iter_rows(named=True)}
