"""Grid-search record: each point's dev macro-F1 and 1-based best epoch, the choice, errors."""

import json

import pytest

from tempoformer.cli import main

RUN = {
    "model": "bilstm", "seconds": 95.4, "selected": {"lr": 1e-4, "hidden_dim": 300},
    "test": {"macro": 0.5081},
    "grid": [
        {"hp": {"lr": 1e-3, "hidden_dim": 300}, "dev_macro": 0.5421, "best_epoch": 1},
        {"hp": {"lr": 1e-4, "hidden_dim": 300}, "dev_macro": 0.57861, "best_epoch": 0},
    ],
}


def test_record_lists_every_point_and_the_choice(tmp_path):
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(RUN))
    out = tmp_path / "record" / "grid.md"
    assert main(["grid-report", "--metrics", str(path), "--title", "LRS search",
                 "--intro", "Fold 0, seed 0.", "--out", str(out)]) == 0
    assert out.read_text() == (
        "# LRS search\n\nFold 0, seed 0.\n\n"
        '## bilstm: chose {"hidden_dim": 300, "lr": 0.0001} (test macro 50.8, 95 s for the search)\n\n'
        "| grid point | dev macro-F1 | epoch |\n|---|---|---|\n"
        '| {"hidden_dim": 300, "lr": 0.001} | 54.2 | 2 |\n'
        '| {"hidden_dim": 300, "lr": 0.0001} | 57.9 | 1 |\n'
    )


def test_run_without_grid_is_named(tmp_path, capsys):
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({**RUN, "grid": []}))
    assert main(["grid-report", "--metrics", str(path), "--title", "t", "--out", str(tmp_path / "g.md")]) == 1
    assert f"{path}: no 'grid' entry" in capsys.readouterr().err
    assert not (tmp_path / "g.md").exists()
