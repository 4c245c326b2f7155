"""The tiny DAG's tables and figure, and `snakemake --report` over them."""

import pytest

from conftest import snakemake

pytestmark = pytest.mark.slow


def test_dag_writes_every_table_and_the_report(finished_run):
    workdir, config = finished_run
    tables, figures = workdir / "results/tiny/tables", workdir / "results/tiny/figures"
    for stem in ("table1", "table2", "table3", "table4", "table5", "table6", "table11", "coverage"):
        for ext in ("md", "csv", "tex", "html"):
            assert (tables / f"{stem}.{ext}").stat().st_size > 0, f"{stem}.{ext}"
    assert "| chitchat |" in (tables / "table5.md").read_text()
    assert "p = " in (tables / "table2.md").read_text()  # TempoFormer vs the best dev baseline
    assert (figures / "figure3.png").read_bytes()[:4] == b"\x89PNG"

    result = snakemake(workdir, config, "--report", "results/report.html")
    assert result.returncode == 0, result.stderr[-3000:]
    report = (workdir / "results/report.html").read_text()
    for caption in ("Table 1: dataset statistics.", "Table 2: change detection.", "Table 5: dataset diversity.",
                    "Table 11: window size.", "Coverage (beyond the paper).", "Figure 3: TempoFormer results for different window sizes."):
        assert caption in report, caption
