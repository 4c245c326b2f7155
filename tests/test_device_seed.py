"""scripts/device_seed.py: twins are runs with equal fingerprints on different devices, and the
chance scale beside them is the gap between two seeds of one fold on one device."""
import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import REPO

SCRIPT = REPO / "scripts" / "device_seed.py"


@pytest.fixture(scope="module")
def device_seed():
    spec = importlib.util.spec_from_file_location("device_seed", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_run(root, model, fold, seed, device, test, dev, fingerprint):
    folder = root / "runs" / model / "w20" / f"fold{fold}" / f"seed{seed}"
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps({
        "model": model, "window": 20, "fold": fold, "seed": seed, "device": device,
        "test": {"macro": test}, "dev_macro": dev, "fingerprint": fingerprint}))


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "toy"
    # fold 0: seed 1 on the GPU and its CPU twin (same fingerprint), seed 2 on the GPU
    write_run(root, "tf", 0, 1, "cuda", 0.50, 0.60, "aaa")
    write_run(root, "tf_twin", 0, 1, "cpu", 0.53, 0.58, "aaa")
    write_run(root, "tf", 0, 2, "cuda:0", 0.56, 0.61, "bbb")
    # fold 1: two GPU seeds, one CPU run whose fingerprint has no twin
    write_run(root, "tf", 1, 1, "cuda", 0.40, 0.45, "ccc")
    write_run(root, "tf", 1, 2, "cuda", 0.45, 0.44, "ddd")
    write_run(root, "tf_twin", 1, 1, "cpu", 0.70, 0.70, "eee")
    return root


def test_twins_pair_equal_fingerprints_across_devices_only(device_seed, results):
    pairs = device_seed.twins(results)
    assert [(c["model"], g["model"], c["fold"], c["seed"]) for c, g in pairs] == [("tf_twin", "tf", 0, 1)]
    cpu, gpu = pairs[0]
    assert (cpu["test"]["macro"], gpu["test"]["macro"]) == (0.53, 0.50)


def test_chance_scale_is_every_same_device_seed_pair_of_a_fold(device_seed, results):
    gaps = device_seed.same_device_seed_gaps(results, "tf", 20)
    # fold 0 GPU: 50 vs 56; fold 1 GPU: 40 vs 45; the CPU runs are in another model's folder
    assert sorted(round(abs(g), 6) for g in gaps) == [5.0, 6.0]


def test_script_prints_the_twin_row(results):
    out = subprocess.run([sys.executable, str(SCRIPT), str(results)], capture_output=True, text=True, check=True)
    assert "| tf_twin | tf | 0 | 1 | 53.0, 50.0, +3.00 | 58.0, 60.0, -2.00 |" in out.stdout
