"""Issue 68's cause-by-cause table (src/tempoformer/reporting/causes.py): hand-built runs whose
means, differences and best baseline can be worked out by hand, a factor without runs, the
`causes` subcommand's files, and the config's `causes:` section (schema and start-up check)."""

import copy
import json

import polars as pl
import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config, validate

from conftest import REPO
from tempoformer.config_checks import check_causes
from tempoformer.reporting.causes import causes_table
from tempoformer.reporting.significance import Bootstrap
from tempoformer.reporting.tables import Dataset

SCHEMA = str(REPO / "workflow" / "schemas" / "config.schema.yaml")
# two folds of four test posts, two timelines of two posts each
GOLD = {0: ["A", "A", "B", "B"], 1: ["A", "B", "A", "B"]}
FLIP = {"A": "B", "B": "A"}
CAUSES = {"reference": "tempoformer", "baselines": ["bilstm", "swnu"],
          "factors": {"tempoformer_big": "backbone: a bigger one", "tempoformer_fold0": "one fold only",
                      "tempoformer_missing": "never ran"}}


def write_run(root, model, window, fold, seed, macro, dev, pred="right", device="cpu", setup=None):
    d = root / f"toy/runs/{model}/w{window}/fold{fold}/seed{seed}"
    d.mkdir(parents=True)
    metrics = {"dataset": "toy", "model": model, "window": window, "fold": fold, "seed": seed,
               "test": {"A": macro, "B": macro, "macro": macro}, "dev_macro": dev, "device": device}
    if setup is not None:
        metrics["setup"] = setup
    (d / "metrics.json").write_text(json.dumps(metrics))
    gold = GOLD[fold]
    preds = gold if pred == "right" else [FLIP[g] for g in gold]
    rows = [100 * fold + i for i in range(len(gold))]
    pl.DataFrame({"row": rows, "timeline_id": [f"f{fold}t{i // 2}" for i in range(len(gold))],
                  "post_id": [f"p{r}" for r in rows], "gold": gold, "pred": preds,
                  "prob_A": [1.0 if p == "A" else 0.0 for p in preds],
                  "prob_B": [1.0 if p == "B" else 0.0 for p in preds]}).write_parquet(d / "predictions.parquet")
    return d / "metrics.json"


@pytest.fixture
def runs(tmp_path):
    """(fold, seed 0) -> test macro / dev macro of each entry:
    reference tempoformer w20: test 0.60, 0.70; dev 0.50, 0.60 (and w5 with a worse dev: not chosen)
    factor tempoformer_big w20 (cuda, MPNet recorded): test 0.80, 0.90; dev 0.70, 0.80; every post right
    factor tempoformer_fold0 w20, fold 0 only: test 0.62, dev 0.55
    bilstm w20: test 0.75, 0.65 (mean 70); swnu w20: test 0.72, 0.74 (mean 73); both every post wrong."""
    paths = []
    for fold, (ref, big, bilstm, swnu) in enumerate([(0.60, 0.80, 0.75, 0.72), (0.70, 0.90, 0.65, 0.74)]):
        paths.append(write_run(tmp_path, "tempoformer", 20, fold, 0, ref, 0.50 + 0.1 * fold))
        paths.append(write_run(tmp_path, "tempoformer", 5, fold, 0, 0.99, 0.40, pred="wrong"))
        paths.append(write_run(tmp_path, "tempoformer_big", 20, fold, 0, big, 0.70 + 0.1 * fold, device="cuda",
                               setup={"numerics": {"device": "cuda", "gpu": "NVIDIA H200"},
                                      "backbone": {"name": "mpnet"}}))
        paths.append(write_run(tmp_path, "bilstm", 20, fold, 0, bilstm, 0.6, pred="wrong"))
        paths.append(write_run(tmp_path, "swnu", 20, fold, 0, swnu, 0.6, pred="wrong"))
    paths.append(write_run(tmp_path, "tempoformer_fold0", 20, 0, 0, 0.62, 0.55))
    # another model's run is ignored
    paths.append(write_run(tmp_path, "random", 1, 0, 0, 0.10, 0.10, pred="wrong"))
    return paths


def rows_by_model(csv: pl.DataFrame) -> dict:
    return {r["model"]: r for r in csv.iter_rows(named=True)}


def md_row(table, model):
    return next(r for r in table.rows if r[1].split()[0] == model)


def test_means_differences_and_best_baseline_by_hand(runs):
    table, csv = causes_table(runs, [Dataset("toy", ["A", "B"])], CAUSES,
                              backbones={"tempoformer_missing": "mpnet"}, bootstrap=Bootstrap(200, 0))
    by = rows_by_model(csv)
    assert list(by) == ["tempoformer", "tempoformer_big", "tempoformer_fold0", "tempoformer_missing"]

    ref = by["tempoformer"]
    assert ref["window"] == 20 and ref["runs"] == 2  # w20: dev 55 beats w5's 40
    assert ref["dev_macro"] == pytest.approx(55.0) and ref["test_macro"] == pytest.approx(65.0)
    assert ref["test_macro_std"] == pytest.approx(50 ** 0.5)  # sd of 60, 70
    assert ref["difference_reference"] is None
    # best baseline on both folds: swnu (73) over bilstm (70); 65 - 73
    assert ref["baseline"] == "swnu" and ref["baseline_test_macro"] == pytest.approx(73.0)
    assert ref["difference_baseline"] == pytest.approx(-8.0)
    assert md_row(table, "tempoformer") == [
        "toy", "tempoformer w20", "the committed setting (reference), at its best dev window", "MiniLM-L6", "cpu", "2", "55.0",
        "65.0 ± 7.1", "–", "SWNU w20 (73.0)", "-8.0", md_row(table, "tempoformer")[-1]]

    big = by["tempoformer_big"]
    assert big["dev_macro"] == pytest.approx(75.0) and big["test_macro"] == pytest.approx(85.0)
    assert big["difference_reference"] == pytest.approx(20.0) and big["reference_runs"] == 2
    assert big["baseline"] == "swnu" and big["difference_baseline"] == pytest.approx(12.0)
    # every post right against every post wrong: no resample where the factor is not better
    assert big["p_value"] == 0.0 and big["pooled_difference_baseline"] == pytest.approx(100.0)
    assert big["seeds_tested"] == "0" and big["folds_tested"] == "0, 1"
    assert md_row(table, "tempoformer_big")[3:] == [
        "MPNet-base", "cuda (NVIDIA H200)", "2", "75.0", "85.0 ± 7.1", "+20.0", "SWNU w20 (73.0)", "+12.0", "0.000"]

    # on fold 0 alone bilstm (75) beats swnu (72): the best baseline is chosen on the shared runs
    fold0 = by["tempoformer_fold0"]
    assert fold0["runs"] == 1 and fold0["folds"] == "0"
    assert fold0["difference_reference"] == pytest.approx(2.0)  # 62 - 60 on fold 0
    assert fold0["baseline"] == "bilstm" and fold0["baseline_test_macro"] == pytest.approx(75.0)
    assert fold0["difference_baseline"] == pytest.approx(-13.0)
    assert md_row(table, "tempoformer_fold0")[5:] == ["1", "55.0", "62.0", "+2.0", "BiLSTM w20 (75.0)", "-13.0",
                                                      md_row(table, "tempoformer_fold0")[-1]]

    # a factor without finished runs: "not run", and the table still builds
    assert by["tempoformer_missing"]["runs"] == 0
    assert md_row(table, "tempoformer_missing") == [
        "toy", "tempoformer_missing", "never ran", "MPNet-base", "–", "0", "not run", "not run", "–", "–", "–", "–"]
    assert "not run" in table.markdown()


def test_reference_difference_counts_only_shared_runs(tmp_path, runs):
    # a factor with seeds 0 and 1: the reference has seed 0 only, so 2 of its 4 runs pair
    extra = [write_run(tmp_path, "tempoformer_seeds", 20, f, s, 0.65 + 0.05 * s, 0.5) for f in (0, 1) for s in (0, 1)]
    causes = {**CAUSES, "factors": {"tempoformer_seeds": "two seeds"}}
    table, csv = causes_table(runs + extra, [Dataset("toy", ["A", "B"])], causes, bootstrap=Bootstrap(50, 0))
    row = rows_by_model(csv)["tempoformer_seeds"]
    assert row["runs"] == 4 and row["reference_runs"] == 2
    assert row["difference_reference"] == pytest.approx(65.0 - 65.0)  # seed 0: (65 - 60 + 65 - 70) / 2
    assert md_row(table, "tempoformer_seeds")[8] == "+0.0 (n=2)"
    # the baselines have seed 0 only: the block both ran is seed 0 x folds 0, 1
    assert row["baseline_runs"] == 2 and row["seeds_tested"] == "0"


def test_the_reference_also_at_the_factors_window(tmp_path, runs):
    # the reference's w10 has the best dev (90): its row is at w10, and a second row at w20, the
    # window the factors ran, which is what their differences are taken against
    extra = [write_run(tmp_path, "tempoformer", 10, f, 0, 0.50, 0.90) for f in (0, 1)]
    table, csv = causes_table(runs + extra, [Dataset("toy", ["A", "B"])], CAUSES, bootstrap=Bootstrap(20, 0))
    reference = csv.filter(pl.col("role") == "reference")
    assert reference["window"].to_list() == [10, 20]
    assert reference["test_macro"].to_list() == pytest.approx([50.0, 65.0])
    assert [r[1] for r in table.rows[:2]] == ["tempoformer w10", "tempoformer w20"]
    assert table.rows[1][2] == "the committed setting (reference) at w20, the factors' window"
    big = rows_by_model(csv)["tempoformer_big"]
    assert big["reference_window"] == 20 and big["difference_reference"] == pytest.approx(20.0)


def test_a_choice_made_on_dev_takes_per_run_the_member_with_the_best_dev(tmp_path, runs):
    # one entry per learning rate; per (fold, seed) the better dev wins, as a job's grid would:
    # fold 0 seed 0: lr_a (dev 70, test 62) over lr_b (dev 60, test 90); fold 1 seed 0: lr_b (dev 80,
    # test 66) over lr_a (dev 50); fold 0 seed 3: a tie on dev (60), the member listed first (lr_a,
    # test 70); fold 1 seed 3: lr_a only, so the pair is left out
    extra = [write_run(tmp_path, "tempoformer_lr_a", 20, 0, 0, 0.62, 0.70),
             write_run(tmp_path, "tempoformer_lr_b", 20, 0, 0, 0.90, 0.60),
             write_run(tmp_path, "tempoformer_lr_a", 20, 1, 0, 0.50, 0.50),
             write_run(tmp_path, "tempoformer_lr_b", 20, 1, 0, 0.66, 0.80),
             write_run(tmp_path, "tempoformer_lr_a", 20, 0, 3, 0.70, 0.60),
             write_run(tmp_path, "tempoformer_lr_b", 20, 0, 3, 0.80, 0.60),
             write_run(tmp_path, "tempoformer_lr_a", 20, 1, 3, 0.99, 0.99)]
    causes = {**CAUSES, "factors": {"tempoformer_lr_grid": "lr chosen on dev", "tempoformer_lr_b": "lr b"},
              "chosen_on_dev": {"tempoformer_lr_grid": ["tempoformer_lr_a", "tempoformer_lr_b"]}}
    table, csv = causes_table(runs + extra, [Dataset("toy", ["A", "B"])], causes,
                              backbones={"tempoformer_lr_a": "mpnet"}, bootstrap=Bootstrap(20, 0))
    grid = rows_by_model(csv)["tempoformer_lr_grid"]
    assert grid["backbone"] == "MPNet-base"  # no run recorded one: the first member's config entry
    assert grid["runs"] == 3 and grid["seeds"] == "0, 3" and grid["folds"] == "0, 1"
    assert grid["test_macro"] == pytest.approx((62 + 66 + 70) / 3)
    assert grid["dev_macro"] == pytest.approx((70 + 80 + 60) / 3)
    # against the reference on seed 0, the runs both have: (62 - 60 + 66 - 70) / 2
    assert grid["reference_runs"] == 2 and grid["difference_reference"] == pytest.approx(-1.0)
    # a member listed as a factor keeps its own row, from its own runs
    assert rows_by_model(csv)["tempoformer_lr_b"]["test_macro"] == pytest.approx((90 + 66 + 80) / 3)
    assert "'tempoformer_lr_grid': per (fold, seed) that each of tempoformer_lr_a, tempoformer_lr_b ran" \
        in table.markdown()


def test_no_runs_at_all_still_builds(tmp_path):
    table, csv = causes_table([], [Dataset("toy", ["A", "B"])], CAUSES)
    assert csv["runs"].to_list() == [0, 0, 0, 0]
    assert all(r[6] == "not run" for r in table.rows)


def test_the_subcommand_writes_the_four_files(tmp_path, runs):
    from tempoformer.cli import main

    out = tmp_path / "tables"
    assert main(["causes", "--metrics", *map(str, runs), "--datasets",
                 json.dumps({"toy": {"labels": ["A", "B"], "paper_column": None}}),
                 "--causes", json.dumps(CAUSES), "--resamples", "20", "--out-dir", str(out)]) in (0, None)
    assert sorted(p.name for p in out.iterdir()) == ["causes.csv", "causes.html", "causes.md", "causes.tex"]
    markdown = (out / "causes.md").read_text()
    assert markdown.startswith("# Cause by cause")
    assert "20 resamples of whole test timelines" in markdown  # the note names the bootstrap
    assert "Compared runs (the bootstrap's): toy/tempoformer w20 vs swnu w20: seeds 0, folds 0, 1" in markdown


def merged(*names: str) -> dict:
    config: dict = {}
    for name in names:
        update_config(config, yaml.safe_load((REPO / "config" / name).read_text()))
    return config


@pytest.mark.parametrize("files", [
    ["lrs.yaml", "lrs_cpu.yaml", "lrs_cpu_tables.yaml", "gpu_seeds.yaml", "gpu_seeds_temporal_rope.yaml",
     "lrs_causes.yaml"],
    ["topic_shift_mi.yaml", "topic_shift_mi_cpu.yaml", "topic_shift_mi_cpu_tables.yaml", "gpu_seeds.yaml",
     "topic_shift_mi_causes.yaml"],
])
def test_the_causes_overlays_validate_and_name_their_entries(files):
    config = merged(*files)
    validate(copy.deepcopy(config), SCHEMA)
    check_causes(config)
    causes = config["causes"]
    assert causes["reference"] == "tempoformer" and "tempoformer_mpnet" in causes["factors"]
    dataset = next(iter(config["datasets"]))
    choices = causes.get("chosen_on_dev") or {}
    assert set(causes["factors"]) - set(choices) <= set(config["datasets"][dataset]["models"])
    assert {m for members in choices.values() for m in members} <= set(config["datasets"][dataset]["models"])


def test_a_factor_that_is_no_model_entry_is_refused():
    config = merged("lrs.yaml", "lrs_cpu.yaml", "lrs_cpu_tables.yaml", "lrs_causes.yaml")
    config["causes"]["factors"]["tempoformer_typo"] = "misspelt"
    validate(copy.deepcopy(config), SCHEMA)  # the schema cannot compare the section's keys with models'
    with pytest.raises(ValueError, match=r"causes\.factors\.tempoformer_typo: names 'tempoformer_typo', "
                                         r"which has no entry under models"):
        check_causes(config)
    bad = copy.deepcopy(config)
    bad["causes"]["factors"].pop("tempoformer_typo")
    bad["causes"]["baselines"] = ["bilstm", "lstm"]
    with pytest.raises(ValueError, match=r"causes\.baselines\[1\]: names 'lstm'"):
        check_causes(bad)


def test_a_choice_made_on_dev_is_checked():
    config = merged("lrs.yaml", "lrs_cpu.yaml", "lrs_cpu_tables.yaml", "lrs_causes.yaml")
    good = copy.deepcopy(config)
    good["causes"]["factors"]["lr_chosen"] = "lr chosen on dev"
    good["causes"]["chosen_on_dev"] = {"lr_chosen": ["tempoformer_lr_paper", "tempoformer_pool_mean"]}
    validate(copy.deepcopy(good), SCHEMA)
    check_causes(good)
    missing = copy.deepcopy(good)
    missing["causes"]["chosen_on_dev"]["lr_chosen"][1] = "tempoformer_lr_nowhere"
    with pytest.raises(ValueError, match=r"causes\.chosen_on_dev\.lr_chosen\[1\]: names 'tempoformer_lr_nowhere'"):
        check_causes(missing)
    not_a_factor = copy.deepcopy(good)
    not_a_factor["causes"]["factors"].pop("lr_chosen")
    with pytest.raises(ValueError, match=r"causes\.chosen_on_dev\.lr_chosen: is not a factor"):
        check_causes(not_a_factor)
    an_entry = copy.deepcopy(good)
    an_entry["causes"]["chosen_on_dev"] = {"tempoformer_mpnet": ["tempoformer_lr_paper", "tempoformer_pool_mean"]}
    with pytest.raises(ValueError, match=r"causes\.chosen_on_dev\.tempoformer_mpnet: is also an entry"):
        check_causes(an_entry)
    one_member = copy.deepcopy(good)
    one_member["causes"]["chosen_on_dev"]["lr_chosen"] = ["tempoformer_lr_paper"]
    with pytest.raises(WorkflowError):
        validate(one_member, SCHEMA)


@pytest.mark.parametrize("change", [
    lambda c: c["causes"].pop("reference"),
    lambda c: c["causes"].update(factors={"tempoformer_mpnet": 3}),
    lambda c: c["causes"].update(baselines=[]),
    lambda c: c["causes"].update(colour="red"),
])
def test_the_schema_checks_the_section_shape(change):
    config = merged("lrs.yaml", "lrs_cpu.yaml", "lrs_cpu_tables.yaml", "lrs_causes.yaml")
    change(config)
    with pytest.raises(WorkflowError):
        validate(config, SCHEMA)
