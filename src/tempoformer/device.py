"""Device choice and mixed precision: bf16 autocast on a GPU, plain fp32 on the CPU."""

from __future__ import annotations

import contextlib

import torch


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
