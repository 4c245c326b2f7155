"""What a future-LM job's numbers depend on besides its inputs (future_lm/numerics.py): recorded,
warned about when not the workflow's, and mixed numerics across the runs of one table flagged."""

import logging
import os
import subprocess
import sys

from tempoformer.device import KERNEL_VARS
from tempoformer.future_lm.numerics import check_numerics, warn_if_unpinned

PINNED = {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def _numerics(threads=1, **kernels):
    return {"device": "cpu", "torch": "2.x", "threads": threads, "cpu_capability": "AVX2",
            "kernels": {**PINNED, **kernels}, "thread_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}}


def test_the_kernel_variables_are_the_workflows():
    from tempoformer.fingerprint import KERNEL_SETTINGS

    assert dict(item.split("=") for item in KERNEL_SETTINGS.split()) == PINNED == {k: PINNED[k] for k in KERNEL_VARS}


def test_a_job_with_the_kernel_variables_runs_torch_on_them():
    # the variables must reach torch before it loads: numerics() reads what torch actually uses
    code = ("import json, torch; from tempoformer.future_lm.numerics import numerics; torch.set_num_threads(1);"
            "print(json.dumps(numerics('cpu')))")
    env = {**os.environ, **PINNED, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    import json

    recorded = json.loads(out)
    assert recorded["cpu_capability"] == "AVX2" and recorded["kernels"] == PINNED and recorded["threads"] == 1
    assert recorded["thread_vars"] == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def test_unpinned_kernels_or_threads_are_said_in_the_log(monkeypatch, caplog):
    import torch

    caplog.set_level(logging.WARNING, logger="tempoformer.future_lm.numerics")
    for key, value in PINNED.items():
        monkeypatch.setenv(key, value)
    threads = torch.get_num_threads()
    monkeypatch.setenv("MKL_NUM_THREADS", str(threads))
    warn_if_unpinned(threads, "cpu", "future-lm-train")
    assert not caplog.records
    warn_if_unpinned(None, "cpu", "future-lm-train")
    assert "no --threads" in caplog.text
    caplog.clear()
    monkeypatch.setenv("MKL_NUM_THREADS", str(threads + 1))  # Snakemake's count, not torch's
    warn_if_unpinned(threads, "cpu", "future-lm-train")
    assert f"MKL_NUM_THREADS is {threads + 1}, torch has {threads} threads" in caplog.text
    caplog.clear()
    monkeypatch.setenv("MKL_NUM_THREADS", str(threads))
    monkeypatch.delenv("ATEN_CPU_CAPABILITY")
    warn_if_unpinned(threads, "cpu", "future-lm-evaluate")
    assert "future-lm-evaluate: ATEN_CPU_CAPABILITY not set" in caplog.text
    caplog.clear()
    warn_if_unpinned(None, "cuda", "future-lm-train")  # a GPU run: no CPU kernels to pin
    assert not caplog.records


def test_runs_made_with_different_numerics_are_flagged(caplog):
    caplog.set_level(logging.WARNING, logger="tempoformer.future_lm.numerics")
    same = _numerics()
    runs = [{"numerics": same, "train_numerics": same, "pretrain_numerics": same} for _ in range(3)]
    runs.append({"model": "recorded before numerics were"})
    assert check_numerics(runs) == [same] and not caplog.records
    runs[1]["train_numerics"] = _numerics(threads=2)
    runs[2]["pretrain_numerics"] = _numerics(ATEN_CPU_CAPABILITY=None)
    assert len(check_numerics(runs)) == 3
    assert "3 different numerics" in caplog.text
