"""Device choice and mixed precision: bf16 autocast on a GPU, plain fp32 on the CPU."""

from __future__ import annotations

import contextlib
import os

import torch

# the variables of portable_kernels (tempoformer.fingerprint.KERNEL_SETTINGS)
KERNEL_VARS = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")
# Snakemake exports these as the job's thread count scaled down to --cores; MKL's is not torch's:
# MKL_NUM_THREADS=1 under 2 torch threads gave another context.npz than 2 (the future-LM rules set
# both to future_lm.threads)
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pick_device(preferred: str | None = None) -> str:
    if preferred:
        return preferred
    return "cuda" if torch.cuda.is_available() else "cpu"


def autocast(device: str):
    if device.startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def set_threads(threads: int | None) -> None:
    # Snakemake gives each job `threads`; without this, parallel jobs oversubscribe the cores.
    if threads:
        torch.set_num_threads(threads)


def precision(device: str) -> str:
    """The arithmetic a run's forward and backward passes use (`autocast` above)."""
    return "bf16 autocast, fp32 weights" if device.startswith("cuda") else "fp32"


def numerics(device: str) -> dict:
    """What a torch job's numbers depend on besides its inputs: the device (and the GPU's name),
    torch version, torch threads, ATen's kernel level, the kernel and thread variables."""
    record = {"device": str(device), "torch": torch.__version__, "threads": torch.get_num_threads(),
              "cpu_capability": torch.backends.cpu.get_cpu_capability(),
              "kernels": {k: os.environ.get(k) for k in KERNEL_VARS},
              "thread_vars": {k: os.environ.get(k) for k in THREAD_VARS}}
    if str(device).startswith("cuda"):
        record["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return record
