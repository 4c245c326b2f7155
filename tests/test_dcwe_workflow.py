"""The DCWE stage through the real snakemake CLI: its rules run, a rerun plans nothing, the
default config plans every DCWE rule, the CPU-scale config plans its grid."""

import json
import shutil
from types import SimpleNamespace

import pytest
import yaml

from conftest import REPO, as_a_fresh_clone, planned_jobs, snakemake

pytestmark = pytest.mark.slow  # runs the Snakemake DAG (9 jobs with a tiny backbone) and three dry runs


def tiny_backbone(folder):
    """A 2-layer, 16-wide BERT with MiniLM's tokenizer, saved as a model folder (the config's backbone)."""
    import torch
    from transformers import BertConfig, BertModel

    from tempoformer.semantic_change.model import load_tokenizer

    torch.manual_seed(0)
    config = BertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                        max_position_embeddings=64)
    BertModel(config, add_pooling_layer=False).save_pretrained(folder)
    load_tokenizer("minilm").save_pretrained(folder)
    return str(folder)


def tiny_config(tmp_path):
    """Two datasets on one small CSV corpus with labels: `toy` for MLM (DCWE; node2vec), `toy_rated`
    for the sentiment task (DCWE; the units' vectors read from a word2vec text file). Seeds 0 and 1,
    the grid (two lr) searched on seed 0: DCWE trains at both points on seed 0 and once, at the
    better one, on seed 1 (`selected`); the held-out-month test and the diffusion analysis of DCWE
    on seed 0. CWE, SA, TA and static add jobs of the same rules; the tables' pairing of two models
    (Wilcoxon, McNemar) is tested in test_dcwe_tables."""
    words = "garden music summer lovely train river morning city coffee window".split()
    rows = ["doc_id,unit,time,text,label"]
    for i in range(36):
        text = " ".join(words[(i + k) % len(words)] for k in range(8)) + (" network learning" if i % 3 else "")
        rows.append(f"d{i},u{i % 4},{i % 3},{text},{i % 2}")
    (tmp_path / "docs.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "edges.csv").write_text("source,target\nu0,u1\nu1,u2\nu2,u3\n")
    (tmp_path / "vectors.txt").write_text("4 50\n" + "".join(f"u{u} " + " ".join(f"{(u + k) % 7 / 7:.3f}" for k in range(50))
                                                           + "\n" for u in range(4)))
    corpus = {"format": "csv", "docs": str(tmp_path / "docs.csv"), "edges": str(tmp_path / "edges.csv")}
    return {
        "results": "results",
        "dcwe": {
            "backbone": tiny_backbone(tmp_path / "backbone"), "seeds": [0, 1], "grid_seeds": [0], "threads": 1,
            "device": "cpu", "variants": ["dcwe"], "max_length": 16,
            "node2vec": {"dim": 50, "walks_per_node": 2, "walk_length": 5, "epochs": 1},
            "warmup": {"steps": 2, "batch_size": 4, "lr": 1e-3},
            "training": {"epochs": 2, "patience": 1, "batch_size": 8, "lr": 1e-3},
            "grid": {"lr": [1e-3, 1e-2], "variants": ["dcwe"]},
            "sentiment": {"post_pooling": "mean", "steps": 2, "batch_size": 4, "lr": 1e-3},
            "evaluation": {"batch_size": 16, "sigma_top": 3},
            "datasets": {"toy": {**corpus, "extrapolation": {"variants": ["dcwe"], "seeds": [0]},
                                 "diffusion": {"variants": ["dcwe"], "seeds": [1], "neighbours": 5,
                                               "pairs": [["network", "learning"]]}},
                         "toy_rated": {**corpus, "vectors": str(tmp_path / "vectors.txt"), "variants": [],
                                       "sentiment_variants": ["dcwe"]}},
        },
    }


def test_the_stage_runs_and_a_rerun_does_nothing(tmp_path):
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(tiny_config(tmp_path)))
    result = snakemake(tmp_path, configfile)
    assert result.returncode == 0, result.stderr[-4000:]
    ran = planned_jobs(SimpleNamespace(stdout=result.stderr))  # a real run logs its job table on stderr
    assert ran == {"dcwe_data": 2, "dcwe_node2vec": 1, "dcwe_vectors": 1, "dcwe_warmup": 2, "dcwe_warmup_holdout": 1,
                   "dcwe_train": 3, "dcwe_extrapolate": 1, "dcwe_diffusion": 1, "dcwe_sentiment": 2,
                   "dcwe_tables": 1, "all": 1}
    tables = tmp_path / "results" / "tables"
    for stem in ("dcwe_table1", "dcwe_table2", "dcwe_table3", "dcwe_table4", "dcwe_table5", "dcwe_change", "dcwe_grid",
                 "dcwe_equal_epochs", "dcwe_extrapolation", "dcwe_diffusion"):
        assert (tables / f"{stem}.md").is_file() and (tables / f"{stem}.csv").is_file()
    assert "| toy | DCWE | ours (MiniLM-L6, 2 seeds)" in (tables / "dcwe_table2.md").read_text()
    assert "| toy_rated | DCWE | ours (MiniLM-L6, 2 seeds)" in (tables / "dcwe_table5.md").read_text()
    assert "| 6 (ours) | MLM (dev perplexity) | toy | DCWE |" in (tables / "dcwe_grid.md").read_text()
    assert "| toy | DCWE | 2 |" in (tables / "dcwe_equal_epochs.md").read_text()
    assert "| toy | DCWE | 1 | network / learning |" in (tables / "dcwe_diffusion.md").read_text()
    runs = tmp_path / "results" / "dcwe" / "toy"
    grid = [json.loads((runs / "seed0" / "dcwe" / p / "metrics.json").read_text()) for p in ("lr0.001_la0.1", "lr0.01_la0.1")]
    best = min(grid, key=lambda r: r["dev"]["perplexity"])
    selected = json.loads((runs / "seed1" / "dcwe" / "selected" / "metrics.json").read_text())
    assert selected["seed"] == 1 and selected["lr"] == best["lr"] and selected["selected_from"]["seed"] == 0
    held = json.loads((runs / "seed0" / "extrapolation" / "dcwe" / "metrics.json").read_text())
    assert held["lr"] == best["lr"] and held["held_out_time"] == "2"
    figures = tmp_path / "results" / "figures" / "dcwe" / "toy"
    assert {f.name for f in figures.iterdir()} == {"figure4_dcwe_seed1.png", "figure5_dcwe_seed1.png"}
    again = snakemake(tmp_path, configfile, "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr

    # A fresh clone: the committed records (metrics, losses, predictions, diffusion tables) with
    # new dates, no warm-ups, weights, node vectors, docs.parquet, nor Snakemake's own records.
    results = tmp_path / "results"
    as_a_fresh_clone(tmp_path, lambda path: path.suffix not in (".pt", ".npy") and path.name != "docs.parquet")
    fresh = snakemake(tmp_path, configfile, "-n")
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    planned = planned_jobs(fresh)
    for rule in ("dcwe_train", "dcwe_extrapolate", "dcwe_sentiment", "dcwe_diffusion", "dcwe_warmup", "dcwe_node2vec"):
        assert rule not in planned, (rule, planned)

    # the diffusion analysis needs weights, which are not committed: to be made again (a changed
    # setting), it stops the plan with a clear error, its committed records as they were
    config = tiny_config(tmp_path)
    config["dcwe"]["datasets"]["toy"]["diffusion"]["neighbours"] = 4
    configfile.write_text(yaml.safe_dump(config))
    analysis = results / "dcwe" / "toy" / "seed1" / "diffusion" / "dcwe" / "metrics.json"
    before = analysis.read_text()
    redone = snakemake(tmp_path, configfile, "dcwe_all")
    assert redone.returncode != 0 and "weights are not" in redone.stdout + redone.stderr
    assert "dcwe_train" not in planned_jobs(SimpleNamespace(stdout=redone.stderr))
    assert analysis.read_text() == before

    # one training setting changed: every MLM run and what reads them is made again (the
    # sentiment runs, from the backbone with their own section, are not)
    for marker in results.rglob(".stale"):  # if the stopped plan above got to touch one
        marker.unlink()
    config = tiny_config(tmp_path)
    config["dcwe"]["training"]["epochs"] = 3
    configfile.write_text(yaml.safe_dump(config))
    changed = snakemake(tmp_path, configfile, "-n")
    assert changed.returncode == 0, changed.stderr[-3000:]
    planned = planned_jobs(changed)
    assert planned["dcwe_train"] == 3 and planned["dcwe_extrapolate"] == 1 and planned["dcwe_diffusion"] == 1
    assert planned["dcwe_stale_run"] == 5 and "dcwe_sentiment" not in planned


def test_default_config_plans_the_dcwe_stage(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, configfile, "-n", "dcwe_all")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = {rule: n for rule, n in planned_jobs(result).items() if rule.startswith("dcwe")}
    # chitchat_tiny: cwe, dcwe, sa, ta, static, the held-out month (cwe, dcwe) and the diffusion
    # analysis of dcwe; chitchat_graded (time only): sa; chitchat_rating_tiny: sentiment cwe, dcwe
    assert jobs == {"dcwe_data": 3, "dcwe_node2vec": 2, "dcwe_warmup": 2, "dcwe_warmup_holdout": 1, "dcwe_train": 6,
                    "dcwe_extrapolate": 2, "dcwe_diffusion": 1, "dcwe_sentiment": 2, "dcwe_tables": 1, "dcwe_all": 1}


def test_the_cpu_scale_config_plans_an_equal_grid_and_three_seeds(tmp_path):
    """config/dcwe_chitchat.yaml: lr {1e-4, 3e-4} at lambda_a 0.1 for all five models on seed 0
    (10 runs), each model once at its seed-0 best point on seeds 1 and 2 (10 runs); sentiment CWE
    and DCWE at lr {3e-5, 1e-4} the same way (4 + 4); the held-out month for 4 models, diffusion for 2."""
    result = snakemake(tmp_path, REPO / "config" / "dcwe_chitchat.yaml", "-n", "dcwe_all")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = {rule: n for rule, n in planned_jobs(result).items() if rule.startswith("dcwe")}
    assert jobs == {"dcwe_data": 2, "dcwe_node2vec": 2, "dcwe_warmup": 3, "dcwe_warmup_holdout": 1, "dcwe_train": 20,
                    "dcwe_extrapolate": 4, "dcwe_diffusion": 2, "dcwe_sentiment": 8, "dcwe_tables": 1, "dcwe_all": 1}
    for variant in ("dcwe", "sa", "ta", "static"):
        for point in ("lr0.0001_la0.1", "lr0.0003_la0.1"):
            assert f"chitchat_c5/seed0/{variant}/{point}/metrics.json" in result.stdout, (variant, point)
    for point in ("seed0/cwe/lr0.0001", "seed0/cwe/lr0.0003", "seed1/dcwe/selected", "seed2/cwe/selected",
                  "seed2/static/selected", "seed1/sentiment/dcwe/selected", "seed0/sentiment/cwe/lr3e-05",
                  "seed0/sentiment/cwe/lr0.0001", "seed0/extrapolation/static", "seed0/diffusion/cwe"):
        assert f"{point}/metrics.json" in result.stdout, point
    assert "seed1/dcwe/lr" not in result.stdout               # no grid on seeds 1 and 2
    assert "seed0/sentiment/cwe/lr0.0003" not in result.stdout


def test_the_diffusion_analysis_asks_only_for_the_best_points_weights(tmp_path):
    """Run records are committed, weights are not: in a fresh clone the CWE diffusion analysis of
    seed 0 needs the weights of its best dev point alone (lr 1e-4: dev perplexity 36.56 against
    45.25 at 3e-4), so rule dcwe_weights_not_here names that run and not the other."""
    for point in ("lr0.0001", "lr0.0003"):
        source = REPO / "results" / "dcwe" / "chitchat_c5" / "seed0" / "cwe" / point
        target = tmp_path / "results" / "dcwe" / "chitchat_c5" / "seed0" / "cwe" / point
        target.mkdir(parents=True)
        for name in ("metrics.json", "losses.parquet"):
            shutil.copy(source / name, target / name)
    result = snakemake(tmp_path, REPO / "config" / "dcwe_chitchat.yaml", "-n",
                       "results/dcwe/chitchat_c5/seed0/diffusion/cwe/metrics.json")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert planned_jobs(result)["dcwe_weights_not_here"] == 1
    assert "seed0/cwe/lr0.0001/model.pt" in result.stdout
    assert "seed0/cwe/lr0.0003/model.pt" not in result.stdout
    assert "dcwe_train" not in planned_jobs(result)        # both records are current: nothing retrains


def test_a_social_variant_on_a_time_only_corpus_is_refused(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["dcwe"]["datasets"]["chitchat_graded"]["variants"] = ["sa", "ta"]
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, configfile, "-n", "dcwe_all")
    assert result.returncode != 0 and "no social units" in result.stdout + result.stderr
