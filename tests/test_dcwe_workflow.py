"""The DCWE stage through the real snakemake CLI: its rules run, a rerun plans nothing, the
default config plans every DCWE rule, the CPU-scale config plans its grid."""

from types import SimpleNamespace

import pytest
import yaml

from conftest import REPO, planned_jobs, snakemake

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
    for the sentiment task (DCWE; the units' vectors read from a word2vec text file): each DCWE rule
    runs once, except dcwe_data (twice), in 9 jobs. CWE, SA and TA add jobs of the same two rules;
    the tables' pairing of two models (Wilcoxon, McNemar) is tested in test_dcwe_tables."""
    words = "garden music summer lovely train river morning city coffee window".split()
    rows = ["doc_id,unit,time,text,label"]
    for i in range(36):
        text = " ".join(words[(i + k) % len(words)] for k in range(8))
        rows.append(f"d{i},u{i % 4},{i % 3},{text},{i % 2}")
    (tmp_path / "docs.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "edges.csv").write_text("source,target\nu0,u1\nu1,u2\nu2,u3\n")
    (tmp_path / "vectors.txt").write_text("4 50\n" + "".join(f"u{u} " + " ".join(f"{(u + k) % 7 / 7:.3f}" for k in range(50))
                                                           + "\n" for u in range(4)))
    corpus = {"format": "csv", "docs": str(tmp_path / "docs.csv"), "edges": str(tmp_path / "edges.csv")}
    return {
        "results": "results",
        "dcwe": {
            "backbone": tiny_backbone(tmp_path / "backbone"), "seeds": [0], "threads": 1, "device": "cpu",
            "variants": ["dcwe"], "max_length": 16,
            "node2vec": {"dim": 50, "walks_per_node": 2, "walk_length": 5, "epochs": 1},
            "warmup": {"steps": 2, "batch_size": 4, "lr": 1e-3},
            "training": {"steps": 2, "batch_size": 4, "lr": 1e-3},
            "sentiment": {"post_pooling": "mean", "steps": 2, "batch_size": 4, "lr": 1e-3},
            "evaluation": {"batch_size": 16, "sigma_top": 3},
            "datasets": {"toy": corpus,
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
    assert ran == {"dcwe_data": 2, "dcwe_node2vec": 1, "dcwe_vectors": 1, "dcwe_warmup": 1,
                                    "dcwe_train": 1, "dcwe_sentiment": 1, "dcwe_tables": 1, "all": 1}
    tables = tmp_path / "results" / "tables"
    for stem in ("dcwe_table1", "dcwe_table2", "dcwe_table3", "dcwe_table4", "dcwe_table5", "dcwe_change", "dcwe_grid"):
        assert (tables / f"{stem}.md").is_file() and (tables / f"{stem}.csv").is_file()
    assert "| toy | DCWE | ours" in (tables / "dcwe_table2.md").read_text()
    assert "| toy_rated | DCWE | ours" in (tables / "dcwe_table5.md").read_text()
    assert "| 6 (ours) | MLM (dev perplexity) | toy | DCWE |" in (tables / "dcwe_grid.md").read_text()
    again = snakemake(tmp_path, configfile, "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_default_config_plans_the_dcwe_stage(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, configfile, "-n", "dcwe_all")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = {rule: n for rule, n in planned_jobs(result).items() if rule.startswith("dcwe")}
    # chitchat_tiny: cwe, dcwe, sa, ta; chitchat_graded (time only): sa; chitchat_rating_tiny: sentiment cwe, dcwe
    assert jobs == {"dcwe_data": 3, "dcwe_node2vec": 2, "dcwe_warmup": 2, "dcwe_train": 5, "dcwe_sentiment": 2,
                    "dcwe_tables": 1, "dcwe_all": 1}


def test_the_cpu_scale_config_plans_its_grid(tmp_path):
    """config/dcwe_chitchat.yaml: lr x lambda_a for DCWE (4 points), lr for CWE (2), SA and TA at one point."""
    result = snakemake(tmp_path, REPO / "config" / "dcwe_chitchat.yaml", "-n", "dcwe_all")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = {rule: n for rule, n in planned_jobs(result).items() if rule.startswith("dcwe")}
    assert jobs == {"dcwe_data": 2, "dcwe_node2vec": 2, "dcwe_warmup": 1, "dcwe_train": 8, "dcwe_sentiment": 6,
                    "dcwe_tables": 1, "dcwe_all": 1}
    for point in ("dcwe/lr1e-05_la0.01", "dcwe/lr3e-05_la0.1", "cwe/lr1e-05", "sa/lr3e-05_la0.1",
                  "sentiment/dcwe/lr1e-05_la0.1", "sentiment/cwe/lr3e-05"):
        assert f"seed0/{point}/metrics.json" in result.stdout, point


def test_a_social_variant_on_a_time_only_corpus_is_refused(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["dcwe"]["datasets"]["chitchat_graded"]["variants"] = ["sa", "ta"]
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, configfile, "-n", "dcwe_all")
    assert result.returncode != 0 and "no social units" in result.stdout + result.stderr
