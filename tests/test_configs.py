"""The shipped config overlays, merged the way `snakemake --configfile a.yaml b.yaml ...` merges
them (later files update earlier ones key by key)."""

import copy

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config, validate

from conftest import REPO

SCHEMA = str(REPO / "workflow" / "schemas" / "config.schema.yaml")
PAPER_SEEDS = [0, 1, 12, 123]
FAMILY = {  # the TempoFormer-family entries each real dataset trains (Tables 2, 3, 4, 11)
    "lrs": ["tempoformer", "tempoformer_no_temporal_rope", "tempoformer_no_rope",
            "tempoformer_no_stream_embeddings", "tempoformer_no_gate_norm", "robert", "rotempoformer"],
    "topic_shift_mi": ["tempoformer", "tempoformer_no_rope", "tempoformer_no_stream_embeddings",
                       "tempoformer_no_gate_norm", "robert", "rotempoformer"],
}
GPU_OVERLAYS = {"lrs": ["gpu_seeds.yaml", "gpu_seeds_temporal_rope.yaml"],
                "topic_shift_mi": ["gpu_seeds.yaml"]}


def merged(*names: str) -> dict:
    config: dict = {}
    for name in names:
        update_config(config, yaml.safe_load((REPO / "config" / name).read_text()))
    validate(copy.deepcopy(config), SCHEMA)
    return config


def cpu_tables(dataset: str) -> list[str]:
    return [f"{dataset}.yaml", f"{dataset}_cpu.yaml", f"{dataset}_cpu_tables.yaml"]


@pytest.mark.parametrize("dataset", ["lrs", "topic_shift_mi"])
def test_gpu_seeds_overlay_gives_every_family_cell_the_paper_seeds_and_changes_nothing_else(dataset):
    cpu = merged(*cpu_tables(dataset))
    gpu = merged(*cpu_tables(dataset), *GPU_OVERLAYS[dataset])
    trained = gpu["datasets"][dataset]["models"]
    family = [m for m in trained if gpu["models"][m].get("type", m) == "tempoformer"]
    assert family == FAMILY[dataset]
    for model in family:
        assert cpu["models"][model].pop("seeds") == [0]  # the CPU protocol: seed 0
        assert gpu["models"][model].pop("seeds") == PAPER_SEEDS
    # windows, folds, threads, the lr and every other setting stay the CPU overlays'
    assert gpu == cpu


def test_temporal_rope_seeds_are_kept_apart_from_a_dataset_without_timestamps():
    """Topic Shift MI defines no temporal-RoPE ablation, so an overlay naming it would leave an
    entry with seeds alone, which the schema refuses."""
    with pytest.raises(WorkflowError, match="tempoformer_no_temporal_rope|windows|params"):
        merged(*cpu_tables("topic_shift_mi"), "gpu_seeds.yaml", "gpu_seeds_temporal_rope.yaml")
