"""What a future-LM torch job's numbers depend on besides its inputs, settings and seed.

Measured on the default run (acl_sample, 2026-12-04, a 2-core AVX-512 CPU): the workflow's
jobs (`MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2`, `--threads` = the
config's `future_lm.threads`, the CPU) remake the committed tables byte for byte, also with
numpy held to AVX2 (NPY_DISABLE_CPU_FEATURES) and OpenBLAS to Haswell. Each of these changed
them: the CPU's own kernels (`portable_kernels: false`), 2 torch threads instead of 1, and both
together (what `tempoformer future-lm-*` run by hand without `env ...` and `--threads` gives on
that machine: torch's default is one thread per core). The first file to differ is the first
torch job's output (context.npz, pretrained.pt, max |Δ| 1e-3 and 1e-4); the fine-tuned weights
then differ by ~1e-3, per-abstract NLLs by up to 0.09 nats, test perplexities in the 4th digit.
Context² is the Baseline plus a bias that stays ~1e-6 at this scale (per-abstract log-perplexity
differences of ~5e-6 nats per token, far below that drift), so its sign test against the
Baseline counts rounding: 21/19 with the workflow's settings, 20/20, 21/19 and 17/23 under the
three changes above.

The thread count is torch's and MKL's: Snakemake exports MKL_NUM_THREADS (and OMP_NUM_THREADS)
as its own count, scaled down to --cores, and with `future_lm.threads: 2` under `--cores 1` the
context job (2 torch threads, MKL_NUM_THREADS=1) wrote another context.npz than under `--cores 2`;
the rules set both variables and --threads to `future_lm.threads`.

`numerics(device)` is recorded in pretrained.pt's info, train.json, metrics.json and the unigram
output; `warn_if_unpinned` says in the job's log when a job runs without the pinned kernels,
with torch's default thread count or with MKL on another thread count than torch; the tables job warns when its runs were made under different
numerics (check_numerics).
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)



def numerics(device: str) -> dict:
    """device.numerics, what every torch job records (the training runs too). Imported here when
    called: device.py imports torch, which the CLI must not load before it sets its threads."""
    from ..device import numerics as device_numerics

    return device_numerics(device)


def warn_if_unpinned(threads: int | None, device: str, job: str) -> None:
    """A log line when this job's numbers are not the workflow's: another kernel set or thread count."""
    if not str(device).startswith("cpu"):
        return  # GPU runs match CPU runs only within noise (README)
    from ..device import KERNEL_VARS

    missing = [k for k in KERNEL_VARS if not os.environ.get(k)]
    if missing:
        log.warning("%s: %s not set, so MKL/ATen/oneDNN use this CPU's fastest kernels: the numbers match "
                    "only runs with the same kernels (the workflow's portable_kernels sets %s)",
                    job, ", ".join(missing), " ".join(KERNEL_VARS))
    import torch

    if not threads:
        log.warning("%s: no --threads: torch's default of %d threads on this machine; the numbers depend on "
                    "the thread count (the workflow passes future_lm.threads)", job, torch.get_num_threads())
    if os.environ.get("MKL_NUM_THREADS") != str(torch.get_num_threads()):
        log.warning("%s: MKL_NUM_THREADS is %s, torch has %d threads: MKL's thread count changes the numbers "
                    "too (the workflow sets it to future_lm.threads)", job, os.environ.get("MKL_NUM_THREADS"),
                    torch.get_num_threads())


def check_numerics(runs: list[dict]) -> list[dict]:
    """The distinct numerics the runs (metrics.json contents) and the jobs before them were made
    with; a warning when there is more than one: their differences are not all the models'.
    Runs from before numerics were recorded are left out."""
    seen = []
    for run in runs:
        for key in ("pretrain_numerics", "train_numerics", "numerics"):
            value = run.get(key)
            if value is not None and value not in seen:
                seen.append(value)
    if len(seen) > 1:
        log.warning("the runs of these tables were made with %d different numerics (device, torch, threads, "
                    "kernels): %s; their differences are partly those of the arithmetic", len(seen), seen)
    return seen
